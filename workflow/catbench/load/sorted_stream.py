"""The sorted stream of strategies ``sorted`` and ``bulk``: DuckDB sorts all input by the
table's key order (an external sort: ``memory_limit`` = ``load.sort_memory``, spilling
to the target's tmpdir), the stream is written as TSV chunks of ``load.chunk_rows`` rows
and loaded in key order by one connection while the next chunks are written. A repeated
key is found in the stream itself (adjacent equal keys) and named with both input places
before the server sees it.

Key order is the variant's (``Variant.sort_expr``): numeric for BIGINT keys; for CHAR
keys (latin1_swedish_ci, case-insensitive) ASCII upper-case, which is that collation's
order and equality for digits and letters; on MariaDB 10.11 no printable ASCII character
(the keys' alphabet) orders differently either, only case ties do. Were the orders to
differ, InnoDB would only load slower, while MyRocks' bulk path (strategy bulk on rocksdb)
refuses a row out of the table's own order (error 4054): a LoadError reports it as a bug.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import os
import queue
import threading
import time
from pathlib import Path

import duckdb  # at import time: its load must not count in the first repetition's time
import mysql.connector
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from ..core.index.input import duplicate_message, scan_files
from ..core.index.table import IndexDestination, load_file
from ..core.infra.resources import read_sql
from ..core.server.loaddata import LoadError
from ..core.server.scratch import ScratchDir
from .job import LoadJob, LoadOptions, LoadProgress, Outcome, finish_trace, trace_row

log = logging.getLogger(__name__)
ER_KEYS_OUT_OF_ORDER = 4054  # MyRocks bulk load: "Rows must be inserted in primary key order"

_INPUT = ("read_csv($files, delim='\t', header=false, quote='', escape='', auto_detect=false, "
          "columns={{'k': '{key_type}', 'c': 'INTEGER', 's': 'INTEGER'}})")
_READ_INPUT = "SELECT k, c, s FROM " + _INPUT + " ORDER BY {order}"
_KEY_RANGE = "SELECT min({order}), max({order}) FROM " + _INPUT


def shared_prefix(lo: str | None, hi: str | None) -> int:
    """Length of the prefix every key between ``lo`` and ``hi`` (sort order) shares."""
    if lo is None or hi is None:
        return 0
    n = 0
    while n < min(len(lo), len(hi)) and lo[n] == hi[n]:
        n += 1
    return n



_WRITE = pacsv.WriteOptions(include_header=False, delimiter="\t", quoting_style="none")


def write_tsv(table: pa.Table, path: Path) -> None:
    """The rows as LOAD DATA's tab-separated lines, taken literally (``ESCAPED BY ''``): a key
    may hold any printable character (the input scan's rule). Arrow's CSV writer (the fast
    path) refuses a quote without quoting; then the lines are the string buffers of one join
    (1.4x its time)."""
    try:
        pacsv.write_csv(table, path, _WRITE)
        return
    except pa.ArrowInvalid:
        pass
    cols = [pc.cast(table.column(i), pa.string()) for i in range(table.num_columns)]
    lines = pc.binary_join_element_wise(pc.binary_join_element_wise(*cols, "\t"), "", "\n")  # "k\tc\ts\n"
    with open(path, "wb") as f:
        for chunk in lines.chunks:
            text = chunk.cast(pa.large_string())
            offsets = np.frombuffer(text.buffers()[1], dtype=np.int64)[text.offset:text.offset + len(text) + 1]
            f.write(memoryview(text.buffers()[2])[offsets[0]:offsets[-1]])

class _Cancelled(Exception):
    pass


class KeyOrder:
    """The adjacent-key check over the whole stream, batch after batch: a key not greater
    than the one before it is a duplicate (or, if not equal, a broken sort)."""

    def __init__(self, variant, files: list[Path]):
        self.variant, self.files, self.prev = variant, files, None

    def check(self, keys: pa.Array):
        if self.variant.text_key:
            u = pc.ascii_upper(keys)
            cmp = u if self.prev is None else pa.concat_arrays([pa.array([self.prev], u.type), u])
            bad = pc.less_equal(cmp.slice(1), cmp.slice(0, len(cmp) - 1)).to_numpy(zero_copy_only=False)
            self.prev = u[-1].as_py()
            val = lambda i: cmp[i].as_py()  # noqa: E731
        else:
            a = keys.to_numpy()
            cmp = a if self.prev is None else np.concatenate([[self.prev], a])
            bad = cmp[1:] <= cmp[:-1]
            self.prev = int(a[-1])
            val = lambda i: int(cmp[i])  # noqa: E731
        if not bad.any():
            return
        at = int(np.argmax(bad))
        if val(at) != val(at + 1):  # "<=" but not "==": DuckDB's order broke
            raise LoadError(f"sorted stream out of order at key {val(at + 1)!r}; report this as a bug")
        offset = len(cmp) - len(keys)  # 1 when the previous batch's last key was prepended
        raw = keys[at + 1 - offset].as_py()
        raise LoadError(duplicate_message(str(raw), self.files, self.variant,
                                          "input has a repeated key (found in the sorted stream): "))


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
        self.shared_prefix = 0   # leading characters every key shares (not sorted on)
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, name="catbench-sort", daemon=True)

    def start(self):
        # the chunks and DuckDB's spill in a fresh folder of this stream's own: the tmpdir may be
        # shared with other jobs (and other users), and a fixed name there would be theirs too
        self.work = ScratchDir(self.tmpdir, "sort-")
        for sub in ("sorted", "duckdb"):
            os.mkdir(self.work.path / sub, 0o700)
        self.start_time = time.time()
        self._thread.start()
        return self

    def close(self):
        """Stop the sort if it still runs, then remove its files (its own folder only)."""
        self.cancel()
        self.work.remove()

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

    def _connect(self):
        spill = self.work.path / "duckdb"
        threads = self.opts.sort_threads or os.cpu_count() or 1
        return duckdb.connect(config={"memory_limit": self.opts.sort_memory, "temp_directory": str(spill),
                                      "threads": threads, "preserve_insertion_order": True})

    def _order(self, con) -> str:
        """The ORDER BY expression. Text keys are sorted without the prefix they all share
        (found by one pass over the input): DuckDB sorts strings on their first bytes and
        compares the rest only on ties, and the CHAR(28) zero-padded keys share 18 leading
        zeros, so every comparison was a tie. On the bench's 4.76 M CHAR(28) keys: 6.1-6.8
        against 12.1-13.2 CPU-s for the sort, plus 1.8 CPU-s for the pass (n=2, alternated)."""
        order = self.variant.sort_expr("k")
        if not self.variant.text_key:
            return order
        lo, hi = con.sql(_KEY_RANGE.format(key_type=self.variant.duckdb_type, order=order),
                         params={"files": [str(f) for f in self.files]}).fetchall()[0]
        n = shared_prefix(lo, hi)
        self.shared_prefix = n
        return self.variant.sort_expr(f"substr(k, {n + 1})") if n else order

    def _sort(self):
        out = self.work.path / "sorted"
        con = self._connect()
        sql = _READ_INPUT.format(key_type=self.variant.duckdb_type, order=self._order(con))
        rel = con.sql(sql, params={"files": [str(f) for f in self.files]})
        reader = rel.to_arrow_reader(min(self.opts.chunk_rows, 1 << 20))
        order = KeyOrder(self.variant, self.files)
        pending: list[pa.RecordBatch] = []
        pending_rows, n_chunk = 0, 0

        def flush():
            nonlocal pending, pending_rows, n_chunk
            if not pending_rows:
                return
            path = out / f"sorted-{n_chunk:06d}.tsv"
            try:
                write_tsv(pa.Table.from_batches(pending), path)
            except OSError as exc:   # named: the sort's folder may be on another disk than the server's
                raise OSError(exc.errno, exc.strerror, str(path)) from exc
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
            order.check(batch.column(0))
            self.rows += batch.num_rows
            pending.append(batch)
            pending_rows += batch.num_rows
            if pending_rows >= self.opts.chunk_rows:
                flush()
        flush()
        con.close()
        if self.sort_end is None:
            self.sort_end = time.time()


def _scan_while_sorting(job: LoadJob, stream: SortedStream) -> list:
    """Validation must finish before the first row reaches the server; it overlaps the sort."""
    with cf.ThreadPoolExecutor(1, thread_name_prefix="catbench-scan") as ex:
        scan = ex.submit(scan_files, job.files, job.variant)
        try:
            return scan.result()
        except BaseException:
            stream.cancel()
            raise


def _load_chunks(job: LoadJob, stream: SortedStream, outcome: Outcome, txn: bool, progress: LoadProgress):
    """Load the sorted chunks in order; ``txn`` (bulk on InnoDB): one transaction (or one
    per transaction_rows)."""
    conn, opts = job.conn, job.opts
    trace, in_txn, commits, first_load = [], 0, 0, None
    for path, rows, nbytes in stream.chunks():
        start = time.time()
        first_load = first_load or start
        _load_chunk(job, conn, path, rows)
        in_txn += rows
        end = time.time()
        if txn and opts.transaction_rows and in_txn >= opts.transaction_rows:
            conn.commit()
            commits += 1
            in_txn = 0
            end = time.time()
        trace.append(trace_row(path, rows, nbytes, start, end, source="sorted"))
        progress.add(rows)
        path.unlink()
    if txn:
        c0 = time.time()
        conn.commit()
        commits += 1
        outcome.extra["final_commit_seconds"] = time.time() - c0
    return trace, commits, first_load


def _load_chunks_parallel(job: LoadJob, stream: SortedStream, progress: LoadProgress, connections: int):
    """Strategy ``sorted-parallel``: each of ``connections`` connections takes the next
    sorted chunk, so neighbouring key ranges grow side by side. One LOAD DATA is one server
    thread: a single connection left the server's other cores idle (its CPU, not the sort,
    bounded ``sorted``; strategies.md). A chunk is its own transaction; the first failure
    stops the others before their next chunk."""
    trace, first_load, lock = [], [], threading.Lock()
    conns: queue.Queue = queue.Queue()
    for _ in range(connections):
        conns.put(job.server.connect())

    def one(path: Path, rows: int, nbytes: int):
        conn = conns.get()
        try:
            start = time.time()
            _load_chunk(job, conn, path, rows)
            with lock:
                first_load.append(start)
                trace.append(trace_row(path, rows, nbytes, start, time.time(), source="sorted"))
            progress.add(rows)
            path.unlink()
        finally:
            conns.put(conn)

    try:
        with cf.ThreadPoolExecutor(connections, thread_name_prefix="catbench-load") as ex:
            running: set = set()
            for item in stream.chunks():
                if len(running) >= connections:   # at most one chunk per connection in flight
                    done, running = cf.wait(running, return_when=cf.FIRST_COMPLETED)
                    for f in done:
                        f.result()
                running.add(ex.submit(one, *item))
            for f in cf.as_completed(running):
                f.result()
    finally:
        while not conns.empty():
            conns.get().close()
    trace.sort(key=lambda r: r["start"])
    return trace, min(first_load, default=None)


def _load_chunk(job: LoadJob, conn, path: Path, rows: int):
    try:
        load_file(conn, IndexDestination(job.table, job.variant, tuple(job.files), job.database), path, rows,
                  what=f"sorted chunk {path.name}")
    except mysql.connector.Error as exc:
        if exc.errno != ER_KEYS_OUT_OF_ORDER:
            raise
        # KeyOrder saw strictly increasing keys: the table's order differs from the sort's
        raise LoadError(f"sorted chunk {path.name}: the {job.engine.name} bulk load refused a row out of "
                        f"the table's key order ({exc.msg}) although the sorted stream has no repeated or "
                        f"descending key; report this as a bug, and load this input with strategy "
                        f"sorted meanwhile") from None


def _end_bulk(job: LoadJob, txn: bool, outcome: Outcome | None):
    """Leave the bulk session. MyRocks ingests the SST files it wrote here (timed as its
    final commit). After a failure (``outcome`` None) nothing is committed and no error
    hides the first one."""
    conn, end_sql = job.conn, read_sql("index", job.engine.bulk_sql[1])
    if outcome is None:
        try:
            if txn:
                conn.rollback()
            conn.autocommit = True
            conn.cursor().execute(end_sql)
        except mysql.connector.Error:
            pass
        return
    conn.autocommit = True
    c0 = time.time()
    try:
        conn.cursor().execute(end_sql)
    except mysql.connector.Error as exc:
        raise LoadError(f"ending the {job.engine.name} bulk load failed: {exc}") from None
    if not txn:
        outcome.extra["final_commit_seconds"] = time.time() - c0


def load_sorted(job: LoadJob, outcome: Outcome, bulk: bool = False, connections: int = 1):
    """Scan (validate + checksum) the input while DuckDB sorts it, then load the sorted
    chunks; ``bulk`` in the engine's bulk session (``Engine.bulk_sql``); with more than one
    connection, chunks side by side (not with ``bulk``: one session, one transaction)."""
    t0 = time.time()
    if job.watch is not None:
        job.watch.by_files = False   # LoadProgress below counts the sorted stream's rows
    stream = SortedStream(job.files, job.variant, job.tmpdir, job.opts).start()
    try:
        _load_stream(job, outcome, stream, t0, bulk, connections)
    finally:
        stream.close()


def _load_stream(job: LoadJob, outcome: Outcome, stream: SortedStream, t0: float, bulk: bool, connections: int):
    conn = job.conn
    outcome.infos = _scan_while_sorting(job, stream)
    outcome.phase("scan", t0, time.time())
    rows = sum(i.rows for i in outcome.infos)
    progress = LoadProgress("loading the sorted stream (rows)", rows, by_rows=True)
    txn = bulk and job.engine.bulk_transactions
    if bulk:
        conn.cursor().execute(read_sql("index", job.engine.bulk_sql[0]))
        conn.autocommit = not txn
    try:
        if connections > 1:
            trace, first_load = _load_chunks_parallel(job, stream, progress, connections)
            commits = len(trace)
        else:
            trace, commits, first_load = _load_chunks(job, stream, outcome, txn, progress)
    except BaseException:
        stream.cancel()
        if bulk:
            _end_bulk(job, txn, None)
        raise
    if bulk:
        _end_bulk(job, txn, outcome)
    t_end = time.time()
    outcome.phase("sort", stream.start_time, stream.end or t_end, first_row_s=(stream.sort_end or t_end) - t0)
    outcome.phase("load", first_load or t_end, t_end)
    outcome.trace = finish_trace(trace)
    outcome.extra.update({"sorted_rows": stream.rows, "commits": commits if txn else None,
                          "shared_key_prefix": stream.shared_prefix,
                          "chunks": len(trace)})
