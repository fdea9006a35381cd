"""Fixtures shared by the test modules (each defined here once); the builders they use are
in tests/support/."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from catbench.core.server.process import Server
from support.catalog import partitioned as build_partitioned
from support.servers import scratch_root


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


def pytest_configure(config):
    """One initialised datadir a kind of private server, copied by the others
    (core/server/install.py), in a folder the whole run shares: set here before xdist's
    workers start, so they and the Snakemake runs they start inherit it."""
    if not hasattr(config, "workerinput") and "CATBENCH_DATADIR_TEMPLATES" not in os.environ:
        config._templates = tempfile.mkdtemp(prefix="cbt-templates-", dir="/tmp")
        os.environ["CATBENCH_DATADIR_TEMPLATES"] = config._templates


def pytest_unconfigure(config):
    if getattr(config, "_templates", None):
        shutil.rmtree(config._templates, ignore_errors=True)
        os.environ.pop("CATBENCH_DATADIR_TEMPLATES", None)


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
