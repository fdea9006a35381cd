# The two commands a user needs: `make run` and `make test`. Each does all set-up
# first (Python venv with pinned packages, system tools) and is fast when done already.
SHELL := /bin/bash
VENV ?= .venv
CORES ?= all
STAMP := $(VENV)/.installed
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: env system run test bench bench-index lint clean-results

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
	$(SNAKEMAKE_RUN)

test: env
	pytest --durations=10

bench: env
	$(SNAKEMAKE_RUN) --configfile config/bench.yaml

# The secondary-index study at 10^8 rows (index-only input, InnoDB and MyRocks).
bench-index: env
	$(SNAKEMAKE_RUN) --configfile config/index-bench.yaml

lint: env
	snakemake --lint

clean-results:
	rm -rf results/*/ .snakemake
