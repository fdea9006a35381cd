"""The private servers a test started, found by the paths on their command lines (never
the system server, never another test's), and the scratch places they run in: each is
left only once no server of the test runs under it."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import psutil
import pytest
from catbench.core.server.stale import server_processes


def server_procs(under) -> list[psutil.Process]:
    """Live mariadbd/mysqld processes (bootstrap included) whose command line names a path
    under ``under``."""
    under = str(under)
    out = []
    for p in server_processes():
        try:
            if p.status() != psutil.STATUS_ZOMBIE and any(under in a for a in p.cmdline()):
                out.append(p)
        except psutil.Error:
            pass
    return out


def servers_under(d) -> list[int]:
    """Pids of the live servers under ``d``."""
    return [p.pid for p in server_procs(d)]


def wait_no_servers(under, timeout: float = 30) -> list[psutil.Process]:
    """[] once every server under ``under`` has exited, else the survivors."""
    deadline = time.monotonic() + timeout
    while True:
        left = server_procs(under)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def kill_servers(under):
    for p in server_procs(under):
        with contextlib.suppress(psutil.Error):
            p.kill()


def scratch_root(prefix: str):
    """A fixture body: a scratch dir under /tmp (short socket paths) that no server of the
    test may outlive; leftovers are killed and fail the test."""
    d = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    yield d
    left = wait_no_servers(d, 30)
    kill_servers(d)
    shutil.rmtree(d, ignore_errors=True)
    assert not left, f"mariadbd left running: {[p.pid for p in left]}"


@contextlib.contextmanager
def mounted(fstype: str, options: str):
    """A real small filesystem (tiny or read-only tmpfs, ramfs) mounted for the test; needs
    root, else the test is skipped. Servers under it are killed before it is unmounted."""
    d = Path(tempfile.mkdtemp(prefix="cbmnt-", dir="/tmp"))
    r = subprocess.run(["mount", "-t", fstype, "-o", options, fstype, str(d)], capture_output=True, text=True)
    if r.returncode != 0:
        d.rmdir()
        pytest.skip(f"cannot mount {fstype} here ({r.stderr.strip()}); needs root")
    try:
        yield d
    finally:
        kill_servers(d)
        wait_no_servers(d, 10)
        subprocess.run(["umount", "-l", str(d)], check=False)
        shutil.rmtree(d, ignore_errors=True)


def tmpfs(size: str):
    """A size-limited tmpfs: a full target that is really full."""
    return mounted("tmpfs", f"size={size}")


def cgroup_paths(name: str) -> list[Path]:
    """The memory cgroups catbench made for ``name`` that are still there."""
    return [p for p in Path("/sys/fs/cgroup").rglob(f"catbench-{name}-*") if p.is_dir()]


def no_memory_cgroup() -> str:
    """Why no memory cgroup can be made here ("" where one can)."""
    from catbench.core.server import memory
    if os.geteuid() != 0:
        return "a memory cgroup is set as root"
    try:
        memory._hierarchy()
    except memory.MemoryLimitError as exc:
        return str(exc)
    return ""
