"""The 2017 storage study's protocol: one connection, one LOAD DATA LOCAL per file, in order."""

from __future__ import annotations

import time

from ...core.index.table import load_files
from ..job import LoadJob, Outcome
from .base import BytesPerRow, Strategy

NAME = "one-file-at-a-time"   # the config's load.strategies value
ORDER = 0   # its place in the registry


def load(job: LoadJob) -> Outcome:
    out, t0 = Outcome(), job.clock()
    job.merge(out, *load_files(job.conn, job.table, job.todo, job.variant, job.database, stop=job.stop,
                               record=job.record))
    out.phase("load", t0, time.time())
    out.extra["connections"] = 1
    return out


STRATEGY = Strategy(NAME, load, bytes_per_row={"char28": BytesPerRow(63.4, 63.4), "bigint": BytesPerRow(38.5, 38.5)},
                    resumable=True, in_file_order=True)
