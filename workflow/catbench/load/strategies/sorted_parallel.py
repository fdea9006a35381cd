"""Every key sorted first, then loaded in key-ordered ranges over ``load.connections`` connections."""

from __future__ import annotations

from ..handoff import LoadJob, Outcome
from ..sorted_stream import load_sorted
from .base import Strategy

NAME = "sorted-parallel"   # the config's load.strategies value
ORDER = 3   # its place in the registry


def load(job: LoadJob) -> Outcome:
    out = Outcome()
    load_sorted(job, out, connections=job.opts.connections)
    out.extra["connections"] = job.opts.connections
    return out


STRATEGY = Strategy(NAME, load, scratch_copies=2)
