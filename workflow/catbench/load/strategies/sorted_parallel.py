"""Every key sorted first, then loaded in key-ordered ranges over ``load.connections`` connections."""

from __future__ import annotations

from ..job import LoadJob, Outcome
from ..sorted_stream import load_sorted
from .base import BytesPerRow, Strategy

NAME = "sorted-parallel"   # the config's load.strategies value
ORDER = 3   # its place in the registry


def load(job: LoadJob) -> Outcome:
    out = Outcome()
    load_sorted(job, out, connections=job.opts.connections)
    out.extra["connections"] = job.opts.connections
    return out


STRATEGY = Strategy(NAME, load, bytes_per_row={"char28": BytesPerRow(61.3, 61.3), "bigint": BytesPerRow(37.4, 37.4)},
                    scratch_copies=2)   # its chunks fill pages in key order as sorted's: sorted's fit
