"""A site's Slurm partition through a real single-node Slurm (support/slurm_cluster.py):
requests that do not fit the partition (MaxTime, a node smaller than the submitting host)
stop the run before any sbatch, naming the config key; measuring jobs of two targets run
one after the other, each alone on the node; SIGTERM cancels a Slurm run."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time

import pytest
from support.paths import VENV_BIN
from support.slurm_cluster import available, leftover_daemons, slurm_cluster
from support.slurm_run import (PROFILE, SLURM, check_isolation, run_config, run_snakemake, slurm_jobs,
                               slurm_queue, snakemake_cmd)

pytestmark = [pytest.mark.slow, pytest.mark.longest]


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
        cfg = run_config(tmp_path, "limits", jobs={"cpus": host_cpus, "index_rows_per_s": 2})
        r = run_snakemake(work, cfg, env, *PROFILE, "--set-resources", "queries_duckdb:runtime=45", ok=False)
        err = r.stderr + r.stdout
        assert r.returncode != 0 and "nothing was submitted" in err, err[-3000:]
        for text in (f"rule fio_run: asks {host_cpus} CPUs per task, but partition 'batch' has at most "
                     f"{host_cpus - 1} CPU", f"set config key 'jobs.cpus' to at most {host_cpus - 1}",
                     "rule load_index_run: asks a time limit of", "allows at most 30 min (MaxTime); "
                     "edit config key 'jobs.index_rows_per_s'", "rule restart_run: asks a time limit",
                     "rule queries_duckdb: asks a time limit of 45 min",
                     "the workflow profile's set-threads/set-resources"):
            assert text in err, (text, err[-3000:])
        assert slurm_queue(env) == [], "a job was submitted"
        print(f"limit checks: {time.monotonic() - t0:.0f} s")
        # 2. fixed: two targets' fio jobs, each alone on the node, one after the other.
        cfg = run_config(tmp_path, SLURM, jobs={"cpus": host_cpus - 1}, targets=two)
        r = run_snakemake(work, cfg, env, *PROFILE, targets=["fio"])
        # no accounting: the plugin's harmless warning (README, fault table), jobs still run
        assert "No SLURM account given, trying to guess" in r.stderr + r.stdout
        recs = check_isolation(work / f"results/{SLURM}", tmp_path)
        assert sorted(recs) == ["fio/disk", "fio/shm"], recs
        assert set(slurm_queue(env)) == {"COMPLETED"}
        before = set(slurm_jobs(env))
        print(f"+ isolated fio: {time.monotonic() - t0:.0f} s")
        # 3. SIGTERM to the process group while jobs are queued or running.
        p = subprocess.Popen(snakemake_cmd(work, cfg, *PROFILE, "--forcerun", "fio_run", targets=["fio"]),
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
        while {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING"} & set(slurm_queue(env)):
            assert time.monotonic() < deadline, slurm_queue(env)
            time.sleep(1)
        # Every job this run submitted was stopped: CANCELLED, or FAILED when its own end
        # reached Slurm first. A job the cancel missed would be COMPLETED, or still running.
        stopped = {i: st for i, st in slurm_jobs(env).items() if i not in before}
        assert stopped and set(stopped.values()) <= {"CANCELLED", "FAILED"}, (
            stopped, subprocess.run(["scontrol", "show", "job"], env=env, capture_output=True, text=True).stdout)
        # the run's lock is released: the next run needs no --unlock
        run_snakemake(work, cfg, env, "-n", *PROFILE, targets=["fio"])
        print(f"+ SIGTERM: {time.monotonic() - t0:.0f} s")
    shutil.rmtree(two["shm"]["path"], ignore_errors=True)
    assert leftover_daemons(base) == []
