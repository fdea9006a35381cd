"""Chunk tables on a private server, the Qserv way: ``Object_<chunkId>``, ``Source_<chunkId>``
and ``ObjectFullOverlap_<chunkId>`` created from the chunk files' schema, then loaded with
``LOAD DATA LOCAL INFILE`` over N parallel connections. Every file's rows affected must
equal its row count (from ``chunks.tsv`` and the file's own line count) with no warning
(``core.server.loaddata.load_data``). The secondary index beside them is ``core.index.table``'s:
its variant's schema, loaded one file at a time.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ..core.index.table import DATABASE as INDEX_DATABASE
from ..core.index.table import create_table as create_index_table
from ..core.index.table import get_variant, load_files
from ..core.infra.metrics import Progress
from ..core.infra.resources import split_statements
from ..core.server.loaddata import LoadDestination, LoadError, line_count, load_data
from ..core.server.rowsize import NOT_NULL, SQL_TYPES
from ..core.sky.chunk_list import COUNTS, ChunkListError, parse_chunk_list
from .suite import QueryError

log = logging.getLogger(__name__)

DATABASE = "LSST"
INDEX_TABLE = "objectId_index"  # this stage's index table, in core.index.table.DATABASE
# table kind -> (file folder, file suffix, keys)
KINDS = {
    "Object": ("Object", "", "PRIMARY KEY (`objectId`), KEY `subChunkId` (`subChunkId`)"),
    "ObjectFullOverlap": ("Object", "_overlap", "PRIMARY KEY (`subChunkId`, `objectId`)"),
    "Source": ("Source", "", "PRIMARY KEY (`sourceId`), KEY `objectId` (`objectId`)"),
}


class ChunkLoadError(LoadError):
    """A chunk file did not load exactly; the message names the file."""


@dataclass(frozen=True)
class ChunkInfo:
    chunk_id: int
    object_rows: int
    source_rows: int
    overlap_rows: int


def read_chunk_list(chunks_dir) -> list[ChunkInfo]:
    """Chunks with Objects, from ``chunks.tsv`` (``core/sky/chunk_list.py``; overlap-only chunks
    hold no Object, so no query ever starts from them; they are skipped)."""
    path = Path(chunks_dir) / "chunks.tsv"
    if not path.exists():
        raise ChunkLoadError(f"{path} not found; run the partition step first")
    try:
        chunks = parse_chunk_list(path.read_text(), str(path), need=("chunkId", *COUNTS))
    except ChunkListError as e:
        raise ChunkLoadError(f"{e}; re-run the partition step") from None
    out = [ChunkInfo(c.chunk_id, c.objects, c.sources, c.overlap) for c in chunks if c.objects > 0]
    if not out:
        raise ChunkLoadError(f"{path} lists no chunk with Objects")
    return out


def chunk_file(chunks_dir, kind: str, chunk_id: int, ext: str) -> Path:
    folder, suffix, _ = KINDS[kind]
    return Path(chunks_dir) / folder / f"chunk_{chunk_id}{suffix}.{ext}"


def parquet_files(chunks_dir, chunks: list[ChunkInfo], kind: str, attr: str) -> list[str]:
    """The Parquet chunk files of ``kind`` (Object, Source) for the chunks whose ``attr`` counts
    rows (``object_rows``, ``source_rows``); one missing where chunks.tsv lists rows fails."""
    out = []
    for c in chunks:
        if getattr(c, attr) > 0:
            p = chunk_file(chunks_dir, kind, c.chunk_id, "parquet")
            if not p.exists():
                raise QueryError(f"{p} not found but chunks.tsv lists rows for it")
            out.append(str(p))
    return out


def table_name(kind: str, chunk_id: int) -> str:
    return f"{kind}_{chunk_id}"


def columns_ddl(schema: pa.Schema) -> str:
    cols = []
    for f in schema:
        t = SQL_TYPES.get(f.type)
        if t is None:
            raise ChunkLoadError(f"column {f.name}: no SQL type for Arrow type {f.type}")
        name = f.name.replace("`", "``")   # names are checked before any job; quoted all the same
        cols.append(f"`{name}` {t} NOT NULL" if f.name in NOT_NULL else f"`{name}` {t}")
    return ", ".join(cols)


def _load_one(conn, kind: str, chunk_id: int, path: Path, expected: int) -> dict:
    lines = line_count(path)
    if lines != expected:
        raise ChunkLoadError(f"{path}: {lines} lines, chunks.tsv says {expected} rows; re-run the partition step")
    t0 = time.monotonic()
    affected = load_data(conn, path, lines, LoadDestination(DATABASE, table_name(kind, chunk_id)), escaped=True,
                         what=f"{path} (table {table_name(kind, chunk_id)})")
    return {"kind": kind, "chunkId": chunk_id, "rows": affected, "bytes": path.stat().st_size,
            "seconds": time.monotonic() - t0}


def load_chunk_tables(server, chunks_dir, chunks: list[ChunkInfo], connections: int) -> dict:
    """Create and load every chunk table over ``connections`` connections (config
    ``queries.load_connections``); returns timings (create, load, total), counts and
    ``trace``, each file's load (kind, chunkId, rows, bytes, seconds)."""
    chunks_dir = Path(chunks_dir)
    schemas = {k: pq.read_schema(chunk_file(chunks_dir, k, chunks[0].chunk_id, "parquet"))
               for k in KINDS}
    conn = server.connect()
    cur = conn.cursor()
    t0 = time.monotonic()
    cur.execute(f"CREATE DATABASE IF NOT EXISTS `{DATABASE}`")
    tasks = []
    for c in chunks:
        for kind, (_, _, keys) in KINDS.items():
            cur.execute(f"DROP TABLE IF EXISTS `{DATABASE}`.`{table_name(kind, c.chunk_id)}`")
            cur.execute(f"CREATE TABLE `{DATABASE}`.`{table_name(kind, c.chunk_id)}` "
                        f"({columns_ddl(schemas[kind])}, {keys}) ENGINE=InnoDB")
            rows = {"Object": c.object_rows, "Source": c.source_rows, "ObjectFullOverlap": c.overlap_rows}[kind]
            path = chunk_file(chunks_dir, kind, c.chunk_id, "tsv")
            if rows or path.exists():
                if not path.exists():
                    raise ChunkLoadError(f"{path} not found but chunks.tsv lists {rows} rows")
                tasks.append((kind, c.chunk_id, path, rows))
    conn.close()
    t1 = time.monotonic()
    # Largest files first: the pool finishes together.
    tasks.sort(key=lambda t: -t[3])
    pool = [server.connect() for _ in range(max(1, connections))]
    free = list(pool)
    lock = threading.Lock()
    progress, done = Progress("chunk tables", len(tasks)), {"files": 0, "rows": 0}

    def work(task):
        with lock:
            c = free.pop()
        try:
            out = _load_one(c, *task)
        finally:
            with lock:
                free.append(c)
        with lock:      # a large catalog's load takes minutes: rows/s and ETA in the job's log
            done["files"] += 1
            done["rows"] += out["rows"]
            progress(done["files"], rows=done["rows"])
        return out

    try:
        with cf.ThreadPoolExecutor(len(pool), thread_name_prefix="catbench-chunkload") as ex:
            trace = list(ex.map(work, tasks))
    finally:
        for c in pool:
            c.close()
    t2 = time.monotonic()
    rows = sum(t["rows"] for t in trace)
    nbytes = sum(t["bytes"] for t in trace)
    log.info("chunk tables: %d files, %d rows, %.1f MB in %.2f s (create %.2f s, load %.2f s, %d connections)",
             len(trace), rows, nbytes / 1e6, t2 - t0, t1 - t0, t2 - t1, len(pool))
    by_kind = {k: sum(t["rows"] for t in trace if t["kind"] == k) for k in KINDS}
    return {"chunks": len(chunks), "files": len(trace), "rows": rows, "bytes": nbytes,
            "create_s": t1 - t0, "load_s": t2 - t1, "seconds": t2 - t0, "connections": len(pool),
            "rows_per_s": rows / (t2 - t1) if t2 > t1 else None, "rows_by_table": by_kind,
            "trace": trace}


def load_secondary_index(server, files: list[Path], variant: str) -> dict:
    """The director index (objectId -> chunkId, subChunkId) of schema ``variant`` (config
    ``queries.index_variant``), loaded one file at a time."""
    v = get_variant(variant)
    conn = server.connect()
    try:
        create_index_table(conn, v, INDEX_TABLE)
        t0 = time.monotonic()
        trace, _ = load_files(conn, INDEX_TABLE, [Path(f) for f in files], v)
        seconds = time.monotonic() - t0
    finally:
        conn.close()
    rows = trace[-1]["cumulative_rows"] if trace else 0
    return {"variant": v.name, "key": v.key, "table": f"{INDEX_DATABASE}.{INDEX_TABLE}", "files": len(files),
            "rows": rows, "seconds": seconds}


def install_functions(conn, path) -> None:
    """Create the suite's stored functions (udf_mysql.sql) in the chunk database."""
    cur = conn.cursor()
    cur.execute(f"CREATE DATABASE IF NOT EXISTS `{DATABASE}`")
    cur.execute(f"USE `{DATABASE}`")
    for stmt in split_statements(Path(path).read_text()):
        cur.execute(stmt)
