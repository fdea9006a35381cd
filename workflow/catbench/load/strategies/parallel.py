"""Files loaded over ``load.connections`` connections at once, each file one LOAD DATA."""

from __future__ import annotations

import time

from ..job import LoadJob, Outcome
from .base import BytesPerRow, Strategy, parallel_files

NAME = "parallel"   # the config's load.strategies value
ORDER = 1   # its place in the registry


def load(job: LoadJob) -> Outcome:
    out, t0 = Outcome(), job.clock()
    job.merge(out, *parallel_files(job))
    out.phase("load", t0, time.time())
    out.extra["connections"] = job.opts.connections
    return out


STRATEGY = Strategy(NAME, load, bytes_per_row={"char28": BytesPerRow(76.9, 76.9), "bigint": BytesPerRow(55.1, 55.1)},
                    resumable=True, in_file_order=True)
