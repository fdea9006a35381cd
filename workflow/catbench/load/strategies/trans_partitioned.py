"""One MySQL partition per batch of files (a Qserv super-transaction), then consolidated. Batches
are cut from the whole input, so a resumed load gives each file its trans id."""

from __future__ import annotations

import time

from ...core.index.input import duplicate_message
from ...core.index.table import Engine
from ...core.infra.resources import read_sql
from ...core.server.loaddata import LoadError
from ..job import LoadJob, LoadProgress, Outcome
from .base import INNODB, BytesPerRow, Strategy, parallel_files, sql

NAME = "trans-partitioned"   # the config's load.strategies value
ORDER = 6   # its place in the registry
DUPLICATES_SHOWN = 5


def load(job: LoadJob) -> Outcome:
    out, t0, opts = Outcome(), job.clock(), job.opts
    cur = job.conn.cursor()
    batches = [job.files[i:i + opts.batch_files] for i in range(0, len(job.files), opts.batch_files)]
    todo = set(job.todo)
    progress = LoadProgress(f"loading {len(todo)} files", len(todo))
    alter_s, trace, infos = 0.0, [], []
    for b, batch in enumerate(batches, 1):
        batch = [f for f in batch if f in todo]
        if not batch or job.stop():
            continue
        a0 = time.time()
        if not _mysql_partition_exists(cur, job, b):
            cur.execute(sql("add_partition", job, trans_id=b))
        alter_s += time.time() - a0
        tr, inf = parallel_files(job, batch, trans_id=b, progress=progress)
        trace += tr
        infos += inf
    job.merge(out, trace, infos)
    t1 = t2 = time.time()
    out.phase("load", t0, t1)
    out.extra.update({"connections": opts.connections, "batch_files": opts.batch_files,
                      "partitions": len(batches), "add_partition_seconds": alter_s,
                      "consolidated": bool(opts.consolidate)})
    if opts.consolidate and not out.extra.get("stopped") and _mysql_partition_exists(cur, job, 0):
        cur.execute(sql("remove_partitioning", job))
        t2 = time.time()
        out.phase("consolidate", t1, t2)
    _check_no_key_in_two_mysql_partitions(job, cur)
    out.phase("duplicate_check", t2, time.time())
    return out


def _mysql_partition_exists(cur, job: LoadJob, trans_id: int) -> bool:
    cur.execute(sql("partition_exists", job, trans_id=trans_id))
    return cur.fetchone()[0] > 0


def _check_no_key_in_two_mysql_partitions(job: LoadJob, cur):
    """The unique key holds per partition only: repeated keys are looked for at the end."""
    cur.execute(sql("duplicate_keys", job, limit=DUPLICATES_SHOWN))
    dups = cur.fetchall()
    if dups:
        key, n = dups[0]
        more = "+" if len(dups) == DUPLICATES_SHOWN else ""
        raise LoadError(duplicate_message(str(key), job.files, job.variant,
                                          f"{len(dups)}{more} keys are in more than one partition "
                                          f"({n} times for the first): "))


def mysql_partitioned_table(variant, database: str, table: str, engine: Engine = INNODB) -> str:
    return read_sql("index", "trans_partitioned_table.sql").format(
        database=database, table=table, key=variant.key, columns=variant.columns_ddl(primary_key=False),
        engine=engine.sql_name)


STRATEGY = Strategy(NAME, load, mysql_partitioned_table, bytes_per_row={"char28": BytesPerRow(102.9, 260.9),
                                                                     "bigint": BytesPerRow(59.2, 167.3)},
                    resumable=True, in_file_order=True)
