"""The real workflow through a real single-node Slurm (munged + slurmctld + slurmd
started by the test, no accounting, status from squeue) matches a local run."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))
from slurm_cluster import available, leftover_daemons, slurm_cluster  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = REPO / ".venv" / "bin"

pytestmark = pytest.mark.slow


def _config(tmp_path: Path, name: str) -> Path:
    cfg = {
        "run": name,
        "catalog": {"patch": {"objects": 800}, "sources_per_object": 3,
                    "sky": {"ra_min_deg": 0, "ra_max_deg": 8, "dec_min_deg": -2, "dec_max_deg": 2}},
        "partition": {"index_files": 6},
        # One target: a second one doubles the server jobs and adds nothing Slurm-specific.
        "targets": {"disk": {"path": str(tmp_path / "disk")}},
        "fio": {"size": "8M", "runtime_s": 1, "numjobs": 2},
        # Every stage runs, each at its smallest, so the test stays a few minutes.
        "load": {"lookup_count": 200, "optimize_limit_s": 10, "strategies": ["sequential", "sorted"]},
        "queries": {"repetitions": 1, "cold": False, "concurrency": {"streams": 0}},
        "restart": {"kinds": ["clean", "crash-during-load"], "buffer_pool_dump": ["off"],
                    "lookup_count": 200, "warm_timeout_s": 10},
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _snakemake(workdir: Path, configfile: Path, env, *extra):
    env = {**env, "PATH": f"{VENV_BIN}:{env['PATH']}"}
    cmd = [str(VENV_BIN / "snakemake"), "-s", str(REPO / "Snakefile"), "-d", str(workdir),
           *extra, "--configfile", str(configfile)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"{' '.join(cmd)} failed:\n{r.stdout[-3000:]}\n{r.stderr[-5000:]}"
    return r


def _digest(results: Path) -> dict:
    out = {"chunks": (results / "chunks/chunks.tsv").read_text().splitlines()[0:1] + sorted(
        ",".join(line.split("\t")[:4]) for line in
        (results / "chunks/chunks.tsv").read_text().splitlines()[1:])}
    for sub in ("index/input", "index/input_seed"):
        h = hashlib.sha256()
        for f in sorted((results / sub).glob("part-*.tsv")):
            h.update(f.read_bytes())
        out[sub] = h.hexdigest()
    loads = {}
    for s in sorted((results / "load").glob("*/*/*/summary.json")):
        d = json.loads(s.read_text())
        loads[(d["target"], d["variant"], d["strategy"])] = (
            d["rows"], d["checksum_input"], d["checksum_table"], d["checksum_ok"])
    out["loads"] = loads
    check = json.loads((results / "queries/check.json").read_text())
    assert check["ok"], check
    out["queries"] = {q: sorted(set(v["digests"].values())) for q, v in check["queries"].items()}
    out["restart_lost"] = {r["rows_lost"] for f in (results / "restart").glob("*/*.json")
                           if f.stem != "summary" and not f.name.endswith(".error.json")
                           for r in json.loads(f.read_text())["rows"]}
    # Row counts of every final table (timings differ, rows may not).
    out["tables"] = {f.name: len(f.read_text().splitlines()) for f in (results / "tables").glob("*.csv")
                     if f.name not in ("stages.csv",)}
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
    _snakemake(local_dir, _config(tmp_path, "local"), dict(os.environ), "--cores", "2")
    print(f"local run: {time.monotonic() - t0:.0f} s")
    t0 = time.monotonic()
    with slurm_cluster() as env:
        # The profile as users run it; only the status polling is made brisk here.
        r = _snakemake(slurm_dir, _config(tmp_path, "slurm"), env,
                       "--workflow-profile", str(REPO / "workflow/profiles/slurm"),
                       "--seconds-between-status-checks", "1",
                       "--slurm-init-seconds-before-status-checks", "1")
        # Every job but the local aggregation went through sbatch.
        submitted = r.stdout.count("has been submitted with SLURM jobid") + \
            r.stderr.count("has been submitted with SLURM jobid")
        assert submitted >= 10, r.stderr[-3000:]
        queue = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%T"], env=env,
                               capture_output=True, text=True).stdout.split()
        assert queue and set(queue) == {"COMPLETED"}, queue
    print(f"slurm run: {time.monotonic() - t0:.0f} s")
    assert leftover_daemons() == []
    a, b = _digest(local_dir / "results/local"), _digest(slurm_dir / "results/slurm")
    assert a["chunks"] == b["chunks"]
    assert a["index/input"] == b["index/input"]
    assert a["index/input_seed"] == b["index/input_seed"]
    assert a["loads"] == b["loads"] and len(a["loads"]) == 4
    assert all(v[3] for v in b["loads"].values())
    assert a["fio_rows"] == b["fio_rows"]
    assert a["queries"] == b["queries"] and a["queries"], a["queries"]
    assert a["restart_lost"] == b["restart_lost"] == {0}
    assert a["tables"] == b["tables"]
    assert leftover_daemons() == []
