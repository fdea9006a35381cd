"""What the two Slurm test modules share: a config running every stage at its smallest,
Snakemake run against a private cluster (support/slurm_cluster.py) with brisk status
polling, and the checks of the queue and of each measuring job's isolation record."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import yaml
from support.paths import REPO, VENV_BIN

# Snakemake polling Slurm every second; -P: the script's folder is not put on sys.path
SNAKEMAKE = (str(VENV_BIN / "python"), "-P", str(REPO / "tests" / "support" / "slurm_snakemake.py"))

# Run names unique on this machine: the isolation checks tell this test's jobs from
# those of another test run beside it (the two Slurm modules run in parallel) by their
# results/<run>/ paths.
LOCAL, SLURM = f"local{os.getpid()}", f"slurm{os.getpid()}"


def run_config(tmp_path: Path, name: str, **over) -> Path:
    cfg = {
        "run": name, "base": None,
        "catalog": {"patch": {"objects": 800}, "sources_per_object": 3,
                    "sky": {"ra_min_deg": 0, "ra_max_deg": 8, "dec_min_deg": -2, "dec_max_deg": 2}},
        "partition": {"index_files": 6},
        # One target: a second one doubles the server jobs and adds nothing Slurm-specific.
        "targets": {"disk": {"path": str(tmp_path / "disk")}},
        "fio": {"size": "8M", "runtime_s": 0.2, "numjobs": 2, "repetitions": 1},
        # Every stage runs, each at its smallest, so the test stays a few minutes.
        # One variant and one strategy: the others are the same rule with other wildcards.
        "load": {"lookup_count": 200, "optimize_limit_s": 10, "strategies": ["one-file-at-a-time"],
                 "variants": ["bigint"], "repetitions": 1},
        "queries": {"repetitions": 1, "cold": False, "concurrency": {"streams": 0}},
        # one kind: the others are the same job with another kind (test_restart.py runs each)
        "restart": {"kinds": ["crash-during-load"], "buffer_pool_dump": ["off"], "repetitions": 1,
                    "lookup_count": 200, "warm_timeout_s": 10, "memory_probe": "256M"},
        **over,
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def snakemake_cmd(workdir: Path, configfile: Path, *extra, targets=()):
    # targets first: --configfile, --config, --set-resources... take several values
    return [*SNAKEMAKE, *targets, "-s", str(REPO / "Snakefile"), "-d", str(workdir),
            *extra, "--configfile", str(configfile)]


def run_snakemake(workdir: Path, configfile: Path, env, *extra, targets=(), ok=True):
    env = {**env, "PATH": f"{VENV_BIN}:{env['PATH']}"}
    cmd = snakemake_cmd(workdir, configfile, *extra, targets=targets)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    if ok:
        assert r.returncode == 0, f"{' '.join(cmd)} failed:\n{r.stdout[-3000:]}\n{r.stderr[-5000:]}"
    return r


PROFILE = ("--workflow-profile", str(REPO / "workflow/profiles/slurm"),
           # the profile as users run it; only the status polling is made brisk here
           "--seconds-between-status-checks", "1", "--slurm-init-seconds-before-status-checks", "1")


def slurm_jobs(env) -> dict[int, str]:
    """{job id: state} of every job Slurm still knows."""
    out = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%i %T"], env=env,
                         capture_output=True, text=True).stdout.split()
    return {int(i): state for i, state in zip(out[::2], out[1::2])}


def slurm_queue(env) -> list[str]:
    return sorted(slurm_jobs(env).values())


def check_isolation(results: Path, tmp_path: Path) -> dict:
    """{measuring job's result dir: its isolation.json}, checked: each job had its node to
    itself in Slurm and met no other job of this test; no two of them overlapped."""
    recs = {str(p.parent.relative_to(results)): json.loads(p.read_text())
            for p in results.glob("**/isolation.json")}
    for where, rec in recs.items():
        assert rec["slurm_job"] and rec["slurm_exclusive"] is True, (where, rec)
        assert rec["other_slurm_jobs"] == [], (where, rec)
        # a shared test machine may run other people's commands; this test's may not meet
        assert not [o for o in rec["other_catbench_jobs"] + rec["shared_locks"]
                    if str(tmp_path) in o or f"results/{results.name}/" in o], (where, rec)
    spans = sorted((r["start"], r["end"], w) for w, r in recs.items())
    for (_, end, a), (start, _, b) in zip(spans, spans[1:]):
        assert end <= start, f"measuring jobs {a} and {b} overlapped"
    return recs
