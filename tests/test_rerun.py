"""Re-running single stages: which jobs Snakemake plans (from its own dry-run job
table) after the session's full tiny run (support/shared_run.py, copied), with --forcerun,
with one output selected, after an interruption (the full-sky DAG's time: test_workflow.py)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from support.faultkit import RUN, copy_workdir, foreground_signals
from support.shared_run import shared_tiny_run
from support import preloaded

REPO = Path(__file__).resolve().parent.parent
SNAKEMAKE = REPO / ".venv" / "bin" / "snakemake"
ENV = {**os.environ, "PATH": f"{REPO / '.venv' / 'bin'}:{os.environ['PATH']}"}

pytestmark = pytest.mark.slow


def _cfg(tmp_path: Path, **extra) -> Path:
    cfg = {"run": "rerun", "base": None,
           "catalog": {"patch": {"objects": 500}, "sources_per_object": 2,
                       "max_objects_per_part": 2000,
                       "sky": {"ra_min_deg": 0, "ra_max_deg": 12, "dec_min_deg": -2,
                               "dec_max_deg": 2}},
           "partition": {"index_files": 4, "max_rows_per_group": 20000},
           "targets": {"disk": {"path": str(tmp_path / "disk")},
                       "tmpfs": {"path": f"/dev/shm/cbrerun-{tmp_path.name}"}},
           "fio": {"size": "4M", "runtime_s": 0.2, "numjobs": 1, "repetitions": 1},
           # one variant: the job counts below are per target, the variants add nothing to them
           "load": {"lookup_count": 100, "optimize_limit_s": 5, "repetitions": 1, "variants": ["bigint"]},
           **extra}
    p = tmp_path / "config.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


def _run(tmp_path, *args, check=True, timeout=600):
    cmd = [str(SNAKEMAKE), "-s", str(REPO / "Snakefile"), "-d", str(tmp_path), "--cores", "2",
           *args, "--configfile", str(tmp_path / "config.yaml")]
    r = preloaded.run(cmd, env=ENV, capture_output=True, text=True, timeout=timeout)
    if check:
        assert r.returncode == 0, f"{cmd}\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    return r


def planned(tmp_path, *args) -> dict[str, int]:
    """Rule -> job count from Snakemake's own dry-run 'Job stats' table."""
    r = _run(tmp_path, "-n", *args)
    out = r.stdout + r.stderr
    if "Nothing to be done" in out:
        return {}
    table = out.split("Job stats:", 1)[1].split("total", 1)[0]
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", table, re.M)}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A copy of the session's finished tiny run (every stage, one target, one variant and
    strategy), its config as the run had it."""
    tmp = tmp_path_factory.mktemp("rerun")
    shared = shared_tiny_run()
    copy_workdir(shared["wd"], tmp)
    (tmp / "config.yaml").write_text((shared["wd"] / "config.yaml").read_text())
    return tmp


def test_nothing_to_do_after_a_full_run(finished):
    assert planned(finished) == {}


def test_forcerun_reruns_only_that_stage_and_downstream(finished):
    jobs = planned(finished, "load_index", "--forcerun", "load_index_run")
    assert jobs == {"load_index_run": 1, "load_compare": 1, "load_index": 1}, jobs
    jobs = planned(finished, "load_index", "--forcerun", "partition_map")
    assert "catalog_part" not in jobs and "catalog_patch" not in jobs, jobs
    assert jobs["partition_map"] >= 1 and jobs["load_index_run"] == 1, jobs


def test_one_output_selected_runs_its_job_alone(finished):
    out = f"results/{RUN}/load/disk/bigint/innodb/one-file-at-a-time"
    jobs = planned(finished, out, "--forcerun", "load_index_run")
    assert jobs == {"load_index_run": 1}, jobs   # not load_compare, which reads it


def test_config_change_reruns_only_what_reads_it(finished):
    cfg = yaml.safe_load((finished / "config.yaml").read_text())
    cfg["partition"]["index_files"] = 5
    (finished / "config.yaml").write_text(yaml.safe_dump(cfg))
    try:
        jobs = planned(finished, "load_index")
        assert "index_input" in jobs and "catalog_part" not in jobs, jobs
    finally:
        cfg["partition"]["index_files"] = 3
        (finished / "config.yaml").write_text(yaml.safe_dump(cfg))


def test_interrupted_run_resumes_without_redoing_finished_jobs(tmp_path):
    _cfg(tmp_path)
    cmd = [str(SNAKEMAKE), "-s", str(REPO / "Snakefile"), "-d", str(tmp_path), "--cores", "1",
           "partition", "--configfile", str(tmp_path / "config.yaml")]
    p = preloaded.popen(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         preexec_fn=foreground_signals)
    parts = tmp_path / "results/rerun/catalog/Object"
    t0 = time.monotonic()
    while not list(parts.glob("part-*.parquet")) and time.monotonic() - t0 < 120:
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    p.wait(timeout=60)
    done = sorted(parts.glob("part-*.parquet"))
    assert done, "no catalog part was written before the interruption"
    assert not list(parts.glob(".*tmp*")), "a temporary file survived the interruption"
    # Snakemake flags the interrupted job's outputs as incomplete; our files are
    # written atomically, so --rerun-incomplete (what `make run` passes) is safe.
    jobs = planned(tmp_path, "partition", "--rerun-incomplete")
    assert "catalog_patch" not in jobs
    n_parts = len(list((tmp_path / "results/rerun/catalog/Object").glob("part-*.parquet")))
    assert jobs.get("catalog_part", 0) <= 6 - n_parts + 1  # finished parts are not redone
    _run(tmp_path, "partition", "--rerun-incomplete")
    assert (tmp_path / "results/rerun/chunks/chunks.tsv").exists()
