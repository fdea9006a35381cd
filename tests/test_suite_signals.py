"""The test suite itself stopped by SIGTERM to its process group (a CI's time limit, ``kill``):
it ends as Ctrl-C ends it, every fixture's teardown run, so what only a teardown stops (a Slurm
daemon, a Dask cluster, a process in a group of its own) is not left running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest
from support.paths import REPO

INNER = '''
import os, subprocess, time
from pathlib import Path

import pytest

@pytest.fixture
def daemon():
    p = subprocess.Popen(["sleep", "300"], start_new_session=True)   # the group's signal misses it
    try:
        yield p
    finally:
        p.kill()
        p.wait()

def test_holds_a_daemon(daemon):
    Path(os.environ["CB_DAEMON"]).write_text(str(daemon.pid))
    time.sleep(120)
'''


@pytest.mark.parametrize("workers", ["0", "1"])
def test_sigterm_to_the_suites_group_runs_every_teardown(tmp_path, workers):
    (tmp_path / "test_inner.py").write_text(INNER)
    mark = tmp_path / "daemon"
    # the suite's conftest as a plugin: the inner file lies outside tests/
    env = {**os.environ, "CB_DAEMON": str(mark),
           "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest",
                          "-n", workers, "test_inner.py"], cwd=tmp_path, env=env, start_new_session=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    pid = None
    try:
        deadline = time.monotonic() + 60
        while not (mark.exists() and mark.read_text()):
            assert p.poll() is None and time.monotonic() < deadline, p.communicate()[0][-3000:]
            time.sleep(0.1)
        pid = int(mark.read_text())
        os.killpg(p.pid, signal.SIGTERM)
        out = p.communicate(timeout=60)[0]
        assert p.returncode != 0, out[-3000:]
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, out[-3000:]
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        if pid and psutil.pid_exists(pid):
            os.kill(pid, signal.SIGKILL)
