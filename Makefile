# The two commands a user needs: `make run` and `make test`. Each does its set-up first
# (Python venv with pinned packages, the system tools it uses) and is fast when done already:
# a run installs only what its config's stages need, the tests everything they use.
SHELL := /bin/bash
VENV ?= .venv
CORES ?= all
# The config `make run` (and `make env`) runs; e.g. make run CONFIG=config/index-study.yaml
CONFIG ?= config/config.yaml
PACKAGES := $(VENV)/.packages
STAMP := $(VENV)/.installed
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
# Snakemake, pytest and their helpers import numpy but no BLAS-bound code: OpenBLAS's thread
# pool, started and spinning at import, costs ~0.15 CPU-s a process (a job's own threads
# Snakemake sets again for the job).
export OPENBLAS_NUM_THREADS ?= 1

.PHONY: env system system-all run test test-fast restart-ladder query-ladder query-far-seal query-far-check bench bench-index bench-own-ids bench-partition bench-lsm bench-index-blocks bench-insert index-study ladder far-seal far-check seed-2017 seed-2017-compare seed-2017-shape seed-2017-shape-compare aa lint config-readme clean-results

# The system tools of a config's stages (catbench system-tools, which needs the venv; the config
# read as the workflow reads it), installed by install-system.sh when missing.
install_system = tools=$$(python -m catbench system-tools --config $(1)) \
	&& { [ -z "$$tools" ] || bash workflow/scripts/install-system.sh $$tools; }

env: $(STAMP) system

# uv installs the same pinned packages as pip in a quarter of the time (the set-up is part of
# every fresh clone's first make run and make test); pip where uv cannot reach an index.
UV_VERSION := 0.13.9
# The venv's interpreter: the distribution's own Python 3.11+ where it has venv (Debian's is built
# with profile-guided and link-time optimisation, which a pyenv or source build is not unless asked:
# Snakemake-run test modules here 0.85x the CPU), else the python3 first on PATH.
PYTHON ?= $(shell /usr/bin/python3 -c 'import sys, ensurepip; sys.exit(sys.version_info < (3, 11))' \
	2>/dev/null && echo /usr/bin/python3 || echo python3)
$(PACKAGES): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet uv==$(UV_VERSION)
	$(VENV)/bin/uv pip install --quiet --python $(VENV)/bin/python -r requirements.txt \
	  || $(VENV)/bin/pip install --quiet -r requirements.txt
	$(VENV)/bin/uv pip install --quiet --python $(VENV)/bin/python --no-deps -e . \
	  || $(VENV)/bin/pip install --quiet --no-deps -e .
	touch $@

# The bytecode once, the packages' and the project's: every job and Snakemake run imports them,
# and where bytecode is not written at import each would compile them again; not the packages'
# own test suites (a third of their files, never imported: ~15 s -> ~10 s here). make test writes
# it at import instead, only what the tests import: its set-up and collection 13 s here, not 19.
$(STAMP): $(PACKAGES)
	$(VENV)/bin/python -m compileall -q -j 0 -x '/tests?/' $(VENV)/lib/python3*/site-packages workflow/catbench > /dev/null
	touch $@

system: $(STAMP)
	@$(call install_system,$(CONFIG))

# Every tool the tests use: the server and its plugin, fio, Galera, Slurm, chromium (no venv needed).
system-all:
	@bash workflow/scripts/install-system.sh all

# --rerun-incomplete: outputs are written atomically, so a job cut off by an
# interruption is simply run again. --keep-going: a broken or full target fails its own
# jobs; the other targets still finish (the run then exits non-zero).
SNAKEMAKE_RUN := snakemake --cores $(CORES) --rerun-incomplete --keep-going

run: $(STAMP)
	@$(call install_system,$(CONFIG))
	python workflow/scripts/one_run.py $(SNAKEMAKE_RUN) --configfile $(CONFIG)

