"""The restart stage's fixed choices: its kinds (the ``kinds/`` registry, in run order),
the buffer-pool dump modes and the fault drills. The job's knobs are its spec (spec.py)."""

from __future__ import annotations

from .errors import RestartError
from .kinds import KINDS as REGISTRY

__all__ = ["BUFFER_POOL_MODES", "FAULTS", "KINDS", "RestartError"]

KINDS = tuple(REGISTRY)   # in run order
BUFFER_POOL_MODES = ("off", "on")
FAULTS = ("corrupt-redo",)
