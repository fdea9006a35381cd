"""A query rung's result files read into per-chunk observations: every chunk query of every
repetition (queries/<target>/mysql/chunk_times.parquet) beside the bytes and rows of the chunk
table it read (chunk_loads.parquet), and the sizes of the rung (its data, its pool, the chunk
queries a server ran at once). Reads files only: the query stage is never imported."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq

from ...core.infra.config.yamlfile import read_bytes, read_json, read_with
from ...core.sky.chunk_list import ChunkListError, parse_chunk_list

# The chunk table each class reads, and the quantity that drives a chunk query's time: the
# table's bytes (a scan), its rows squared (a self-join within the chunk), or nothing (an
# index lookup that reads one row).
CLASSES = {
    "LV1": ("Object", "lookup"), "LV2": ("Source", "lookup"), "LV3": ("Object", "bytes"),
    "HV1": ("Object", "bytes"), "HV2": ("Object", "bytes"), "HV3": ("Object", "bytes"),
    "SHV1": ("Object", "pairs"), "SHV2": ("Source", "bytes"),
}
KIND = "a query result file as catbench wrote it (run the queries stage again)"


class QueryRunError(ValueError):
    pass


@dataclass(frozen=True)
class ChunkObs:
    """One chunk query of one repetition."""
    run: str
    query: str
    cache: str          # warm, or the cold method's repetitions (caches dropped before)
    rep: int
    chunk: int
    seconds: float
    rows: float         # rows of the chunk table the class reads
    nbytes: float       # its bytes as loaded


@dataclass
class QueryRung:
    """One rung's mysql query results on one target."""
    run: str
    target: str
    pool_bytes: float
    connections: int                         # chunk queries a server ran at once
    chunk_bytes: dict = field(default_factory=dict)    # table -> {chunkId: bytes}
    chunk_rows: dict = field(default_factory=dict)     # table -> {chunkId: rows}
    obs: list = field(default_factory=list)            # [ChunkObs]
    query_s: dict = field(default_factory=dict)        # (query, cache) -> [whole query seconds]

    def data_bytes(self, table: str = "Object") -> float:
        return float(sum(self.chunk_bytes.get(table, {}).values()))

    def data_rows(self, table: str = "Object") -> float:
        return float(sum(self.chunk_rows.get(table, {}).values()))


def finite(v, where: str) -> float:
    if v is None or not math.isfinite(float(v)) or float(v) < 0:
        raise QueryRunError(f"{where}: {v!r} is not a finite figure ≥ 0 ({KIND})")
    return float(v)


def read_rung(results: Path, target: str) -> QueryRung | None:
    """The mysql query results of ``target`` in ``results`` (results/<run>); None without them."""
    d = Path(results) / "queries" / target / "mysql"
    if not (d / "chunk_times.parquet").exists():
        return None
    summary = read_json(d / "summary.json", "a query rung", KIND)
    # the pool the server ran with (its own variable)
    pool = ((summary.get("server") or {}).get("variables") or {}).get("innodb_buffer_pool_size")
    rung = QueryRung(results.name, target, finite(pool, f"{d / 'summary.json'}: innodb_buffer_pool_size"),
                     int(summary.get("connections") or 1))
    loads = read_with(pq.read_table, d / "chunk_loads.parquet", "a query rung", KIND).to_pylist()
    for i, r in enumerate(loads, 1):
        where = f"{d / 'chunk_loads.parquet'} row {i}"
        # a chunk's table in several files: their sums
        for into, col in ((rung.chunk_bytes, "bytes"), (rung.chunk_rows, "rows")):
            per = into.setdefault(r["kind"], {})
            per[r["chunkId"]] = per.get(r["chunkId"], 0.0) + finite(r[col], where)
    times = read_with(pq.read_table, d / "chunk_times.parquet", "a query rung", KIND).to_pylist()
    for i, r in enumerate(times, 1):
        if r["query"] not in CLASSES:
            continue
        table = CLASSES[r["query"]][0]
        where = f"{d / 'chunk_times.parquet'} row {i}"
        rung.obs.append(ChunkObs(rung.run, r["query"], r["cache"], int(r["run"]), int(r["chunkId"]),
                                 finite(r["seconds"], where), rung.chunk_rows.get(table, {}).get(r["chunkId"], 0.0),
                                 rung.chunk_bytes.get(table, {}).get(r["chunkId"], 0.0)))
    whole = read_with(pq.read_table, d / "results.parquet", "a query rung", KIND).to_pylist()
    for i, r in enumerate(whole, 1):
        if r["query"] in CLASSES and r.get("seconds") is not None:
            rung.query_s.setdefault((r["query"], r["cache"]), []).append(
                finite(r["seconds"], f"{d / 'results.parquet'} row {i}"))
    return rung


USER_CHUNKS_MAX = 64 * 2 ** 20     # a full sky's chunks.tsv is ~1 MB
USER_CHUNKS_KIND = "a chunks.tsv as the partition writes it (chunkId, object_rows, source_rows: results/<run>/chunks)"


def read_user_chunks(path) -> dict:
    """The user's chunks (``--chunk-rows``): {"Object": {chunkId: rows}, "Source": {...}} from a
    partition's chunks.tsv (``core/sky/chunk_list.py``); QueryRunError naming the file and line.
    Source rows only where the file has the column."""
    text = read_bytes(path, "--chunk-rows", USER_CHUNKS_MAX, USER_CHUNKS_KIND).decode("utf-8", "replace")
    try:
        chunks = parse_chunk_list(text, f"--chunk-rows {path}")
    except ChunkListError as e:
        raise QueryRunError(f"{e}; give {USER_CHUNKS_KIND}") from None
    out = {"Object": {c.chunk_id: float(c.objects) for c in chunks}}
    if chunks and chunks[0].sources is not None:
        out["Source"] = {c.chunk_id: float(c.sources) for c in chunks}
    if not sum(out["Object"].values()):
        raise QueryRunError(f"--chunk-rows {path}: no chunk holds an Object")
    return out