# One worker more than cores: the suite waits part of its time (servers starting, Slurm's
# queue, polling), which one more worker fills; two more cost more CPU than they fill (their
# servers and thread pools contend: docs/results/2026-12-07-make-test-workers-on-an-amd-vm.md).
# Bytecode written for the tests' rewritten asserts, as pytest does unless told not to: each
# worker otherwise rewrites every test module again. The venv and the system tools are
# installed side by side: neither needs the other.
test:
	@$(MAKE) --no-print-directory -j2 $(PACKAGES) system-all
	env -u PYTHONDONTWRITEBYTECODE pytest -n $$(( $$(nproc) + 1 )) --dist loadfile --no-loadscope-reorder --durations=10

# The developer's loop: no private server, no Snakemake run (tests marked server or slow skipped).
test-fast: $(STAMP)
	pytest -q -n auto --dist loadfile --no-loadscope-reorder -m "not server and not slow" --durations=5

bench: $(STAMP)
	@$(call install_system,config/bench.yaml)
	$(SNAKEMAKE_RUN) --configfile config/bench.yaml

# The secondary-index study with random (hashed) ids and with spatial ids (Gaia's,
# LSST's), and each figure of the one against the other under the comparison rule.
index-study: $(STAMP)
	@$(call install_system,config/index-study.yaml)
	$(SNAKEMAKE_RUN) --configfile config/index-study.yaml
	$(SNAKEMAKE_RUN) --configfile config/index-study.yaml --config run=index-study-spatial \
	  'catalog={id_layout: spatial}'
	catbench compare results/index-study results/index-study-spatial

# The secondary-index study at 10^8 rows (index-only input, InnoDB, MyRocks and MyISAM).
bench-index: $(STAMP)
	@$(call install_system,config/index-bench.yaml)
	$(SNAKEMAKE_RUN) --configfile config/index-bench.yaml

# index.source: file at 10^8 ids from 128 Parquet files beside the generator on the same
# ids (docs/results/configs/bench-own-ids.yaml): the files, the read, the generation, then a
# table of both.
bench-own-ids: $(STAMP)
	catbench index-positions --config docs/results/configs/bench-own-ids.yaml --files 128 \
		--workers $$(nproc) --out results/bench-own-ids-files
	$(SNAKEMAKE_RUN) index_read --configfile docs/results/configs/bench-own-ids.yaml
	$(SNAKEMAKE_RUN) index_generate --configfile docs/results/configs/bench-own-ids.yaml \
		--config run=bench-own-ids-generated 'index={source: generate}'
	python workflow/scripts/bench_own_ids.py results/bench-own-ids results/bench-own-ids-generated \
		results/bench-own-ids-files

# The partition stage against a peer partitioner on the same rows, alternated, on tmpfs and
# disk (docs/results/configs/bench-partition.yaml); without PEER, against this machine's copy
# and write bandwidth. The table goes to results/bench-partition/partition.md.
bench-partition: $(STAMP)
	python workflow/scripts/bench_partition.py --config docs/results/configs/bench-partition.yaml \
		--galactic $(if $(PEER),--peer $(PEER)) --out results/bench-partition

