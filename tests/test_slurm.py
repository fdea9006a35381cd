"""The real workflow through a real single-node Slurm configured as a site would (munged +
slurmctld + slurmd started by the test, partition `batch` with a MaxTime, no accounting,
status from squeue): its data products equal a local run's (the catalog partitioned, the
index input), every later product passes its own check (checksums, the engines' answers,
rows lost), and its measuring jobs run alone on their node.
The site's limits and SIGTERM are in test_slurm_site.py: a module of its own, so that
the two tests of minutes run on two workers at once."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest
from support.paths import REPO
from support.slurm_cluster import available, leftover_daemons, slurm_cluster
from support.slurm_run import LOCAL, PROFILE, SLURM, check_isolation, run_config, run_snakemake, slurm_queue

pytestmark = [pytest.mark.slow, pytest.mark.longest]


def _products(results: Path) -> dict:
    """The deterministic data products: the chunk list and the index input's bytes."""
    out = {"chunks": (results / "chunks/chunks.tsv").read_text().splitlines()[0:1] + sorted(
        ",".join(line.split("\t")[:4]) for line in
        (results / "chunks/chunks.tsv").read_text().splitlines()[1:])}
    for sub in ("index/input", "index/input_char28"):
        h = hashlib.sha256()
        for f in sorted((results / sub).glob("part-*.tsv")):
            h.update(f.read_bytes())
        out[sub] = h.hexdigest()
    return out


def _checked(results: Path) -> None:
    """Every later product passes its own check: each load's table equals its input (rows,
    checksum), the two query engines agree, no restart lost a row, each load's rate intervals
    add up to its rows, fio wrote its figures, and every table of the report is there."""
    loads = {}
    for s in sorted((results / "load").glob("*/*/*/*/summary.json")):
        d = json.loads(s.read_text())
        loads[(d["target"], d["variant"], d["strategy"])] = d
    assert len(loads) == 1 and all(d["checksum_ok"] and d["checksum_input"] == d["checksum_table"]
                                   for d in loads.values()), loads
    check = json.loads((results / "queries/check.json").read_text())
    assert check["ok"] and check["queries"], check
    lost = {r["rows_lost"] for f in (results / "restart").glob("*/*.json")
            if f.stem not in ("summary", "isolation") and not f.name.endswith(".error.json")
            for r in json.loads(f.read_text())["rows"]}
    assert lost == {0}, lost
    rate: dict = {}
    with open(results / "tables" / "load_rate.csv") as f:
        for row in csv.DictReader(f):
            key = (row["target"], row["variant"], row["strategy"])
            rate[key] = rate.get(key, 0) + int(float(row["rows_loaded"] or 0))
    # each repetition of a load (load.repetitions) passes every input row once
    assert set(rate) == set(loads) and all(n and n % loads[k]["rows"] == 0 for k, n in rate.items()), rate
    assert [f for f in (results / "fio").glob("*/fio.csv") if len(f.read_text().splitlines()) > 1]
    for name in ("load_time.csv", "load_runs.csv", "queries.csv", "query_runs.csv", "restart.csv", "storage.csv"):
        assert len((results / "tables" / name).read_text().splitlines()) > 1, name


@pytest.mark.skipif(available() is not None, reason=str(available()))
def test_workflow_on_real_slurm_matches_local(tmp_path):
    local_dir, slurm_dir = tmp_path / "local", tmp_path / "slurm"
    for d in (local_dir, slurm_dir):
        d.mkdir()
        shutil.copytree(REPO / "workflow" / "profiles", d / "profiles")
    t0 = time.monotonic()
    run_snakemake(local_dir, run_config(tmp_path, LOCAL), dict(os.environ), "--cores", "2", targets=["partition"])
    print(f"local run: {time.monotonic() - t0:.0f} s")
    t0 = time.monotonic()
    # A site's partition: a 30-minute MaxTime, which every job of this run fits.
    with slurm_cluster(max_time="00:30:00") as env:
        base = env["CBSLURM_BASE"]
        r = run_snakemake(slurm_dir, run_config(tmp_path, SLURM), env, *PROFILE)
        # Every job but the local aggregation went through sbatch.
        submitted = r.stdout.count("has been submitted with SLURM jobid") + \
            r.stderr.count("has been submitted with SLURM jobid")
        assert submitted >= 10, r.stderr[-3000:]
        queue = slurm_queue(env)
        assert queue and set(queue) == {"COMPLETED"}, queue
    print(f"slurm run: {time.monotonic() - t0:.0f} s")
    assert leftover_daemons(base) == []
    assert _products(local_dir / f"results/{LOCAL}") == _products(slurm_dir / f"results/{SLURM}")
    _checked(slurm_dir / f"results/{SLURM}")
    # fio, the load, the MySQL and DuckDB query suites, restart: each alone on the node
    assert len(check_isolation(slurm_dir / f"results/{SLURM}", tmp_path)) == 1 + 1 + 3
    assert leftover_daemons(base) == []
