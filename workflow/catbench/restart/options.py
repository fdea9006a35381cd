"""The restart stage's knobs, with one source of truth: the config schema's ``restart`` and
``server`` sections (and the top-level ``seed``). A job, a test or a hand-run command gives
whole or partial sections; every value not given is the schema's default, never a second
default written here, in the CLI or in a rule. The job's memory request is derived from
the same settings, so the rule and the server cannot disagree on the buffer pool.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from ..core.infra.jobs.requests import server_job_mb
from .errors import RestartError
from .kinds import KINDS as REGISTRY

KINDS = tuple(REGISTRY)   # in run order
BUFFER_POOL_MODES = ("off", "on")
FAULTS = ("corrupt-redo",)


@dataclass(frozen=True)
class RestartSpec:
    """A restart job: its validated ``restart`` and ``server`` config sections, the run's
    ``seed``, whether the server's data stays afterwards, and a fault drill (``FAULTS``) or None."""
    restart: dict
    server: dict
    seed: int
    keep_data: bool = False
    fault: str | None = None


def server_settings(restart: dict, server: dict) -> dict:
    """The restart server's options: ``restart.settings`` over ``server.settings``."""
    return {**(server.get("settings") or {}), **(restart.get("settings") or {})}


def restart_job_mb(cfg: dict) -> int:
    """Memory of a restart job (MiB): the client plus what the server settings ask for."""
    return server_job_mb(server_settings(cfg["restart"], cfg["server"]))


def resolve(restart: dict | None, server: dict | None, fault: str | None = None) -> tuple[dict, dict]:
    """The validated ``restart`` and ``server`` sections (the CLI filled in the schema's
    defaults: cli/restart.py ``restart_spec``), checked: RestartError for a kind, mode or
    fault that does not exist."""
    rs, sv = copy.deepcopy(restart), copy.deepcopy(server)
    kinds = rs["kinds"]
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        raise RestartError(f"unknown restart kind(s) {bad}; choose from {', '.join(KINDS)}")
    if rs["repetitions"] < 1:
        raise RestartError(f"repetitions must be at least 1, not {rs['repetitions']}")
    modes = rs["buffer_pool_dump"]
    bad = [m for m in modes if m not in BUFFER_POOL_MODES]
    if bad or not modes:
        raise RestartError(f"buffer_pool_modes must be a non-empty subset of {BUFFER_POOL_MODES}, not {bad}")
    if fault is not None and fault not in FAULTS:
        raise RestartError(f"unknown fault drill {fault!r}; available: {', '.join(FAULTS)}")
    if not 0 < rs["warm_factor"]:
        raise RestartError("warm_factor must be positive")
    rs["kinds"], rs["buffer_pool_dump"] = list(dict.fromkeys(kinds)), list(modes)
    return rs, sv