# The scale model checked on this machine (workflow/catbench/predict/model.md): the rungs of
# $(LADDER)'s ladder (configs written to results/<run>-rungs/), the 10^8-row run itself, and
# the 10^8 run predicted from the rungs alone and held against it (--measured:
# results/<run>/predict/prediction.json, then that
# run's report made again to show it). LADDER=config/ladder-spatial.yaml: spatial ids.
LADDER ?= config/ladder.yaml
LADDER_RUN = $(shell $(VENV)/bin/python -c "from catbench.cli.common import read_config; print(read_config('$(LADDER)')['run'])" 2>/dev/null)
ladder: $(STAMP)
	@$(call install_system,$(LADDER))
	catbench ladder --config $(LADDER) --out results/$(LADDER_RUN)-rungs
	for rung in results/$(LADDER_RUN)-rungs/*.yaml; do $(SNAKEMAKE_RUN) --configfile $$rung || exit 1; done
	$(SNAKEMAKE_RUN) --configfile $(LADDER)
	catbench predict --config $(LADDER) $$(for r in results/$(LADDER_RUN)-rungs/*.yaml; do \
	  echo --results results/$$(basename $$r .yaml); done) --measured results/$(LADDER_RUN) \
	  --out results/$(LADDER_RUN)/predict/prediction.json
	$(SNAKEMAKE_RUN) --configfile $(LADDER) --forcerun report_html

# A node's restart at a larger size than its rungs (workflow/catbench/predict/restarts/model.md): the
# restart study's rungs (data, pool, redo log, gcache and downtime scaled by the rows), its own
# run, and that run predicted from the rungs and held against it. RESTART=: your own study's config.
RESTART ?= config/restart-study.yaml
restart-ladder: $(STAMP)
	$(MAKE) ladder LADDER=$(RESTART)

# Queries on a cluster (workflow/catbench/predict/queries/model.md): the query ladder's rungs
# (configs written to results/<run>-rungs/), then each query class on NODES nodes of RAM each
# holding OBJECTS objects in CHUNKS chunks (the full sky at 85 stripes: 8,983), from their chunk
# queries (results/<run>-rungs/queries-prediction.json).
QUERY_LADDER ?= config/query-ladder.yaml
NODES ?= 25
OBJECTS ?= 1.9e9
CHUNKS ?= 8983
RAM ?= 16G
QUERY_RUN = $(shell $(VENV)/bin/python -c "from catbench.cli.common import read_config; print(read_config('$(QUERY_LADDER)')['run'])" 2>/dev/null)
query-ladder: $(STAMP)
	@$(call install_system,$(QUERY_LADDER))
	catbench ladder --config $(QUERY_LADDER) --out results/$(QUERY_RUN)-rungs
	for rung in results/$(QUERY_RUN)-rungs/*.yaml; do $(SNAKEMAKE_RUN) --configfile $$rung || exit 1; done
	catbench predict --config $(QUERY_LADDER) $$(for r in results/$(QUERY_RUN)-rungs/*.yaml; do \
	  echo --results results/$$(basename $$r .yaml); done) --loads-only --nodes $(NODES) --objects $(OBJECTS) --chunks $(CHUNKS) --ram $(RAM) \
	  --out results/$(QUERY_RUN)-rungs/queries-prediction.json

# The query model held against a run far past its rungs, sealed before that run's first query
# (QUERY_FAR: the rungs' density over ~10x their sky, a node's pool scaled to its rows, its server
# and page cache in its server.ram). Two steps, so that the prediction's hash is committed first:
#   make query-far-seal   the query ladder (make query-ladder), the target's catalog and chunks
#                         (Snakemake target chunk_list: no query runs), then each class on one node
#                         at the target's own chunks, written and hashed (results/sealed/)
#   make query-far-check  refuses a changed seal, runs the target, scores the sealed figures
QUERY_FAR ?= docs/results/configs/query-far-wide.yaml
QUERY_FAR_RUN = $(shell $(VENV)/bin/python -c "from catbench.cli.common import read_config; print(read_config('$(QUERY_FAR)')['run'])" 2>/dev/null)
QUERY_FAR_RAM = $(shell $(VENV)/bin/python -c "from catbench.cli.common import read_config; print(read_config('$(QUERY_FAR)')['server']['ram'])" 2>/dev/null)
QUERY_RUNGS = $$(for r in results/$(QUERY_RUN)-rungs/*.yaml; do echo --results results/$$(basename $$r .yaml); done)
# the target's own chunks, as its partition wrote them (its Objects and chunk count with them)
QUERY_FAR_AT = --nodes 1 --node-ram $(QUERY_FAR_RAM) --chunk-rows results/$(QUERY_FAR_RUN)/chunks/chunks.tsv
query-far-seal: $(STAMP)
	@$(call install_system,$(QUERY_FAR))
	@if [ -e results/$(QUERY_FAR_RUN)/queries ]; then echo "results/$(QUERY_FAR_RUN)/queries exists: a sealed prediction comes before its target's queries"; exit 1; fi
	[ -e results/$(QUERY_RUN)-rungs/queries-prediction.json ] || $(MAKE) query-ladder
	$(SNAKEMAKE_RUN) chunk_list --configfile $(QUERY_FAR)
	mkdir -p results/sealed
	catbench predict --config $(QUERY_FAR) $(QUERY_RUNGS) --loads-only $(QUERY_FAR_AT) \
	  --out results/sealed/$(QUERY_FAR_RUN).json
	cd results/sealed && sha256sum $(QUERY_FAR_RUN).json | tee $(QUERY_FAR_RUN).json.sha256

query-far-check: $(STAMP)
	@$(call install_system,$(QUERY_FAR))
	cd results/sealed && sha256sum --check $(QUERY_FAR_RUN).json.sha256
	catbench predict --config $(QUERY_FAR) $(QUERY_RUNGS) --loads-only $(QUERY_FAR_AT) \
	  --sealed results/sealed/$(QUERY_FAR_RUN).json
	$(SNAKEMAKE_RUN) --configfile $(QUERY_FAR)
	catbench predict --config $(QUERY_FAR) $(QUERY_RUNGS) --loads-only $(QUERY_FAR_AT) \
	  --sealed results/sealed/$(QUERY_FAR_RUN).json --measured results/$(QUERY_FAR_RUN) \
	  --out results/$(QUERY_FAR_RUN)/queries-scored.json

# The scale model held against a run far past its rungs (predict/model.md's validation protocol)
# in two steps, so that the prediction's hash is committed before the target run exists. FAR:
# config/far-check.yaml, the template to copy; the recorded checks' configs are
# docs/results/configs/far-*.yaml (e.g. FAR=docs/results/configs/far-bigint-300m.yaml: 3 x 10^8
# rows, 30x the largest rung), their scores in docs/results/README.md.
#   make far-seal   the rungs (2 repetitions each), the prediction written and hashed
#                   (results/sealed/<run>.json and .sha256); commit the hash
#   make far-check  refuses a changed seal, or rungs or a config that no longer give the sealed
#                   prediction (--sealed), runs the target, scores the sealed figures against it
#                   (--measured) into results/<run>/predict/prediction.json, makes its report again
FAR ?= config/far-check.yaml
FAR_RUN = $(shell $(VENV)/bin/python -c "from catbench.cli.common import read_config; print(read_config('$(FAR)')['run'])" 2>/dev/null)
FAR_RUNGS = $$(for r in results/$(FAR_RUN)-rungs/*.yaml; do echo --results results/$$(basename $$r .yaml); done)
far-seal: $(STAMP)
	@$(call install_system,$(FAR))
	@if [ -e results/$(FAR_RUN) ]; then echo "results/$(FAR_RUN) exists: a sealed prediction comes before its target run"; exit 1; fi
	catbench ladder --config $(FAR) --out results/$(FAR_RUN)-rungs
	for rung in results/$(FAR_RUN)-rungs/*.yaml; do \
	  $(SNAKEMAKE_RUN) --configfile $$rung --config 'load={repetitions: 2}' || exit 1; done
	mkdir -p results/sealed
	catbench predict --config $(FAR) $(FAR_RUNGS) --out results/sealed/$(FAR_RUN).json
	cd results/sealed && sha256sum $(FAR_RUN).json | tee $(FAR_RUN).json.sha256

far-check: $(STAMP)
	@$(call install_system,$(FAR))
	cd results/sealed && sha256sum --check $(FAR_RUN).json.sha256
	catbench predict --config $(FAR) $(FAR_RUNGS) --sealed results/sealed/$(FAR_RUN).json
	$(SNAKEMAKE_RUN) --configfile $(FAR)
	catbench predict --config $(FAR) $(FAR_RUNGS) --sealed results/sealed/$(FAR_RUN).json \
	  --measured results/$(FAR_RUN) --out results/$(FAR_RUN)/predict/prediction.json
	$(SNAKEMAKE_RUN) --configfile $(FAR) --forcerun report_html

# What bounds MyRocks' one-file-at-a-time load: two LSM shapes at the same rows, one at twice the
# rows (docs/results/configs/lsm-shapes*.yaml); then what a row cost each in the server's own
# counters.
LSM_SHAPES := docs/results/configs/lsm-shapes.yaml docs/results/configs/lsm-shapes-small.yaml \
	docs/results/configs/lsm-shapes-6m.yaml
bench-lsm: $(STAMP)
	@$(call install_system,docs/results/configs/lsm-shapes.yaml)
	for c in $(LSM_SHAPES); do $(SNAKEMAKE_RUN) --configfile $$c || exit 1; done
	python workflow/scripts/lsm_shapes.py $(foreach c,$(LSM_SHAPES),results/$(basename $(notdir $(c))))

# The Insert Benchmark's three setups (config/insert-bench.yaml, then
# docs/results/configs/insert-bench-os.yaml and insert-bench-io.yaml): InnoDB and MyRocks filled in
# input order, cached by the engine, by the OS only, and IO-bound; then their figures side by side.
INSERT_BENCH := config/insert-bench.yaml docs/results/configs/insert-bench-os.yaml \
	docs/results/configs/insert-bench-io.yaml
bench-insert: $(STAMP)
	@$(call install_system,config/insert-bench.yaml)
	for c in $(INSERT_BENCH); do $(SNAKEMAKE_RUN) --configfile $$c || exit 1; done
	python workflow/scripts/insert_bench.py $(foreach c,$(INSERT_BENCH),results/$(basename $(notdir $(c))))

# An SST index block larger than a block-cache shard: MyRocks' one-file-at-a-time load with a 32 MiB
# and a 256 MiB block cache, alternately (A B A B), then what a row cost each.
INDEX_BLOCKS := docs/results/configs/myrocks-index-blocks.yaml \
	docs/results/configs/myrocks-index-blocks-256m.yaml
bench-index-blocks: $(STAMP)
	@$(call install_system,docs/results/configs/myrocks-index-blocks.yaml)
	for i in 1 2; do for c in $(INDEX_BLOCKS); do \
	  $(SNAKEMAKE_RUN) --configfile $$c --config run=$$(basename $$c .yaml)-$$i || exit 1; done; done
	python workflow/scripts/lsm_shapes.py $(foreach i,1 2,$(foreach c,$(INDEX_BLOCKS),results/$(basename $(notdir $(c)))-$(i)))

# The 2017 storage study (seed 000) predicted (docs/results/configs/seed-2017.yaml): the ladders of
# its key orders (each a config), the prediction at its 1.06 x 10^10 rows, 128 GiB pool and
# 500 GiB of RAM, the orders its evidence allows chosen from their reads, table and regime alone and sealed
# (results/sealed/seed-2017*.json and their hashes), then its hours and its curve against the seed's.
SEED_2017 := docs/results/configs/seed-2017.yaml docs/results/configs/seed-2017-chunk-sorted.yaml \
	docs/results/configs/seed-2017-random.yaml docs/results/configs/seed-2017-spatial-generation.yaml
SEED_2017_RUNGS = $$(for c in $(SEED_2017); do r=$$(basename $$c .yaml); \
	for f in results/$$r-rungs/*.yaml; do echo --results results/$$(basename $$f .yaml); done; done)
seed-2017: $(STAMP)
	@$(call install_system,docs/results/configs/seed-2017.yaml)
	for c in $(SEED_2017); do r=$$(basename $$c .yaml); catbench ladder --config $$c --out results/$$r-rungs || exit 1; \
	  for rung in results/$$r-rungs/*.yaml; do $(SNAKEMAKE_RUN) --configfile $$rung || exit 1; done; done
	mkdir -p results/sealed
	catbench predict --config docs/results/configs/seed-2017.yaml $(SEED_2017_RUNGS) --rows 1.06e10 \
	  --pool 128G --ram 500G --no-time-limit --out results/sealed/seed-2017.json
	python workflow/scripts/seed_2017.py choose results/sealed/seed-2017.json results/sealed/seed-2017-choice.json
	cd results/sealed && sha256sum seed-2017.json seed-2017-choice.json | tee seed-2017.sha256

# The chosen key order's ladder alone (docs/results/configs/seed-2017-chunk-sorted.yaml), predicted
# on this VM's fio and on each device class's published figures (resources/devices/), sealed; then the
# shape of its load (table growth, CPU a GiB, bytes written a byte) against the seed's stamps.
SEED_2017_CHOSEN := seed-2017-chunk-sorted
SEED_2017_DEVICES := nvme-intel-p4500-2tb sata-ssd-intel-s4500 raid6-hdd-7200rpm
SEED_2017_CHOSEN_RUNGS = $$(for f in results/$(SEED_2017_CHOSEN)-rungs/*.yaml; do echo --results results/$$(basename $$f .yaml); done)
SEED_2017_PREDICT = catbench predict --config docs/results/configs/$(SEED_2017_CHOSEN).yaml \
	$(SEED_2017_CHOSEN_RUNGS) --rows 1.06e10 --pool 128G --ram 500G --no-time-limit
seed-2017-shape: $(STAMP)
	@$(call install_system,docs/results/configs/seed-2017.yaml)
	catbench ladder --config docs/results/configs/$(SEED_2017_CHOSEN).yaml --out results/$(SEED_2017_CHOSEN)-rungs
	for rung in results/$(SEED_2017_CHOSEN)-rungs/*.yaml; do $(SNAKEMAKE_RUN) --configfile $$rung || exit 1; done
	mkdir -p results/sealed
	$(SEED_2017_PREDICT) --out results/sealed/seed-2017-shape.json
	for d in $(SEED_2017_DEVICES); do $(SEED_2017_PREDICT) --device resources/devices/$$d.yaml \
	  --out results/sealed/seed-2017-shape-$$d.json || exit 1; done
	python workflow/scripts/seed_2017.py choose results/sealed/seed-2017-shape.json results/sealed/seed-2017-shape-choice.json
	cd results/sealed && sha256sum seed-2017-shape*.json | tee seed-2017-shape.sha256

seed-2017-shape-compare: $(STAMP)
	cd results/sealed && sha256sum --check seed-2017-shape.sha256
	python workflow/scripts/seed_2017.py shape results/sealed/seed-2017-shape.json \
	  results/sealed/seed-2017-shape-choice.json docs/results/2026-11-28-seed-000-table-and-cpu.csv \
	  docs/results/2026-11-28-seed-000-iostat.csv
	for d in $(SEED_2017_DEVICES); do python workflow/scripts/seed_2017.py compare \
	  results/sealed/seed-2017-shape-$$d.json results/sealed/seed-2017-shape-choice.json || exit 1; done

seed-2017-compare: $(STAMP)
	cd results/sealed && sha256sum --check seed-2017.sha256
	python workflow/scripts/seed_2017.py compare results/sealed/seed-2017.json results/sealed/seed-2017-choice.json
	python workflow/scripts/seed_2017.py plot results/sealed/seed-2017.json \
	  docs/results/2026-11-28-seed-000-files-per-30-min.csv results/sealed/seed-2017-curve.png \
	  --choice results/sealed/seed-2017-choice.json

# Is this machine steady enough to compare runs? Three runs of one config, one after the
# other: the first two measure the between-run noise floor with its degrees of freedom
# (results/noise-floor.json, which `catbench compare` then uses on this machine), the third is
# compared with each of them under it: an A/A check, which should call about 5 % of the
# figures different. docs/noise.md.
AA_CONFIG ?= config/config.yaml
aa: $(STAMP)
	@$(call install_system,$(AA_CONFIG))
	$(SNAKEMAKE_RUN) --configfile $(AA_CONFIG) --config run=aa1
	$(SNAKEMAKE_RUN) --configfile $(AA_CONFIG) --config run=aa2
	catbench noise-floor results/aa1 results/aa2 --out results/noise-floor.json
	$(SNAKEMAKE_RUN) --configfile $(AA_CONFIG) --config run=aa3
	catbench compare results/aa1 results/aa3 --noise-floor results/noise-floor.json
	catbench compare results/aa2 results/aa3 --noise-floor results/noise-floor.json

lint: $(STAMP)
	ruff check .
	snakefmt --check Snakefile workflow/rules
	snakemake --lint

# config/README.md's key tables, written from the schema's descriptions and defaults (between
# its keys:begin/keys:end markers; tests/test_config_readme.py fails when they are stale).
config-readme: $(STAMP)
	catbench config-readme

clean-results:
	rm -rf results/*/ .snakemake
