"""Loading strategies of the secondary ("director") index beyond the seed's ``sequential``.

Every strategy gets a private server with an empty database, the validated input files and
a scratch directory on the target, and returns what it loaded (trace, per-file checksums)
and how long each phase took. ``load_index.run_load_index`` then checks row count and
checksum against the input, so no strategy can pass with missing or extra rows.

Strategies (``STRATEGIES``):

``sequential``
    the seed's protocol, one connection, one ``LOAD DATA LOCAL`` per file (load_index).
``parallel``
    ``connections`` connections load different files at once (raw, unsorted).
``sorted``
    DuckDB merges and sorts all input by key (external sort: ``SET memory_limit`` =
    ``sort_memory``, ``temp_directory`` in the target's tmpdir), the sorted stream is written
    as TSV chunks of ``chunk_rows`` rows in the target's tmpdir and loaded in key order by
    one connection while the next chunks are being written. Duplicates are found in the
    sorted stream itself (adjacent equal keys) and named with both files and lines.
``bulk``
    ``sorted`` plus bulk-load session settings: ``unique_checks=0``,
    ``foreign_key_checks=0``, ``sql_log_bin=0`` and one transaction (or one per
    ``transaction_rows`` rows). MariaDB >= 10.6 then takes its "bulk insert into an empty
    table" path for the first transaction (MDEV-515/MDEV-24621): one table-level undo record
    instead of one per row, rows buffered, sorted and the index built bottom-up at commit.
    Measured on 10.11: with ``LOCAL`` a duplicate in that path is reported as warning 1062
    and the *whole* bulk insert is rolled back (0 rows, affected rows still counts the
    others), so the warning/affected-rows check and the final count/checksum are what
    catch it; the stream check catches it before the server sees it.
``deferred-pk``
    load raw files (``connections`` connections) into the table without its primary key
    (InnoDB appends to its hidden row id), then ``ALTER TABLE ADD PRIMARY KEY`` (a
    sort-based rebuild). Load and index-build times are reported separately; a duplicate
    makes the ALTER fail, turned into a LoadError naming the key, files and lines.
``trans-partitioned``
    Qserv's auto-built director index (replica/HttpIngestModule::_createDirectorIndex):
    ``qserv_trans_id INT NOT NULL`` first, ``UNIQUE KEY (qserv_trans_id, key)``,
    ``KEY (key)``, no primary key, ``PARTITION BY LIST (qserv_trans_id)`` starting with
    ``p0 VALUES IN (0)``; each super-transaction adds one partition. Here one partition
    per ``batch_files`` files, files of a batch loaded by ``connections`` connections.
    Qserv consolidates at publishing with ``ALTER TABLE ... REMOVE PARTITIONING``
    (``consolidate``, timed). The unique key is per partition, so duplicates across
    partitions are found by a final ``GROUP BY key HAVING COUNT(*) > 1`` (timed, counted
    into the total).

Key order and collation: ``qserv`` keys are BIGINT and sorted numerically, as InnoDB
orders them. ``seed`` keys are CHAR(28) latin1 (``latin1_swedish_ci``, case-insensitive):
they are sorted and compared for duplicates after ASCII upper-casing, which is that
collation's order and equality for digits and letters. The partitioner's keys are
zero-padded digits, for which this equals plain byte order. (Punctuation keys could sort
slightly differently from InnoDB: that only costs speed, duplicates are still caught by
the server and the count/checksum check.)
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import os
import queue
import re
import shutil
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import mysql.connector
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from ..core.index_input import duplicate_message, scan_file, scan_files
from ..core.index_table import DATABASE, load_file, load_files
from ..core.loaddata import LoadError
from ..core.targets import parse_size

log = logging.getLogger(__name__)

STRATEGIES = ("sequential", "parallel", "sorted", "bulk", "deferred-pk", "trans-partitioned")
TRANS_COLUMN = "qserv_trans_id"


@dataclass
class LoadOptions:
    """Knobs of the strategies (config ``load.*``); irrelevant ones are ignored."""
    connections: int = 2          # parallel, deferred-pk, trans-partitioned
    transaction_rows: int = 0     # bulk: rows per transaction, 0 = one transaction
    batch_files: int = 32         # trans-partitioned: files per partition
    consolidate: bool = True      # trans-partitioned: REMOVE PARTITIONING at the end
    sort_memory: str = "1GB"      # sorted, bulk: DuckDB memory_limit
    sort_threads: int = 0         # DuckDB threads, 0 = all cores
    chunk_rows: int = 1_000_000   # sorted, bulk: rows per sorted TSV chunk

    def check(self) -> "LoadOptions":
        if self.connections < 1:
            raise LoadError(f"connections must be >= 1, not {self.connections}")
        if self.transaction_rows < 0:
            raise LoadError(f"transaction_rows must be >= 0 (0 = one transaction), not {self.transaction_rows}")
        if self.batch_files < 1:
            raise LoadError(f"batch_files must be >= 1, not {self.batch_files}")
        if self.chunk_rows < 1:
            raise LoadError(f"chunk_rows must be >= 1, not {self.chunk_rows}")
        try:
            if parse_size(self.sort_memory) < (16 << 20):
                raise LoadError(f"sort_memory {self.sort_memory!r} is below 16M")
        except ValueError as exc:
            raise LoadError(f"sort_memory: {exc}") from None
        return self

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Outcome:
    trace: list = field(default_factory=list)
    infos: list = field(default_factory=list)
    phases: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)

    def phase(self, name: str, start: float, end: float, **kw):
        self.phases.append({"phase": name, "start": start, "end": end, "seconds": end - start, **kw})
        key = {"sort": "sort_seconds", "load": "load_seconds", "index_build": "index_build_seconds",
               "consolidate": "consolidate_seconds", "duplicate_check": "duplicate_check_seconds",
               "scan": "scan_seconds"}.get(name)
        if key:
            self.timings[key] = self.timings.get(key, 0.0) + (end - start)


# ---------------------------------------------------------------- schema

def table_name(variant, strategy: str) -> str:
    return f"{variant.name}_{strategy.replace('-', '_')}"


def columns_without_pk(variant) -> str:
    return variant.columns_ddl(primary_key=False)


def table_ddl(variant, strategy: str, database: str, table: str) -> str:
    head = f"CREATE TABLE `{database}`.`{table}`"
    tail = "ENGINE=InnoDB DEFAULT CHARSET=latin1"
    if strategy == "deferred-pk":
        return f"{head} ({columns_without_pk(variant)}) {tail}"
    if strategy == "trans-partitioned":
        return (f"{head} (`{TRANS_COLUMN}` INT NOT NULL, {columns_without_pk(variant)}, "
                f"UNIQUE KEY `trans_key` (`{TRANS_COLUMN}`, `{variant.key}`), KEY `key` (`{variant.key}`)) "
                f"{tail} PARTITION BY LIST (`{TRANS_COLUMN}`) (PARTITION `p0` VALUES IN (0))")
    return variant.ddl(table, database)


def _trace_row(path, rows, nbytes, start, end, **kw) -> dict:
    return {"file": str(path), "rows": rows, "bytes": nbytes, "start": start, "end": end,
            "seconds": end - start, "cumulative_rows": 0, **kw}


def _finish_trace(trace: list[dict]) -> list[dict]:
    trace.sort(key=lambda r: r["end"])
    total = 0
    for r in trace:
        total += r["rows"]
        r["cumulative_rows"] = total
    return trace


# ---------------------------------------------------------------- raw files, N connections

def load_files_parallel(server, database: str, table: str, files: list[Path], variant, connections: int,
                        all_files: list[Path] | None = None, trans_id: int | None = None,
                        session_sql: tuple = ()) -> tuple[list[dict], list]:
    """Validate and load ``files`` with ``connections`` connections (one file per connection at a time)."""
    all_files = all_files or files
    n = max(1, min(connections, len(files)))
    todo: queue.Queue = queue.Queue()
    for i, f in enumerate(files):
        todo.put((i, f))
    trace, infos = [], [None] * len(files)
    stop = threading.Event()
    lock = threading.Lock()

    def worker():
        conn = server.connect()
        try:
            cur = conn.cursor()
            for stmt in session_sql:
                cur.execute(stmt)
            while not stop.is_set():
                try:
                    i, f = todo.get_nowait()
                except queue.Empty:
                    return
                info = scan_file(f, variant)
                start = time.time()
                rows = load_file(conn, table, f, info.rows, variant, all_files, database=database, trans_id=trans_id)
                end = time.time()
                with lock:
                    infos[i] = info
                    trace.append(_trace_row(f, rows, info.bytes, start, end, trans_id=trans_id))
        except BaseException:
            stop.set()
            raise
        finally:
            conn.close()

    with cf.ThreadPoolExecutor(n, thread_name_prefix="catbench-load") as ex:
        futs = [ex.submit(worker) for _ in range(n)]
        errors = [f.exception() for f in futs]
    errors = [e for e in errors if e is not None]
    if errors:
        raise errors[0]
    return trace, infos


# ---------------------------------------------------------------- the sorted stream

class SortedStream:
    """DuckDB external sort of all input by key, written as sorted TSV chunks in ``tmpdir``.

    Runs in a thread: ``chunks`` yields (path, rows, bytes) as they are written; the
    adjacent-key check over the whole stream raises LoadError on the first duplicate.
    """

    def __init__(self, files: list[Path], variant, tmpdir: Path, opts: LoadOptions):
        self.files, self.variant, self.tmpdir, self.opts = files, variant, Path(tmpdir), opts
        self.queue: queue.Queue = queue.Queue(maxsize=2)  # bounded: the sort may not race far ahead
        self.error: BaseException | None = None
        self.sort_end: float | None = None      # first sorted row available
        self.end: float | None = None           # last chunk written
        self.rows = 0
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, name="catbench-sort", daemon=True)

    def start(self):
        self.start_time = time.time()
        self._thread.start()
        return self

    def cancel(self):
        self._cancel.set()
        try:
            while True:
                self.queue.get_nowait()
        except queue.Empty:
            pass
        self._thread.join()

    def chunks(self):
        while True:
            item = self.queue.get()
            if item is None:
                if self.error:
                    raise self.error
                return
            yield item

    def _put(self, item):
        while not self._cancel.is_set():
            try:
                self.queue.put(item, timeout=0.2)
                return
            except queue.Full:
                continue
        raise _Cancelled()

    def _run(self):
        try:
            self._sort()
        except _Cancelled:
            pass
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            self.error = exc
        finally:
            self.end = time.time()
            # the end marker must arrive however slowly the loader drains the queue
            while not self._cancel.is_set():
                try:
                    self.queue.put(None, timeout=0.2)
                    break
                except queue.Full:
                    continue

    def _sort(self):
        import duckdb

        seed = self.variant.name == "seed"
        out = self.tmpdir / "sorted"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        spill = self.tmpdir / "duckdb"
        spill.mkdir(parents=True, exist_ok=True)
        threads = self.opts.sort_threads or os.cpu_count() or 1
        con = duckdb.connect(config={"memory_limit": self.opts.sort_memory, "temp_directory": str(spill),
                                     "threads": threads, "preserve_insertion_order": True})
        kt = "VARCHAR" if seed else "BIGINT"
        order = "upper(k)" if seed else "k"
        rel = con.sql(
            f"SELECT k, c, s FROM read_csv({[str(f) for f in self.files]!r}, delim='\t', header=false, "
            f"quote='', escape='', auto_detect=false, "
            f"columns={{'k': '{kt}', 'c': 'INTEGER', 's': 'INTEGER'}}) ORDER BY {order}")
        reader = rel.to_arrow_reader(min(self.opts.chunk_rows, 1 << 20))
        wopts = pacsv.WriteOptions(include_header=False, delimiter="\t", quoting_style="none")
        prev = None
        pending: list[pa.RecordBatch] = []
        pending_rows, n_chunk = 0, 0

        def flush():
            nonlocal pending, pending_rows, n_chunk
            if not pending_rows:
                return
            path = out / f"sorted-{n_chunk:06d}.tsv"
            pacsv.write_csv(pa.Table.from_batches(pending), path, wopts)
            self._put((path, pending_rows, path.stat().st_size))
            n_chunk += 1
            pending, pending_rows = [], 0

        for batch in reader:
            if self.sort_end is None:
                self.sort_end = time.time()
            if self._cancel.is_set():
                raise _Cancelled()
            if batch.num_rows == 0:
                continue
            k = batch.column(0)
            if seed:
                u = pc.ascii_upper(k)
                cmp = u if prev is None else pa.concat_arrays([pa.array([prev], u.type), u])
                bad = pc.less_equal(cmp.slice(1), cmp.slice(0, len(cmp) - 1)).to_numpy(zero_copy_only=False)
                prev = u[-1].as_py()
                val = lambda i: cmp[i].as_py()  # noqa: E731
            else:
                a = k.to_numpy()
                cmp = a if prev is None else np.concatenate([[prev], a])
                bad = cmp[1:] <= cmp[:-1]
                prev = int(a[-1])
                val = lambda i: int(cmp[i])  # noqa: E731
            if bad.any():
                at = int(np.argmax(bad))
                if val(at) != val(at + 1):  # "<=" but not "==": DuckDB's order broke
                    raise LoadError(f"sorted stream out of order at key {val(at + 1)!r}; report this as a bug")
                offset = len(cmp) - len(k)  # 1 when the previous batch's last key was prepended
                raw = k[at + 1 - offset].as_py()
                raise LoadError(duplicate_message(str(raw), self.files, self.variant,
                                                  "input has a repeated key (found in the sorted stream): "))
            self.rows += batch.num_rows
            pending.append(batch)
            pending_rows += batch.num_rows
            if pending_rows >= self.opts.chunk_rows:
                flush()
        flush()
        con.close()
        if self.sort_end is None:
            self.sort_end = time.time()


class _Cancelled(Exception):
    pass


def load_sorted(server, conn, database: str, table: str, files: list[Path], variant, opts: LoadOptions,
                tmpdir: Path, outcome: Outcome, bulk: bool = False):
    """Scan (validate + checksum) the input while DuckDB sorts it, then load the sorted chunks."""
    t0 = time.time()
    stream = SortedStream(files, variant, tmpdir, opts).start()
    # validation must finish before the first row reaches the server; it overlaps the sort
    with cf.ThreadPoolExecutor(1, thread_name_prefix="catbench-scan") as ex:
        scan = ex.submit(scan_files, files, variant)
        try:
            infos = scan.result()
        except BaseException:
            stream.cancel()
            raise
    outcome.infos = infos
    outcome.phase("scan", t0, time.time())
    cur = conn.cursor()
    if bulk:
        cur.execute("SET SESSION unique_checks=0, foreign_key_checks=0, sql_log_bin=0")
        conn.autocommit = False
    trace, in_txn, commits = [], 0, 0
    first_load = None
    try:
        for path, rows, nbytes in stream.chunks():
            start = time.time()
            first_load = first_load or start
            load_file(conn, table, path, rows, variant, files, database=database,
                      what=f"sorted chunk {path.name}")
            in_txn += rows
            end = time.time()
            if bulk and opts.transaction_rows and in_txn >= opts.transaction_rows:
                conn.commit()
                commits += 1
                in_txn = 0
                end = time.time()
            trace.append(_trace_row(path, rows, nbytes, start, end, source="sorted"))
            path.unlink()
        if bulk:
            c0 = time.time()
            conn.commit()
            commits += 1
            outcome.extra["final_commit_seconds"] = time.time() - c0
    except BaseException:
        stream.cancel()
        if bulk:
            try:
                conn.rollback()
            except mysql.connector.Error:
                pass
        raise
    finally:
        if bulk:
            conn.autocommit = True
            cur = conn.cursor()
            cur.execute("SET SESSION unique_checks=1, foreign_key_checks=1")
    t_end = time.time()
    outcome.phase("sort", stream.start_time, stream.end or t_end, first_row_s=(stream.sort_end or t_end) - t0)
    outcome.phase("load", first_load or t_end, t_end)
    outcome.trace = _finish_trace(trace)
    outcome.extra.update({"sorted_rows": stream.rows, "commits": commits if bulk else None,
                          "chunks": len(trace)})
    shutil.rmtree(Path(tmpdir) / "sorted", ignore_errors=True)
    shutil.rmtree(Path(tmpdir) / "duckdb", ignore_errors=True)


# ---------------------------------------------------------------- the strategies

def run_strategy(strategy: str, server, conn, table: str, variant, files: list[Path], opts: LoadOptions,
                 tmpdir: Path) -> Outcome:
    out = Outcome()
    t0 = time.time()
    if strategy == "sequential":
        out.trace, out.infos = load_files(conn, table, files, variant)
        out.phase("load", t0, time.time())
        out.extra["connections"] = 1
        return out
    if strategy == "parallel":
        trace, out.infos = load_files_parallel(server, DATABASE, table, files, variant, opts.connections)
        out.trace = _finish_trace(trace)
        out.phase("load", t0, time.time())
        out.extra["connections"] = opts.connections
        return out
    if strategy in ("sorted", "bulk"):
        load_sorted(server, conn, DATABASE, table, files, variant, opts, tmpdir, out, bulk=strategy == "bulk")
        out.extra["connections"] = 1
        if strategy == "bulk":
            out.extra["transaction_rows"] = opts.transaction_rows
        return out
    if strategy == "deferred-pk":
        trace, out.infos = load_files_parallel(server, DATABASE, table, files, variant, opts.connections)
        out.trace = _finish_trace(trace)
        t1 = time.time()
        out.phase("load", t0, t1)
        cur = conn.cursor()
        try:
            cur.execute(f"ALTER TABLE `{DATABASE}`.`{table}` ADD PRIMARY KEY (`{variant.key}`)")
        except mysql.connector.Error as exc:
            m = re.search(r"Duplicate entry '(.*)' for key", str(exc))
            if m:
                raise LoadError(duplicate_message(m.group(1), files, variant,
                                                  "ALTER TABLE ADD PRIMARY KEY failed: ")) from None
            raise LoadError(f"ALTER TABLE {table} ADD PRIMARY KEY failed: {exc}") from None
        out.phase("index_build", t1, time.time())
        out.extra["connections"] = opts.connections
        return out
    if strategy == "trans-partitioned":
        cur = conn.cursor()
        trace, infos = [], []
        batches = [files[i:i + opts.batch_files] for i in range(0, len(files), opts.batch_files)]
        alter_s = 0.0
        for b, batch in enumerate(batches, 1):
            a0 = time.time()
            cur.execute(f"ALTER TABLE `{DATABASE}`.`{table}` ADD PARTITION (PARTITION `p{b}` VALUES IN ({b}))")
            alter_s += time.time() - a0
            tr, inf = load_files_parallel(server, DATABASE, table, batch, variant, opts.connections,
                                          all_files=files, trans_id=b)
            trace += tr
            infos += inf
        out.trace, out.infos = _finish_trace(trace), infos
        t1 = time.time()
        out.phase("load", t0, t1)
        out.extra.update({"connections": opts.connections, "batch_files": opts.batch_files,
                          "partitions": len(batches), "add_partition_seconds": alter_s,
                          "consolidated": bool(opts.consolidate)})
        t2 = t1
        if opts.consolidate:
            cur.execute(f"ALTER TABLE `{DATABASE}`.`{table}` REMOVE PARTITIONING")
            t2 = time.time()
            out.phase("consolidate", t1, t2)
        cur.execute(f"SELECT `{variant.key}`, COUNT(*) FROM `{DATABASE}`.`{table}` "
                    f"GROUP BY `{variant.key}` HAVING COUNT(*) > 1 LIMIT 5")
        dups = cur.fetchall()
        out.phase("duplicate_check", t2, time.time())
        if dups:
            key, n = dups[0]
            raise LoadError(duplicate_message(str(key), files, variant,
                                              f"{len(dups)}{'+' if len(dups) == 5 else ''} keys are in more than "
                                              f"one partition ({n} times for the first): "))
        return out
    raise LoadError(f"unknown loading strategy {strategy!r}; available: {', '.join(STRATEGIES)}")
