"""The real workflow through a real single-node Slurm configured as a site would (munged +
slurmctld + slurmd started by the test, partition `batch` with a MaxTime, no accounting,
status from squeue) matches a local run; requests that do not fit the partition (MaxTime,
a node smaller than the submitting host) stop the run before any sbatch, naming the
config key; measuring jobs run alone on their node; SIGTERM cancels a Slurm run."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from support.paths import REPO, VENV_BIN
from support.slurm_cluster import available, leftover_daemons, slurm_cluster

# Snakemake polling Slurm every second; -P: the script's folder is not put on sys.path
SNAKEMAKE = (str(VENV_BIN / "python"), "-P", str(REPO / "tests" / "support" / "slurm_snakemake.py"))

pytestmark = [pytest.mark.slow, pytest.mark.longest]
# Run names unique on this machine: the isolation checks tell this test's jobs from
# those of another test run beside it by their results/<run>/ paths.
LOCAL, SLURM = f"local{os.getpid()}", f"slurm{os.getpid()}"


def _config(tmp_path: Path, name: str, **over) -> Path:
    cfg = {
        "run": name, "base": None,
        "catalog": {"patch": {"objects": 800}, "sources_per_object": 3,
                    "sky": {"ra_min_deg": 0, "ra_max_deg": 8, "dec_min_deg": -2, "dec_max_deg": 2}},
        "partition": {"index_files": 6},
        # One target: a second one doubles the server jobs and adds nothing Slurm-specific.
        "targets": {"disk": {"path": str(tmp_path / "disk")}},
        "fio": {"size": "8M", "runtime_s": 0.2, "numjobs": 2, "repetitions": 1},
        # Every stage runs, each at its smallest, so the test stays a few minutes.
        # One variant: the other is the same rule with another wildcard.
        "load": {"lookup_count": 200, "optimize_limit_s": 10, "strategies": ["one-file-at-a-time", "sorted"],
                 "variants": ["bigint"], "repetitions": 1},
        "queries": {"repetitions": 1, "cold": False, "concurrency": {"streams": 0}},
        "restart": {"kinds": ["clean", "crash-during-load"], "buffer_pool_dump": ["off"], "repetitions": 1,
                    "lookup_count": 200, "warm_timeout_s": 10},
        **over,
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _cmd(workdir: Path, configfile: Path, *extra, targets=()):
    # targets first: --configfile, --config, --set-resources... take several values
    return [*SNAKEMAKE, *targets, "-s", str(REPO / "Snakefile"), "-d", str(workdir),
            *extra, "--configfile", str(configfile)]


def _snakemake(workdir: Path, configfile: Path, env, *extra, targets=(), ok=True):
    env = {**env, "PATH": f"{VENV_BIN}:{env['PATH']}"}
    cmd = _cmd(workdir, configfile, *extra, targets=targets)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    if ok:
        assert r.returncode == 0, f"{' '.join(cmd)} failed:\n{r.stdout[-3000:]}\n{r.stderr[-5000:]}"
    return r


PROFILE = ("--workflow-profile", str(REPO / "workflow/profiles/slurm"),
           # the profile as users run it; only the status polling is made brisk here
           "--seconds-between-status-checks", "1", "--slurm-init-seconds-before-status-checks", "1")


def _jobs(env) -> dict[int, str]:
    """{job id: state} of every job Slurm still knows."""
    out = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%i %T"], env=env,
                         capture_output=True, text=True).stdout.split()
    return {int(i): state for i, state in zip(out[::2], out[1::2])}


def _queue(env) -> list[str]:
    return sorted(_jobs(env).values())


def _isolation(results: Path, tmp_path: Path) -> dict:
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
    _snakemake(local_dir, _config(tmp_path, LOCAL), dict(os.environ), "--cores", "2")
    print(f"local run: {time.monotonic() - t0:.0f} s")
    t0 = time.monotonic()
    # A site's partition: a 30-minute MaxTime, which every job of this run fits.
    with slurm_cluster(max_time="00:30:00") as env:
        base = env["CBSLURM_BASE"]
        r = _snakemake(slurm_dir, _config(tmp_path, SLURM), env, *PROFILE)
        # Every job but the local aggregation went through sbatch.
        submitted = r.stdout.count("has been submitted with SLURM jobid") + \
            r.stderr.count("has been submitted with SLURM jobid")
        assert submitted >= 10, r.stderr[-3000:]
        queue = _queue(env)
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
    assert len(_isolation(slurm_dir / f"results/{SLURM}", tmp_path)) == 1 + len(b["loads"]) + 3
    assert leftover_daemons(base) == []



@pytest.mark.skipif(available() is not None, reason=str(available()))
def test_site_partition_limits_isolation_and_sigterm(tmp_path):
    """A node with fewer CPUs than this machine, a 30-minute MaxTime and Slurm's default
    EnforcePartLimits=NO, where jobs asking too much would sit PENDING silently: the run
    stops before any sbatch naming rule, request, limit and config key; with the key
    fixed, measuring jobs of two targets run one after the other, each alone on the node;
    SIGTERM to the process group cancels the submitted jobs."""
    host_cpus = os.cpu_count() or 1
    if host_cpus < 2:
        pytest.skip("needs a machine with at least 2 CPUs for a smaller node")
    work = tmp_path / "work"
    work.mkdir()
    two = {"disk": {"path": str(tmp_path / "disk")}, "shm": {"path": f"/dev/shm/cb-{os.getpid()}"}}
    with slurm_cluster(cpus=host_cpus - 1, max_time="00:30:00") as env:
        base = env["CBSLURM_BASE"]
        t0 = time.monotonic()
        # 1. requests over the limits: jobs.cpus (2) > the node's CPUs, index loads at
        # 2 rows/s > 30 min, a profile override over MaxTime.
        cfg = _config(tmp_path, "limits", jobs={"cpus": host_cpus, "index_rows_per_s": 2})
        r = _snakemake(work, cfg, env, *PROFILE, "--set-resources", "queries_duckdb:runtime=45", ok=False)
        err = r.stderr + r.stdout
        assert r.returncode != 0 and "nothing was submitted" in err, err[-3000:]
        for text in (f"rule fio_run: asks {host_cpus} CPUs per task, but partition 'batch' has at most "
                     f"{host_cpus - 1} CPU", f"set config key 'jobs.cpus' to at most {host_cpus - 1}",
                     "rule load_index_run: asks a time limit of", "allows at most 30 min (MaxTime); "
                     "edit config key 'jobs.index_rows_per_s'", "rule restart_run: asks a time limit",
                     "rule queries_duckdb: asks a time limit of 45 min",
                     "the workflow profile's set-threads/set-resources"):
            assert text in err, (text, err[-3000:])
        assert _queue(env) == [], "a job was submitted"
        print(f"limit checks: {time.monotonic() - t0:.0f} s")
        # 2. fixed: two targets' fio jobs, each alone on the node, one after the other.
        cfg = _config(tmp_path, SLURM, jobs={"cpus": host_cpus - 1}, targets=two)
        r = _snakemake(work, cfg, env, *PROFILE, targets=["fio"])
        # no accounting: the plugin's harmless warning (README, fault table), jobs still run
        assert "No SLURM account given, trying to guess" in r.stderr + r.stdout
        recs = _isolation(work / f"results/{SLURM}", tmp_path)
        assert sorted(recs) == ["fio/disk", "fio/shm"], recs
        assert set(_queue(env)) == {"COMPLETED"}
        before = set(_jobs(env))
        print(f"+ isolated fio: {time.monotonic() - t0:.0f} s")
        # 3. SIGTERM to the process group while jobs are queued or running.
        p = subprocess.Popen(_cmd(work, cfg, *PROFILE, "--forcerun", "fio_run", targets=["fio"]),
                             env={**env, "PATH": f"{VENV_BIN}:{env['PATH']}"}, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, start_new_session=True)
        seen = []
        for line in p.stdout:
            seen.append(line)
            if "has been submitted with SLURM jobid" in line:
                break
        t1 = time.monotonic()
        os.killpg(p.pid, signal.SIGTERM)
        rest = p.communicate(timeout=120)[0]
        assert p.returncode != 0 and time.monotonic() - t1 < 60, "".join(seen) + rest
        deadline = time.monotonic() + 30
        while {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING"} & set(_queue(env)):
            assert time.monotonic() < deadline, _queue(env)
            time.sleep(1)
        # Every job this run submitted was stopped: CANCELLED, or FAILED when its own end
        # reached Slurm first. A job the cancel missed would be COMPLETED, or still running.
        stopped = {i: st for i, st in _jobs(env).items() if i not in before}
        assert stopped and set(stopped.values()) <= {"CANCELLED", "FAILED"}, (
            stopped, subprocess.run(["scontrol", "show", "job"], env=env, capture_output=True, text=True).stdout)
        # the run's lock is released: the next run needs no --unlock
        _snakemake(work, cfg, env, "-n", *PROFILE, targets=["fio"])
        print(f"+ SIGTERM: {time.monotonic() - t0:.0f} s")
    shutil.rmtree(two["shm"]["path"], ignore_errors=True)
    assert leftover_daemons(base) == []
