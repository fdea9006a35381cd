"""Did a measuring job run alone? The scheduler keeps measuring jobs apart (the
per-node/host resource of ``requests.measure_domain`` and, under Slurm, ``--exclusive``);
this module checks that it worked. A measuring job takes a lock per node (in ``/tmp``)
and per target directory without waiting: a lock already held names the measuring job
it is sharing with (another run, a hand-started command). While it runs it looks for
other catbench commands on its node every few seconds and, under Slurm, for other Slurm
jobs on the node at start and end; ``isolation.json`` beside the job's results says
what it saw (``alone``: nothing)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

from ..config.yamlfile import read_json

NODE_LOCK = Path(f"/tmp/catbench-measure-{os.getuid()}.lock")
LOCK_NAME = ".catbench-measure.lock"
RECORD = "isolation.json"
WATCH_PERIOD_S = 2.0


def _try_lock(path: Path, me: dict) -> tuple[int | None, str | None]:
    """(descriptor, None) with ``path`` locked (flock) and naming this job, or (None, the
    holder) when another live job holds it. Never waits. (None, None) when the lock file
    cannot be made: the job's own checks then name the unusable directory; TargetError when
    it is a symlink or another user's file (``open_lock``)."""
    from ..targets import open_lock   # here: psutil, which targets imports, only where it is used

    try:
        fd = open_lock(path)
    except OSError:
        return None, None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 4096, 0).decode(errors="replace").strip() or "(unknown)"
        os.close(fd)
        return None, f"{path}: {holder}"
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(me).encode(), 0)
    return fd, None


def is_catbench(cmdline: list[str]) -> bool:
    head = cmdline[:3]
    return any(os.path.basename(a) == "catbench" for a in head[:2]) or head[1:3] == ["-m", "catbench"]


def other_catbench_jobs(me: int | None = None) -> list[str]:
    """Other catbench commands running on this node (not this process, its parents or
    its children): ``"pid command"``; another user's command is not recorded, only
    ``"pid (user name)"``."""
    import psutil  # here: the partition jobs, which never look, don't import it

    me = psutil.Process(me or os.getpid())
    mine = {me.pid, *(p.pid for p in me.parents()), *(p.pid for p in me.children(recursive=True))}
    user = me.username()
    out = []
    for proc in psutil.process_iter(["pid", "ppid", "cmdline", "username"]):
        cmd = proc.info["cmdline"] or []
        # a child forked since ``mine`` was listed shows this job's command until it execs
        if proc.info["pid"] not in mine and proc.info["ppid"] not in mine and is_catbench(cmd):
            shown = " ".join(cmd)[:300] if proc.info["username"] == user else f"(user {proc.info['username']})"
            out.append(f"{proc.info['pid']} {shown}")
    return out


def slurm_neighbours() -> tuple[list[str], bool | None]:
    """(other Slurm jobs running on this job's node, whether this job owns the node
    exclusively); ([], None) outside Slurm or when Slurm cannot be asked."""
    job = os.environ.get("SLURM_JOB_ID")
    node = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
    if not job:
        return [], None
    try:
        q = subprocess.run(["squeue", "-h", "-w", node, "-t", "RUNNING", "-o", "%i %j"],
                           capture_output=True, text=True, timeout=30)
        s = subprocess.run(["scontrol", "show", "job", "-o", job], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return [], None
    others = [line.strip() for line in q.stdout.splitlines()
              if line.strip() and line.split()[0] != job] if q.returncode == 0 else []
    shared = "OverSubscribe=" in s.stdout and "OverSubscribe=NO" not in s.stdout
    exclusive = None if s.returncode != 0 else not shared
    return others, exclusive


@contextlib.contextmanager
def measuring(target: str | None, path=None):
    """Lock the node (and ``path``) for the body and watch it; yields the isolation
    record, complete after the body. ``alone``: no other measuring job held a lock and no
    other catbench command or Slurm job was seen on the node."""
    rec = {"host": socket.gethostname(), "target": target, "slurm_job": os.environ.get("SLURM_JOB_ID"),
           "start": time.time()}
    me = {"pid": os.getpid(), "host": rec["host"], "target": target, "slurm_job": rec["slurm_job"],
          "cwd": os.getcwd(), "since": time.strftime("%Y-%m-%dT%H:%M:%S")}
    fds, shared = [], []
    try:
        for lock in [NODE_LOCK] + ([Path(path) / LOCK_NAME] if path is not None else []):
            fd, holder = _try_lock(lock, me)
            fds += [fd] if fd is not None else []
            shared += [holder] if holder else []
    except Exception:
        for fd in fds:
            os.close(fd)
        raise
    seen: dict[str, None] = {}
    slurm, rec["slurm_exclusive"] = slurm_neighbours()
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            for other in other_catbench_jobs():
                seen.setdefault(other)
            stop.wait(WATCH_PERIOD_S)

    watcher = threading.Thread(target=watch, name="catbench-isolation", daemon=True)
    watcher.start()
    finished = False
    try:
        yield rec
        finished = True
    finally:
        stop.set()
        watcher.join(timeout=10)
        end = slurm_neighbours()[0] if finished else []  # an interrupted job exits at once
        for fd in fds:
            os.close(fd)
        rec["end"] = time.time()
        rec["shared_locks"] = shared
        rec["other_catbench_jobs"] = list(seen)
        rec["other_slurm_jobs"] = sorted(set(slurm) | set(end))
        rec["alone"] = not shared and not seen and not rec["other_slurm_jobs"]


def write_record(rec: dict, out_dir) -> Path:
    """``<out_dir>/isolation.json``."""
    path = Path(out_dir) / RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec, indent=2) + "\n")
    return path


def read_record(job_dir) -> dict | None:
    """The isolation record beside a measuring job's results, None without one (a run
    from before the records: whether it ran alone is unknown); ValueError naming the file
    when it is not a record."""
    path = Path(job_dir) / RECORD
    try:
        rec = read_json(path, "a job's isolation record", "an isolation record catbench wrote", 2**20,
                        missing_ok=True)
    except ValueError as exc:
        raise ValueError(f"{path}: not an isolation record ({exc}); run that job again") from None
    if rec is None:
        return None
    if not isinstance(rec, dict):
        raise ValueError(f"{path}: not an isolation record (a JSON object); run that job again")
    return rec


def ran_alone(rec: dict) -> bool:
    """The one judgement of a record (isolation.json, or its row of isolation.csv): the job
    ran alone only where it says so; false, empty or missing is not alone."""
    v = rec.get("alone")
    return v is True or str(v).strip().lower() == "true"


def what_it_met(rec: dict) -> str:
    """What a job that did not run alone met, from its record: 'a lock held by …; catbench
    command(s) …; Slurm job(s) …'."""
    def text(v):
        return "; ".join(map(str, v)) if isinstance(v, list) else str(v)
    met = [f"{what} {text(rec[k])}" for k, what in (("shared_locks", "a lock held by"),
                                                   ("other_catbench_jobs", "catbench command(s)"),
                                                   ("other_slurm_jobs", "Slurm job(s)")) if rec.get(k)]
    return "; ".join(met) or "no record of what"
