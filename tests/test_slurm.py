"""The real workflow through a real single-node Slurm configured as a site would (munged +
slurmctld + slurmd started by the test, partition `batch` with a MaxTime, no accounting,
status from squeue) matches a local run, and its measuring jobs run alone on their node.
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


def _digest(results: Path) -> dict:
    out = {"chunks": (results / "chunks/chunks.tsv").read_text().splitlines()[0:1] + sorted(
        ",".join(line.split("\t")[:4]) for line in
        (results / "chunks/chunks.tsv").read_text().splitlines()[1:])}
    for sub in ("index/input", "index/input_char28"):
        h = hashlib.sha256()
        for f in sorted((results / sub).glob("part-*.tsv")):
            h.update(f.read_bytes())
        out[sub] = h.hexdigest()
    loads = {}
    for s in sorted((results / "load").glob("*/*/*/*/summary.json")):
        d = json.loads(s.read_text())
        loads[(d["target"], d["variant"], d["strategy"])] = (
            d["rows"], d["checksum_input"], d["checksum_table"], d["checksum_ok"])
    out["loads"] = loads
    check = json.loads((results / "queries/check.json").read_text())
    assert check["ok"], check
    out["queries"] = {q: sorted(set(v["digests"].values())) for q, v in check["queries"].items()}
    out["restart_lost"] = {r["rows_lost"] for f in (results / "restart").glob("*/*.json")
                           if f.stem not in ("summary", "isolation") and not f.name.endswith(".error.json")
                           for r in json.loads(f.read_text())["rows"]}
    # Row counts of every final table (timings differ, rows may not) but the load-rate
    # table, whose number of intervals follows each load's duration: there, every load's
    # intervals must add up to the load's rows.
    out["tables"] = {f.name: len(f.read_text().splitlines()) for f in (results / "tables").glob("*.csv")
                     if f.name not in ("stages.csv", "load_rate.csv")}
    rate: dict = {}
    with open(results / "tables" / "load_rate.csv") as f:
        for row in csv.DictReader(f):
            key = (row["target"], row["variant"], row["strategy"])
            rate[key] = rate.get(key, 0) + int(float(row["rows_loaded"] or 0))
    out["load_rate_rows"] = rate
    out["fio_rows"] = sorted(
        line.split(",")[0:2].__repr__() for f in (results / "fio").glob("*/fio.csv")
        for line in f.read_text().splitlines()[1:])
    return out


@pytest.mark.skipif(available() is not None, reason=str(available()))
def test_workflow_on_real_slurm_matches_local(tmp_path):
    local_dir, slurm_dir = tmp_path / "local", tmp_path / "slurm"
    for d in (local_dir, slurm_dir):
        d.mkdir()
        shutil.copytree(REPO / "workflow" / "profiles", d / "profiles")
    t0 = time.monotonic()
    run_snakemake(local_dir, run_config(tmp_path, LOCAL), dict(os.environ), "--cores", "2")
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
    a, b = _digest(local_dir / f"results/{LOCAL}"), _digest(slurm_dir / f"results/{SLURM}")
    assert a["chunks"] == b["chunks"]
    assert a["index/input"] == b["index/input"]
    assert a["index/input_char28"] == b["index/input_char28"]
    assert a["loads"] == b["loads"] and len(a["loads"]) == 2
    assert all(v[3] for v in b["loads"].values())
    assert a["fio_rows"] == b["fio_rows"]
    assert a["queries"] == b["queries"] and a["queries"], a["queries"]
    assert a["restart_lost"] == b["restart_lost"] == {0}
    assert a["tables"] == b["tables"]
    # each repetition of a load (load.repetitions) passes every input row once
    assert a["load_rate_rows"] == b["load_rate_rows"] and set(b["load_rate_rows"]) == set(b["loads"])
    assert all(n and n % b["loads"][k][0] == 0 for k, n in b["load_rate_rows"].items()), b["load_rate_rows"]
    # fio, the 4 loads, the MySQL and DuckDB query suites, restart: each alone on the node
    assert len(check_isolation(slurm_dir / f"results/{SLURM}", tmp_path)) == 1 + len(b["loads"]) + 3
    assert leftover_daemons(base) == []
