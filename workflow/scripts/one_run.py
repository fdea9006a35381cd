"""`make run`'s wrapper: one run per checkout. It holds `.snakemake/catbench-run.lock` for the
whole run (the command given, exec'd with the lock), so two runs started in the same second
cannot both pass; then it tells a stale Snakemake lock (left by a killed run: no Snakemake and no
catbench job of this checkout alive) from a live one. Stale: unlock and go on, saying so. Live:
stop, naming the process (unlocking under a running job would let two runs write one folder)."""

import fcntl
import os
import re
import subprocess
import sys
from pathlib import Path

import psutil
from catbench.core.infra.jobs.isolation import is_catbench
from catbench.core.infra.targets import TargetError, open_lock

HERE = Path.cwd().resolve()


# the commands a run's jobs call (the rules' shell lines): a read-only `catbench coverage` beside
# a stale lock is not a job of the run
JOB_COMMANDS = {m for f in (Path(__file__).resolve().parents[1] / "rules").glob("*.smk")
                for m in re.findall(r"\bcatbench ([a-z][a-z0-9-]*)", f.read_text())}


def _job(argv: list[str]) -> bool:
    """A catbench command of one of the run's jobs."""
    words = [a for a in argv[1:] if not a.startswith("-") and os.path.basename(a) != "catbench"]
    return is_catbench(argv) and bool(words) and words[0] in JOB_COMMANDS


def running_here() -> list[psutil.Process]:
    """Snakemake, or a catbench job (a job outlives a killed Snakemake), working in this checkout."""
    me = {psutil.Process().pid, *(p.pid for p in psutil.Process().parents())}
    out = []
    for p in psutil.process_iter(["pid", "cmdline", "cwd"]):
        try:
            argv = p.info["cmdline"] or []
            ours = "snakemake" in " ".join(argv) or _job(argv)
            if ours and p.info["cwd"] and Path(p.info["cwd"]).resolve() == HERE and p.pid not in me:
                out.append(p)
        except (psutil.Error, OSError):
            continue
    return out


def run_lock() -> int | None:
    """The checkout's run lock, held; None (after saying why) when another run holds it."""
    path = HERE / ".snakemake" / "catbench-run.lock"
    try:
        fd = open_lock(path)
    except TargetError as exc:
        print(f"make run: {exc}", file=sys.stderr)
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "(unknown)"
        print(f"make run: another run of {HERE} holds {path} (pid {holder}); wait for it or stop it",
              file=sys.stderr)
        return None
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)   # the exec'd command keeps this pid
    return fd


def main() -> int:
    fd = run_lock()
    if fd is None:
        return 1
    locks = HERE / ".snakemake" / "locks"
    if locks.is_dir() and any(locks.iterdir()):
        live = running_here()
        if live:
            print(f"make run: a job is already running in {HERE} (pid {live[0].pid}: "
                  f"{' '.join(live[0].info['cmdline'])[:120]}); wait for it or stop it. Do not --unlock "
                  f"while it runs.", file=sys.stderr)
            return 1
        print(f"make run: removing a stale Snakemake lock in {HERE} (no Snakemake or catbench job of this "
              f"checkout is running: an earlier run was killed)", file=sys.stderr)
        rc = subprocess.run(["snakemake", "--unlock"], capture_output=True).returncode
        if rc:
            return rc
    if len(sys.argv) > 1:
        os.set_inheritable(fd, True)
        os.execvp(sys.argv[1], sys.argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
