"""Real runs of the workflow to interrupt or inspect: tiny configs, real snakemake
runs in temporary workdirs, finding (and always cleaning up) the private servers a run
started, and the checksums an interrupted run must reproduce."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import psutil
import yaml

from .paths import CATBENCH, ENV, REPO, SNAKEMAKE
from .servers import kill_servers, server_procs, wait_no_servers
from . import preloaded

RUN = "faults"
LOAD_DIR = "catbench-load_index-bigint-innodb-one-file-at-a-time"
QUERY_DIR = "catbench-queries"


def tiny_config(workdir: Path, targets: dict, run: str = RUN, **sections) -> Path:
    """tests/configs/tiny.yaml on ``targets`` as run ``run``; ``sections`` replace/extend
    its top-level sections."""
    cfg = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
    cfg["run"] = run
    cfg["targets"] = {name: {"path": str(p)} for name, p in targets.items()}
    for k, v in sections.items():
        cfg[k] = {**cfg[k], **v} if isinstance(v, dict) and isinstance(cfg.get(k), dict) else v
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def snakemake_cmd(workdir: Path, *args, cores: int = 2) -> list[str]:
    # targets first: --configfile takes several values
    return [str(SNAKEMAKE), *args, "-s", str(REPO / "Snakefile"), "-d", str(workdir), "--cores", str(cores),
            "--configfile", str(workdir / "config.yaml")]


def snakemake(workdir: Path, *args, check: bool = True, timeout: float = 300):
    r = preloaded.run(snakemake_cmd(workdir, *args), env=ENV, capture_output=True, text=True,
                       timeout=timeout)
    if check:
        assert r.returncode == 0, f"snakemake {args} failed:\n{r.stdout[-3000:]}\n{r.stderr[-5000:]}"
    return r


def foreground_signals():
    """preexec_fn of a command a test interrupts: SIGINT and SIGQUIT at their defaults, as in a
    foreground job. A shell without job control starts a background command with both ignored,
    and a child inherits that: run so (`make test &`), Snakemake would ignore the test's SIGINT."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def start_snakemake(workdir: Path, *args, log_name: str = "snakemake.out") -> preloaded.Popen:
    """snakemake in its own session (process group), as a shell runs a foreground job."""
    out = open(workdir / log_name, "wb")
    try:
        return preloaded.popen(snakemake_cmd(workdir, *args), env=ENV, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=foreground_signals)
    finally:
        out.close()


def catbench(*args, timeout: float = 180):
    return subprocess.run([str(CATBENCH), *map(str, args)], env=ENV, capture_output=True, text=True,
                          timeout=timeout)


# ---- private servers ---------------------------------------------------------------------

def wait_server_up(basedir: Path, job_log: Path, timeout: float = 90, proc: subprocess.Popen | None = None) -> int:
    """pid of the (non-bootstrap) server of ``basedir`` once the job's log says it is up."""
    defaults = f"--defaults-file={basedir}/my.cnf"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"snakemake exited ({proc.returncode}) before the server of {basedir} was up")
        for p in server_procs(basedir):
            try:
                cmd = p.cmdline()
            except psutil.Error:
                continue
            if defaults in cmd and "--bootstrap" not in cmd:
                try:
                    text = job_log.read_text(errors="replace")
                except OSError:
                    text = ""
                if f"server pid {p.pid} up" in text:
                    return p.pid
        time.sleep(0.05)
    raise AssertionError(f"no server of {basedir} came up within {timeout} s; job log:\n"
                         f"{job_log.read_text(errors='replace')[-3000:] if job_log.exists() else '(none)'}")


def start_with_server_up(wd: Path, basedir: Path, job_log: str, target: str, out_rel: str, log_name: str,
                         tries: int = 3) -> subprocess.Popen:
    """snakemake running ``target`` with the job's server seen up. On a busy machine a job that
    resumes from the attempt before can finish between two looks: its output is then checked
    complete and removed, and the attempt made again (afresh: the finished job left no ledger)."""
    for attempt in range(1, tries + 1):
        proc = start_snakemake(wd, target, "--rerun-incomplete", log_name=log_name)
        try:
            wait_server_up(basedir, wd / job_log, proc=proc)
            return proc
        except AssertionError:
            stop_run(proc)
            if proc.returncode != 0 or attempt == tries:
                raise
        console = (wd / log_name).read_text()
        assert finished_before(console, out_rel) and (wd / out_rel / "summary.json").exists(), console[-3000:]
        shutil.rmtree(wd / out_rel)


