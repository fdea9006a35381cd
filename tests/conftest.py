"""Fixtures shared by the test modules (each defined here once); the builders they use are
in tests/support/."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from pathlib import Path

import psutil
import pytest
from catbench.core.server.process import Server
from support.catalog import partitioned as build_partitioned
from support.servers import kill_servers, scratch_root
from support.shared_run import SHARED_ENV


@pytest.fixture
def tmp():
    """A fresh directory under /tmp: short paths, for server sockets and mounts."""
    d = Path(tempfile.mkdtemp(prefix="cbt-", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def root():
    """A module's scratch directory under /tmp that no server of its tests may outlive."""
    yield from scratch_root("cbm-")


@pytest.fixture
def scratch():
    """As ``root``, fresh for each test: for tests that interrupt a load and resume it."""
    yield from scratch_root("cbs-")


@pytest.fixture(scope="module")
def srv():
    """A private server (64 MB pool) shared by a module's tests."""
    d = tempfile.mkdtemp(prefix="cbsrv-", dir="/tmp")
    try:
        with Server("modsrv", d, {"innodb_buffer_pool_size": "64M"}) as s:
            yield s
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def partitioned(tmp_path_factory):
    """The small catalog partitioned in-process (support/catalog.py); read-only for tests."""
    return build_partitioned(tmp_path_factory.mktemp("partition"))


# folders the whole test session shares, set here before xdist's workers start, so they and
# the Snakemake runs they start inherit them: one initialised datadir a kind of private
# server, copied by the others (core/server/install.py); the shared tiny run (support/shared_run.py)
SESSION_FOLDERS = {"CATBENCH_DATADIR_TEMPLATES": "cbt-templates-", SHARED_ENV: "cbt-shared-"}


def _noted(signum, frame):
    """A later SIGTERM (a process group's, after one forwarded) while the clean-up runs."""


def _interrupt(signum, frame):
    """SIGTERM (a CI's time limit, ``kill``) ends the tests as Ctrl-C does: the fixtures and
    ``finally`` blocks stop their servers, Slurm daemons and clusters; by default the process
    would end at once and leave them running."""
    signal.signal(signal.SIGTERM, _noted)
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def _interrupt_workers(signum, frame):
    """xdist's controller passes SIGTERM on to its workers first: they hold the fixtures, and a
    worker inside a test would hear of the controller's end only after it (or be killed)."""
    for worker in psutil.Process().children():
        try:
            worker.send_signal(signal.SIGTERM)
        except psutil.Error:
            pass
    _interrupt(signum, frame)


@pytest.fixture(autouse=True)
def _suite_signals():
    """The suite's SIGTERM and SIGINT handlers back after each test: a command run in-process
    (catbench's ``main``) installs its own, made for a process that runs one command."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    yield
    for sig, handler in saved.items():
        if signal.getsignal(sig) is not handler:
            signal.signal(sig, handler)


# How long xdist's controller waits for its workers to end before it kills them (10 s of its
# own): an interrupted worker's teardown stops Slurm daemons, servers and Dask clusters.
WORKERS_END_S = 120


def pytest_configure(config):
    if hasattr(config, "workerinput"):
        signal.signal(signal.SIGTERM, _interrupt)
        return
    controller = bool(getattr(config.option, "numprocesses", None))     # xdist's -n, else the tests run here
    signal.signal(signal.SIGTERM, _interrupt_workers if controller else _interrupt)
    if controller:
        from xdist.workermanage import NodeManager
        NodeManager.EXIT_TIMEOUT = WORKERS_END_S
    config._session_folders = {}
    for var, prefix in SESSION_FOLDERS.items():
        if var not in os.environ:
            config._session_folders[var] = os.environ[var] = tempfile.mkdtemp(prefix=prefix, dir="/tmp")


def pytest_unconfigure(config):
    for var, folder in getattr(config, "_session_folders", {}).items():
        kill_servers(folder)
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(var, None)


def pytest_collection_modifyitems(config, items):
    """The ``longest`` modules first, then those with the most end-to-end (``slow``) tests,
    then those with the most private-server (``server``) tests: run in parallel (``make
    test``: one module per worker at a time, in this order: ``--no-loadscope-reorder``), the
    long ones start at once and the short ones fill in beside them, so no worker waits alone
    at the end (a module of many short server tests takes minutes too)."""
    weight: dict[str, list] = {}
    for item in items:
        w = weight.setdefault(item.nodeid.split("::")[0], [0, 0, 0])
        w[0] = w[0] or item.get_closest_marker("longest") is not None
        w[1] += item.get_closest_marker("slow") is not None
        w[2] += item.get_closest_marker("server") is not None
    items.sort(key=lambda item: [-x for x in weight[item.nodeid.split("::")[0]]])   # stable: a module's order kept
