"""Files loaded over ``load.connections`` connections at once, each file one LOAD DATA."""

from __future__ import annotations

import time

from ..handoff import LoadJob, Outcome
from .base import Strategy, parallel_files

NAME = "parallel"   # the config's load.strategies value
ORDER = 1   # its place in the registry


def load(job: LoadJob) -> Outcome:
    out, t0 = Outcome(), job.clock()
    job.merge(out, *parallel_files(job))
    out.phase("load", t0, time.time())
    out.extra["connections"] = job.opts.connections
    return out


STRATEGY = Strategy(NAME, load, resumable=True)