def wait_no_jobs(workdir, timeout: float = 30) -> list[psutil.Process]:
    """[] once every catbench job run from ``workdir`` has exited, else the survivors. A
    signal to the process group ends the job's shell at once, so Snakemake may exit while
    the job itself is still cleaning up; what it leaves is judged once it is gone."""
    workdir = str(workdir)
    deadline = time.monotonic() + timeout
    while True:
        left = []
        for p in psutil.process_iter(["cmdline", "cwd", "status"]):
            with contextlib.suppress(psutil.Error):
                if (p.info["cwd"] == workdir and p.info["status"] != psutil.STATUS_ZOMBIE
                        and any(a.endswith("catbench") for a in p.info["cmdline"] or [])):
                    left.append(p)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def stop_run(proc: subprocess.Popen | None):
    """Last resort of a failed test: kill snakemake and its whole process group."""
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(30)


@contextlib.contextmanager
def scratch_dirs():
    """Target directories for one test: one on disk under /tmp (short: socket paths) and
    one in /dev/shm; on exit every server under them is killed and both are removed."""
    disk = Path(tempfile.mkdtemp(prefix="cbf-", dir="/tmp"))
    shm = Path(f"/dev/shm/cbf-{uuid.uuid4().hex[:10]}")
    try:
        yield disk, shm
    finally:
        for d in (disk, shm):
            kill_servers(d)
        if wait_no_servers(disk, 10) or wait_no_servers(shm, 10):
            time.sleep(1)
        shutil.rmtree(disk, ignore_errors=True)
        shutil.rmtree(shm, ignore_errors=True)


def copy_workdir(src: Path, dst: Path):
    """A finished workdir (results + Snakemake metadata, mtimes kept), minus its config."""
    shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("config.yaml", "*.out", "locks"))


# ---- what a run produced -----------------------------------------------------------------

def incomplete_marked(workdir: Path, rel: str) -> bool:
    """Snakemake's own flag of an output whose job did not finish."""
    name = base64.b64encode(rel.encode()).decode()
    return (workdir / ".snakemake" / "incomplete" / name).exists()


def finished_before(console: str, rel: str) -> bool:
    """Whether Snakemake's console output says the job writing ``rel`` finished: a job that
    resumed from an earlier attempt can end before a signal aimed at it arrives."""
    for block in re.split(r"\n(?=(?:local)?rule |checkpoint )", console):
        outputs = re.search(r"^\s+output: (.*)$", block, re.M)
        jobid = re.search(r"^\s+jobid: (\d+)$", block, re.M)
        if outputs and jobid and rel in [o.strip() for o in outputs.group(1).split(",")]:
            return re.search(rf"^Finished jobid: {jobid.group(1)} ", console, re.M) is not None
    return False


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fingerprint(workdir: Path, run: str = RUN) -> dict:
    """The checksums a correct run must reproduce: each load's table checksum and rows,
    every chunk file's sha256, every query answer's digest per target/engine."""
    res = workdir / "results" / run
    out = {"load": {}, "chunks": {}, "queries": {}}
    for s in sorted(res.glob("load/*/*/*/*/summary.json")):
        d = json.loads(s.read_text())
        out["load"][str(s.parent.relative_to(res))] = [d["rows"], d["checksum_input"], d["checksum_table"],
                                                      d["checksum_ok"]]
    for f in sorted((res / "chunks").rglob("chunk_*")):
        out["chunks"][str(f.relative_to(res))] = _sha256(f)
    for s in sorted(res.glob("queries/*/*/summary.json")):
        d = json.loads(s.read_text())
        out["queries"][str(s.parent.relative_to(res))] = d["digests"]
    return out


def dead_pid() -> int:
    """A process id no process has now: what a killed job's temporary names carry."""
    pid = 4_000_000
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            pass
        pid -= 1
