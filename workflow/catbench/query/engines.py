"""Query engines: ``mysql`` (Qserv's plan: secondary index, one query per chunk on a pool
of connections, merge) and ``duckdb`` (the logical query over the Parquet chunk files).

Both return a :class:`~catbench.query.suite.Answer`; the suite's SQL lives in
resources/queries, the engines' stored functions in resources/sql/udf_<engine>.sql.
Chunk file paths reach DuckDB through its relation API, never pasted into SQL text.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import mysql.connector
import pyarrow as pa

from ..core.index.table import Variant
from ..core.infra.resources import resource, split_statements
from ..core.sky.geometry import Geometry
from .chunk_tables import DATABASE, INDEX_TABLE, ChunkInfo, parquet_files, table_name
from .suite import Answer, Query, QueryError, bind

log = logging.getLogger(__name__)
MYSQL_FLOAT = 4  # mysql.connector FieldType.FLOAT
STATEMENT_TIMEOUT = 1969   # MariaDB's ER_STATEMENT_TIMEOUT: max_statement_time passed


@dataclass(frozen=True)
class Deadline:
    """A time limit over several queries: none starts past it and one running is stopped at it
    (MariaDB's max_statement_time, DuckDB's interrupt). The query stage's comes from its rule's
    runtime (``catbench queries --time-limit-min``), the draw's from ``queries.draw.budget_s``."""
    at: float | None = None                      # time.monotonic() when it passes; None: no limit
    says: Callable[[str], str] = str             # the error's words, given what was running

    @classmethod
    def of(cls, minutes: float | None) -> Deadline:
        """The query stage's: ``minutes`` from now (None: no limit)."""
        if not minutes:
            return cls()
        return cls(time.monotonic() + 60 * minutes, lambda what: (
            f"{what}: the query stage passed its time limit of {minutes:g} min (its rule's runtime, from the "
            f"plan); fewer queries.repetitions, a smaller queries.draw.target_pairs or --set-resources "
            f"<rule>:runtime=<min> give it more room"))

    def left(self, what: str) -> float | None:
        """Seconds left for ``what`` (None: no limit); past the limit, its error."""
        if self.at is None:
            return None
        left = self.at - time.monotonic()
        if left <= 0:
            raise self.passed(what)
        return left

    def passed(self, what: str) -> QueryTimeout:
        return QueryTimeout(self.says(what))


def udf_path(engine: str) -> Path:
    """The suite's stored functions (fluxToAbMag, angSep, ...) for ``engine``."""
    return resource("sql", f"udf_{engine}.sql")


def sphgeom_chunker(num_stripes: int, num_sub_stripes: int):
    try:
        from lsst.sphgeom import Chunker
    except ImportError as exc:  # pragma: no cover - dependency missing
        raise QueryError("the mysql engine needs lsst-sphgeom for the chunk geometry "
                         "(pip install lsst-sphgeom)") from exc
    return Chunker(num_stripes, num_sub_stripes)


def box_region(params: dict):
    from lsst.sphgeom import Box
    ra0, ra1, d0, d1 = (float(params[k]) for k in ("ra_min", "ra_max", "dec_min", "dec_max"))
    if not (0 <= ra0 <= ra1 <= 360 and -90 <= d0 <= d1 <= 90):
        raise QueryError(f"box ra [{ra0}, {ra1}] dec [{d0}, {d1}] is not a box with 0 <= ra_min <= ra_max "
                         f"<= 360 and -90 <= dec_min <= dec_max <= 90 (boxes across ra = 0 are not supported)")
    return Box.fromDegrees(ra0, d0, ra1, d1)


