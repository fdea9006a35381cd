"""The loading strategies of the secondary ("director") index, one registry entry each
(``REGISTRY``: name -> Strategy): the table it creates, how it loads, and how much scratch
room it needs on the target. What each one does and why is in ``strategies.md``.

A strategy gets a ``LoadJob`` (private server, empty table in the job's storage engine,
validated input, scratch dir) and returns an ``Outcome`` (trace, per-file checksums, timed phases); the driver then
checks row count and checksum against the input, so no strategy can pass with missing or
extra rows. The SQL it sends is in ``resources/sql/index/``. Each one declares the
storage engines it cannot run on (``unsupported``, with the reason): ``load_pairs`` gives
the loads a config asks for and those it cannot have.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import mysql.connector

from ..core.index.input import duplicate_message
from ..core.index.table import ENGINES, Engine, IndexInto, load_files
from ..core.infra.resources import read_sql
from ..core.server.loaddata import LoadError
from .handoff import LoadJob, LoadProgress, Outcome
from .parallel import load_files_parallel
from .sorted_stream import load_sorted

DUPLICATES_SHOWN = 5


def _sql(name: str, job: LoadJob, **kw) -> str:
    return read_sql("index", f"{name}.sql").format(database=job.database, table=job.table,
                                                   key=job.variant.key, **kw)


def _parallel_files(job: LoadJob, files=None, trans_id: int | None = None, progress=None):
    into = IndexInto(job.table, job.variant, tuple(job.files), job.database, trans_id)
    return load_files_parallel(job.server, into, job.todo if files is None else files, job.opts.connections,
                               progress=progress, stop=job.stop, record=job.record)


# ---------------------------------------------------------------- one function per strategy

def load_one_file_at_a_time(job: LoadJob) -> Outcome:
    """The 2017 storage study's protocol: one connection, one LOAD DATA LOCAL per file, in order."""
    out, t0 = Outcome(), job.clock()
    job.merge(out, *load_files(job.conn, job.table, job.todo, job.variant, job.database, stop=job.stop,
                               record=job.record))
    out.phase("load", t0, time.time())
    out.extra["connections"] = 1
    return out


def load_parallel(job: LoadJob) -> Outcome:
    out, t0 = Outcome(), job.clock()
    job.merge(out, *_parallel_files(job))
    out.phase("load", t0, time.time())
    out.extra["connections"] = job.opts.connections
    return out


def load_sorted_keys(job: LoadJob) -> Outcome:
    out = Outcome()
    load_sorted(job, out)
    out.extra["connections"] = 1
    return out


def load_sorted_parallel(job: LoadJob) -> Outcome:
    out = Outcome()
    load_sorted(job, out, connections=job.opts.connections)
    out.extra["connections"] = job.opts.connections
    return out


def load_bulk(job: LoadJob) -> Outcome:
    out = Outcome()
    load_sorted(job, out, bulk=True)
    out.extra.update({"connections": 1,   # MyRocks' bulk path has no transactions
                      "transaction_rows": job.opts.transaction_rows if job.engine.bulk_transactions else None})
    return out


def load_deferred_pk(job: LoadJob) -> Outcome:
    """Load without the primary key, then ADD PRIMARY KEY; a duplicate fails the ALTER."""
    out = load_parallel(job)
    t1 = time.time()
    try:
        job.conn.cursor().execute(_sql("add_primary_key", job))
    except mysql.connector.Error as exc:
        m = re.search(r"Duplicate entry '(.*)' for key", str(exc))
        if m:
            raise LoadError(duplicate_message(m.group(1), job.files, job.variant,
                                              "ALTER TABLE ADD PRIMARY KEY failed: ")) from None
        raise LoadError(f"ALTER TABLE {job.table} ADD PRIMARY KEY failed: {exc}") from None
    out.phase("index_build", t1, time.time())
    return out


def load_trans_partitioned(job: LoadJob) -> Outcome:
    """One partition per batch of files (a Qserv super-transaction), then consolidated.
    Batches are cut from the whole input, so a resumed load gives each file its trans id."""
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
        if not _partition_exists(cur, job, b):
            cur.execute(_sql("add_partition", job, trans_id=b))
        alter_s += time.time() - a0
        tr, inf = _parallel_files(job, batch, trans_id=b, progress=progress)
        trace += tr
        infos += inf
    job.merge(out, trace, infos)
    t1 = t2 = time.time()
    out.phase("load", t0, t1)
    out.extra.update({"connections": opts.connections, "batch_files": opts.batch_files,
                      "partitions": len(batches), "add_partition_seconds": alter_s,
                      "consolidated": bool(opts.consolidate)})
    if opts.consolidate and not out.extra.get("stopped") and _partition_exists(cur, job, 0):
        cur.execute(_sql("remove_partitioning", job))
        t2 = time.time()
        out.phase("consolidate", t1, t2)
    _check_no_key_in_two_partitions(job, cur)
    out.phase("duplicate_check", t2, time.time())
    return out


def _partition_exists(cur, job: LoadJob, trans_id: int) -> bool:
    cur.execute(_sql("partition_exists", job, trans_id=trans_id))
    return cur.fetchone()[0] > 0


