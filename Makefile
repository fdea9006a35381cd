# The two commands a user needs: `make run` and `make test`. Each does all set-up
# first (Python venv with pinned packages, system tools) and is fast when done already.
SHELL := /bin/bash
VENV ?= .venv
CORES ?= all
STAMP := $(VENV)/.installed
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: env system run test bench bench-index aa lint clean-results

env: $(STAMP) system

$(STAMP): requirements.txt pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r requirements.txt
	$(VENV)/bin/pip install --quiet --no-deps -e .
	touch $@

system:
	@bash workflow/scripts/install-system.sh

# --rerun-incomplete: outputs are written atomically, so a job cut off by an
# interruption is simply run again. --keep-going: a broken or full target fails its own
# jobs; the other targets still finish (the run then exits non-zero).
SNAKEMAKE_RUN := snakemake --cores $(CORES) --rerun-incomplete --keep-going

run: env
	python workflow/scripts/stale_lock.py
	$(SNAKEMAKE_RUN)

test: env
	pytest --durations=10

bench: env
	$(SNAKEMAKE_RUN) --configfile config/bench.yaml

# The secondary-index study at 10^8 rows (index-only input, InnoDB and MyRocks).
bench-index: env
	$(SNAKEMAKE_RUN) --configfile config/index-bench.yaml

# Is this machine steady enough to compare runs? Three runs of one config, one after the
# other: the first two measure the between-run noise floor (results/noise-floor.json, which
# `catbench compare` then uses on this machine), the third is compared with each of them under
# it: an A/A check, which should call (almost) nothing different. docs/noise.md.
AA_CONFIG ?= config/config.yaml
aa: env
	$(SNAKEMAKE_RUN) --configfile $(AA_CONFIG) --config run=aa1
	$(SNAKEMAKE_RUN) --configfile $(AA_CONFIG) --config run=aa2
	catbench noise-floor results/aa1 results/aa2 --out results/noise-floor.json
	$(SNAKEMAKE_RUN) --configfile $(AA_CONFIG) --config run=aa3
	catbench compare results/aa1 results/aa3 --noise-floor results/noise-floor.json
	catbench compare results/aa2 results/aa3 --noise-floor results/noise-floor.json

lint: env
	snakemake --lint

clean-results:
	rm -rf results/*/ .snakemake