class MysqlEngine:
    """Runs the suite as Qserv's czar does over one or several worker servers: the secondary
    index on the first (the czar's), each chunk query sent to the worker ``placement`` names
    (``query/placement.py``; all on the first when None) with ``connections`` chunk queries in
    flight a worker (``QuerySpec.connections``), the partial results merged here;
    ``geometry`` is the chunk files' partitioning, ``index_variant`` the secondary index's schema."""

    name = "mysql"

    def __init__(self, servers, chunks: list[ChunkInfo], geometry: Geometry, connections: int,
                 index_variant: Variant, placement: dict[int, int] | None = None):
        self.servers = list(servers) if isinstance(servers, (list, tuple)) else [servers]
        self.server = self.servers[0]
        self.index_variant = index_variant
        self._lookup_sql = index_variant.lookup_sql(INDEX_TABLE)
        self.chunk_ids = sorted(c.chunk_id for c in chunks)
        self._loaded = set(self.chunk_ids)
        self.placement = placement or dict.fromkeys(self.chunk_ids, 0)
        self.sphgeom = sphgeom_chunker(geometry.num_stripes, geometry.num_sub_stripes_per_stripe)
        self.connections = max(1, int(connections))
        self._pools: list[queue.Queue] = []
        self._conns: list = []
        self._ex: list[cf.ThreadPoolExecutor] = []
        self._merge = duckdb.connect()
        self.last_chunks: list[tuple[int, float, int]] = []  # the last run's (chunkId, s, rows)
        self.deadline = Deadline()
        self._query = ""    # the query running, for the time limit's message
        self.open()

    # -- connections: reopened after every server restart; one pool and one scheduler a worker --
    def open(self):
        self.close_pool()
        for k, srv in enumerate(self.servers):
            pool = queue.Queue()
            for _ in range(self.connections):
                c = srv.connect()
                self._conns.append(c)
                c.cursor().execute(f"USE `{DATABASE}`")
                pool.put(c)
            self._pools.append(pool)
            self._ex.append(cf.ThreadPoolExecutor(self.connections, thread_name_prefix=f"catbench-chunkq-w{k}"))

    def close_pool(self):
        for ex in self._ex:
            ex.shutdown(wait=True)
        self._ex, self._pools = [], []
        for c in self._conns:
            try:
                c.close()
            except Exception:  # noqa: BLE001 - the server may be gone already
                pass
        self._conns = []

    def close(self):
        self.close_pool()
        self._merge.close()

    def _execute(self, sql: str, args: dict | tuple, timing: list | None = None, worker: int = 0):
        pool = self._pools[worker]
        conn = pool.get()
        try:
            t0 = time.perf_counter()
            cur = conn.cursor()
            left = self.deadline.left(self._query)
            try:
                # 0 would mean no limit: a thousandth of a second at least
                cur.execute(f"SET STATEMENT max_statement_time={max(left, 0.001):.3f} FOR {sql}" if left else sql,
                            args)
                rows = cur.fetchall()
            except mysql.connector.Error as exc:
                if exc.errno == STATEMENT_TIMEOUT:
                    raise self.deadline.passed(self._query) from None
                raise
            if timing is not None:
                timing.append(time.perf_counter() - t0)
            desc = cur.description or []
            return [d[0] for d in desc], {d[0] for d in desc if d[1] == MYSQL_FLOAT}, rows
        finally:
            pool.put(conn)

    # -- dispatch --
    def tasks(self, q: Query, params: dict) -> list[tuple[int, list[int] | None]]:
        """(chunkId, sub-chunk ids or None) the query must run on."""
        if q.dispatch == "all":
            return [(c, None) for c in self.chunk_ids]
        if q.dispatch == "index":
            key = self.index_variant.parse_key(b"%d" % int(params["object_id"]))
            _, _, rows = self._execute(self._lookup_sql, (key,))
            return [(int(r[0]), None) for r in rows if int(r[0]) in self._loaded]
        region = box_region(params)
        if q.dispatch == "box":
            return [(int(c), None) for c in sorted(self.sphgeom.getChunksIntersecting(region))
                    if int(c) in self._loaded]
        out = []
        for c, subs in self.sphgeom.getSubChunksIntersecting(region):
            if int(c) in self._loaded and len(subs):
                out.append((int(c), sorted(int(s) for s in subs)))
        return sorted(out)

    @staticmethod
    def chunk_sql(template: str, chunk_id: int, subs) -> str:
        return template.format(
            Object=f"`{table_name('Object', chunk_id)}`", Source=f"`{table_name('Source', chunk_id)}`",
            ObjectFullOverlap=f"`{table_name('ObjectFullOverlap', chunk_id)}`",
            subChunkIds=",".join(str(s) for s in subs) if subs else "NULL")

    def run(self, q: Query, params: dict) -> Answer:
        self._query = f"query {q.name}"
        tasks = self.tasks(q, params)
        sql, args = bind(q, q.chunk_sql, params, "pyformat")
        # Each chunk query's own time (from its connection's execute to its last row
        # fetched): what one chunk costs a query run, as Qserv's workers see it.
        timings = [[] for _ in tasks]
        futs = [self._ex[w].submit(self._execute, self.chunk_sql(sql, c, subs), args, timings[k], w)
                for k, (c, subs) in enumerate(tasks) for w in (self.placement[c],)]
        columns, f32, rows, chunks = None, set(), [], []
        for (c, _), f, tm in zip(tasks, futs, timings):
            cols, fl, r = f.result()
            columns = columns or cols
            f32 |= fl
            rows.extend(r)
            chunks.append((c, tm[0], len(r)))
        self.last_chunks = chunks
        columns = columns or []
        if q.merge_sql:
            return self.merge(q, columns, rows, f32)
        return Answer(columns, rows, f32)

    def merge(self, q: Query, columns: list[str], rows: list[tuple], f32: set) -> Answer:
        if not columns:
            raise QueryError(f"query {q.name}: no chunk to run on, nothing to merge")
        data = {c: pa.array([r[i] for r in rows]) for i, c in enumerate(columns)}
        partials = pa.table(data)
        self._merge.register("partials", partials)
        try:
            cur = self._merge.execute(q.merge_sql)
            out = cur.fetchall()
            cols = [d[0] for d in cur.description]
        finally:
            self._merge.unregister("partials")
        return Answer(cols, out, {c for c in cols if c in f32})