def _check_no_key_in_two_partitions(job: LoadJob, cur):
    """The unique key holds per partition only: repeated keys are looked for at the end."""
    cur.execute(_sql("duplicate_keys", job, limit=DUPLICATES_SHOWN))
    dups = cur.fetchall()
    if dups:
        key, n = dups[0]
        more = "+" if len(dups) == DUPLICATES_SHOWN else ""
        raise LoadError(duplicate_message(str(key), job.files, job.variant,
                                          f"{len(dups)}{more} keys are in more than one partition "
                                          f"({n} times for the first): "))


# ---------------------------------------------------------------- the registry

INNODB = ENGINES["innodb"]


def _plain_table(variant, database: str, table: str, engine: Engine = INNODB) -> str:
    return variant.ddl(table, database, engine.sql_name)


def _table_without_pk(variant, database: str, table: str, engine: Engine = INNODB) -> str:
    return variant.ddl(table, database, engine.sql_name, primary_key=False)


def _trans_partitioned_table(variant, database: str, table: str, engine: Engine = INNODB) -> str:
    return read_sql("index", "trans_partitioned_table.sql").format(
        database=database, table=table, key=variant.key, columns=variant.columns_ddl(primary_key=False),
        engine=engine.sql_name)


@dataclass(frozen=True)
class Strategy:
    name: str
    load: Callable[[LoadJob], Outcome]
    table_ddl: Callable = _plain_table   # (variant, database, table, engine) -> CREATE TABLE
    scratch_copies: int = 0              # input-sized copies on the target: sorted chunks + DuckDB spill
    # File by file with a ledger (load/ledger.py): an interrupted load resumes, and
    # load.time_limit_s stops it between files. The others load in one sorted stream or
    # end with one ALTER, so they can neither stop cleanly halfway nor resume.
    resumable: bool = False
    # Storage engines (core.index.table.ENGINES) it does not run on -> why; every one else it does.
    unsupported: dict = field(default_factory=dict, hash=False)

    def supports(self, engine: str) -> bool:
        return engine in ENGINES and engine not in self.unsupported


REGISTRY: dict[str, Strategy] = {s.name: s for s in (
    Strategy("one-file-at-a-time", load_one_file_at_a_time, resumable=True),
    Strategy("parallel", load_parallel, resumable=True),
    Strategy("sorted", load_sorted_keys, scratch_copies=2),
    Strategy("sorted-parallel", load_sorted_parallel, scratch_copies=2),
    Strategy("bulk", load_bulk, scratch_copies=2, unsupported={
        "myisam": "MyISAM has no bulk path for a unique key: DISABLE KEYS, bulk_insert_buffer_size and its "
                  "batch index build of an empty table cover non-unique indexes only, and the director "
                  "index has just its primary key; so bulk would be sorted under another name. Its own "
                  "bulk index build is deferred-pk's ALTER TABLE ADD PRIMARY KEY (repair by sort)"}),
    Strategy("deferred-pk", load_deferred_pk, _table_without_pk, unsupported={
        "rocksdb": "MyRocks builds the primary key by copying the table in one transaction that holds "
                   "every row in server memory (measured: 1.7 GB for 2.9 M rows, 4.6x the load's time), "
                   "so it cannot reach the index's size; rocksdb_commit_in_the_middle bounds the memory "
                   "but gives up the ALTER's atomicity and was slower still"}),
    Strategy("trans-partitioned", load_trans_partitioned, _trans_partitioned_table, resumable=True),
)}
STRATEGIES = tuple(REGISTRY)


def get_strategy(name: str) -> Strategy:
    try:
        return REGISTRY[name]
    except KeyError:
        raise LoadError(f"unknown loading strategy {name!r}; available: {', '.join(STRATEGIES)}") from None


def table_name(variant, strategy: str) -> str:
    return f"{variant.name}_{strategy.replace('-', '_')}"


def table_ddl(variant, strategy: str, database: str, table: str, engine: Engine = INNODB) -> str:
    return get_strategy(strategy).table_ddl(variant, database, table, engine)


def load_pairs(strategies, engines, skip=()) -> tuple[list[tuple[str, str]], list[dict]]:
    """The (engine, strategy) loads of ``load.engines`` x ``load.strategies`` that run, in
    config order, and those that do not, each with its reason (a strategy's registry entry,
    or ``load.skip``); LoadError naming the keys when none runs (a config that asks for
    nothing runnable is a mistake) or when a ``load.skip`` entry names no pair of them."""
    pairs, skipped = [], []
    unused = set(skip) - {f"{e}/{s}" for e in engines for s in strategies}
    if unused:
        raise LoadError(f"config key load.skip names {', '.join(sorted(unused))}, which is not an "
                        f"engine/strategy pair of load.engines ({', '.join(engines)}) x load.strategies "
                        f"({', '.join(strategies)})")
    for e in engines:
        if e not in ENGINES:
            raise LoadError(f"unknown storage engine {e!r} in config key load.engines; choose from "
                            f"{', '.join(ENGINES)}")
        for s in strategies:
            plan = get_strategy(s)
            if f"{e}/{s}" in skip:
                skipped.append({"engine": e, "strategy": s, "reason": "skipped by config key load.skip"})
            elif plan.supports(e):
                pairs.append((e, s))
            else:
                skipped.append({"engine": e, "strategy": s, "reason": plan.unsupported[e]})
    if not pairs:
        raise LoadError(f"none of config key load.strategies ({', '.join(strategies)}) runs on a storage "
                        f"engine of load.engines ({', '.join(engines)}): "
                        + "; ".join(f"{x['strategy']} on {x['engine']}: {x['reason']}" for x in skipped))
    return pairs, skipped
