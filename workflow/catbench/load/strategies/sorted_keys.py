"""Every key sorted first (DuckDB), then loaded in key order over one connection (`sorted`)."""

from __future__ import annotations

from ..job import LoadJob, Outcome
from ..sorted_stream import load_sorted
from .base import BytesPerRow, Strategy

NAME = "sorted"   # the config's load.strategies value
ORDER = 2   # its place in the registry


def load(job: LoadJob) -> Outcome:
    out = Outcome()
    load_sorted(job, out)
    out.extra["connections"] = 1
    return out


STRATEGY = Strategy(NAME, load, bytes_per_row={"char28": BytesPerRow(61.3, 61.3), "bigint": BytesPerRow(37.4, 37.4)},
                    scratch_copies=2, steady=True)