class DuckdbEngine:
    """The logical queries over the Parquet chunk files (embedded, no server).

    A query runs in a helper thread while the main thread waits: DuckDB's joins do not
    look for Python's signals for minutes, so SIGINT/SIGTERM reach the waiting main thread
    (``cli.common.on_signal`` raises there), which interrupts the query before unwinding."""

    name = "duckdb"

    def __init__(self, chunks_dir, chunks: list[ChunkInfo], threads: int | None = None,
                 memory_limit: str | None = None):
        self.chunks_dir = Path(chunks_dir)
        self.chunks = chunks
        self.threads, self.memory_limit = threads, memory_limit
        self.con = None
        self._cursors: list = []
        self._runner: cf.ThreadPoolExecutor | None = None
        self.deadline = Deadline()
        self.open()

    def _files(self, kind: str, attr: str) -> list[str]:
        return parquet_files(self.chunks_dir, self.chunks, kind, attr)

    def files(self) -> list[str]:
        """What this engine reads: the Parquet chunk files as the partition wrote them."""
        return self._files("Object", "object_rows") + self._files("Source", "source_rows")

    def layout(self) -> dict:
        """The chunk files (no load of its own), their rows and bytes."""
        files = self.files()
        return {"files": len(files), "rows": sum(c.object_rows + c.source_rows for c in self.chunks),
                "bytes": sum(Path(f).stat().st_size for f in files), "seconds": None}

    def open(self):
        """A fresh in-process database (the 'restart' of an embedded engine)."""
        if self.con is not None:
            self.con.close()
        self.con = duckdb.connect()
        if self.threads:
            self.con.execute(f"SET threads = {int(self.threads)}")
        if self.memory_limit:
            self.con.execute("SET memory_limit = ?", [self.memory_limit])
        for stmt in split_statements(udf_path("duckdb").read_text()):
            self.con.execute(stmt)
        for view, kind, attr in (("Object", "Object", "object_rows"), ("Source", "Source", "source_rows")):
            # the relation API takes the paths as values (DuckDB quotes them in the view)
            self.con.read_parquet(self._files(kind, attr)).create_view(view, replace=True)

    def cursor(self):
        cur = self.con.cursor()
        self._cursors.append(cur)
        return cur

    def close(self):
        for cur in self._cursors:   # a concurrency stream's query still running
            try:
                cur.interrupt()
            except duckdb.Error:    # closed by its stream already
                pass
        self._cursors = []
        if self._runner is not None:
            self._runner.shutdown(wait=True)
            self._runner = None
        if self.con is not None:
            self.con.close()
            self.con = None

    def execute(self, sql: str, args, con=None, timeout_s: float | None = None):
        """(description, rows) of ``sql``; after ``timeout_s`` (None: none) the query is
        interrupted and :class:`QueryTimeout` raised. From the main thread the query runs
        in the helper thread, so a signal interrupts it (the class docstring)."""
        return self._timed(sql, args, con, timeout_s)[:2]

    def _timed(self, sql: str, args, con=None, timeout_s: float | None = None):
        """``execute`` and the query's own seconds, timed where it ran (not the ~0.1 ms hand-off)."""
        con = con or self.con

        def fetch():
            t0 = time.perf_counter()
            cur = con.execute(sql, args)
            return cur.description, cur.fetchall(), time.perf_counter() - t0
        if threading.current_thread() is not threading.main_thread() and timeout_s is None:
            return fetch()
        self._runner = self._runner or cf.ThreadPoolExecutor(1, thread_name_prefix="catbench-duckdb")
        fut = self._runner.submit(fetch)
        try:
            return fut.result(timeout=timeout_s)
        except cf.TimeoutError:
            con.interrupt()
            _settle(fut)
            raise QueryTimeout(f"stopped after {timeout_s:.0f} s") from None
        except BaseException:       # a signal (KeyboardInterrupt, SystemExit) while waiting
            con.interrupt()
            _settle(fut)
            raise

    def run(self, q: Query, params: dict, con=None, timeout_s: float | None = None) -> Answer:
        sql, args = bind(q, q.sql, params, "dollar")
        left = self.deadline.left(f"query {q.name}")
        if threading.current_thread() is not threading.main_thread():
            left = None     # a concurrency stream, bounded by its seconds (one runner would serialize them)
        try:
            desc, rows, seconds = self._timed(sql, args, con, min((x for x in (timeout_s, left) if x), default=None))
        except QueryTimeout:
            if timeout_s and (left is None or timeout_s < left):
                raise
            raise self.deadline.passed(f"query {q.name}") from None
        return Answer([d[0] for d in desc], rows, {d[0] for d in desc if str(d[1]) == "FLOAT"}, seconds)


class QueryTimeout(QueryError):
    """A DuckDB query stopped at its time limit."""


def _settle(fut: cf.Future, wait_s: float = 10.0) -> None:
    """Wait (briefly) for an interrupted query's thread to give up; its error is the interruption's."""
    try:
        fut.result(timeout=wait_s)
    except BaseException:  # noqa: BLE001 - the interrupted query's own error
        pass
