"""The sorted stream through the engine's own bulk path (InnoDB's sorted index build,
MyRocks' SST files)."""

from __future__ import annotations

from ..job import LoadJob, Outcome
from ..sorted_stream import load_sorted
from .base import BytesPerRow, Strategy

NAME = "bulk"   # the config's load.strategies value
ORDER = 4   # its place in the registry


def load(job: LoadJob) -> Outcome:
    out = Outcome()
    load_sorted(job, out, bulk=True)
    out.extra.update({"connections": 1,   # MyRocks' bulk path has no transactions
                      "transaction_rows": job.opts.transaction_rows if job.engine.bulk_transactions else None})
    return out


STRATEGY = Strategy(NAME, load, bytes_per_row={"char28": BytesPerRow(61.3, 61.3), "bigint": BytesPerRow(37.4, 37.4)},
                    scratch_copies=2, steady=True, unsupported={
    "myisam": "MyISAM has no bulk path for a unique key: DISABLE KEYS, bulk_insert_buffer_size and its "
              "batch index build of an empty table cover non-unique indexes only, and the director "
              "index has just its primary key; so bulk would be sorted under another name. Its own "
              "bulk index build is deferred-pk's ALTER TABLE ADD PRIMARY KEY (repair by sort)"})
