"""Partition catalog parts into per-chunk files, as a map/reduce over chunk groups.

map (one job per catalog part): locate every row (chunkId, subChunkId, overlap
    locations) and write staging files sorted by chunk group, one row group per group.
reduce (one job per group of chunks, ``chunkId % groups``): gather that group's rows
    from every part, order by chunk (generation order within a chunk), write per-chunk
    Parquet and TSV and a manifest listing them.
index: concatenate the parts' (objectId, chunkId, subChunkId) in generation order and
    split them into the secondary-index input files.
Memory is bounded by the part size (map) and the group size (reduce), both settings.
See partition.md.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .chunker import Chunker
from .files import atomic_path, open_parquet, read_parquet, write_parquet, write_tsv

log = logging.getLogger(__name__)

TABLES = ("Object", "ObjectOverlap", "Source")
KEY_WIDTH = 28  # the seed's CHAR(28) source_id


def chunker_from(cfg: dict) -> Chunker:
    p = cfg["partition"]
    return Chunker(p["num_stripes"], p["num_sub_stripes_per_stripe"], p["overlap_deg"])


def _with_location(table: pa.Table, chunk_id, sub_id, groups: int) -> pa.Table:
    return (table.append_column("chunkId", pa.array(chunk_id, pa.int32()))
                 .append_column("subChunkId", pa.array(sub_id, pa.int32()))
                 .append_column("_group", pa.array(chunk_id % groups, pa.int32())))


def _write_grouped(table: pa.Table, path):
    """Sort by (group, chunkId), keeping generation order within a chunk, and write one
    row group per group: a reduce job then reads only its own row groups, already in
    chunk order, and merges the parts without sorting wide rows again."""
    order = pc.sort_indices(table, [("_group", "ascending"), ("chunkId", "ascending")])
    table = table.take(order)
    g = table["_group"].to_numpy()
    bounds = np.flatnonzero(np.diff(g)) + 1
    with atomic_path(path) as tmp, pq.ParquetWriter(
            tmp, table.schema, use_dictionary=False, compression="none") as w:
        for a, b in zip(np.r_[0, bounds], np.r_[bounds, len(g)]):
            w.write_table(table.slice(a, b - a))


def map_part(cfg: dict, object_path, source_path, out_dir, groups: int) -> dict:
    """Locate one catalog part and write its staging files into ``out_dir``."""
    chunker = chunker_from(cfg)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    obj = read_parquet(object_path)
    ra, dec = obj["ra_PS"].to_numpy(), obj["decl_PS"].to_numpy()
    chunk_id, sub_id = chunker.locate(ra, dec, where=str(object_path))
    rows, ov_chunk, ov_sub = chunker.overlap_locations(ra, dec, where=str(object_path))
    overlap = _with_location(obj.take(rows), ov_chunk, ov_sub, groups)
    oid = obj["objectId"].to_numpy()
    write_parquet(pa.table({"objectId": oid, "chunkId": chunk_id, "subChunkId": sub_id}),
                  out / "index.parquet")
    obj = _with_location(obj, chunk_id, sub_id, groups)

    # Sources take their Object's location (child table, no overlap).
    src = read_parquet(source_path)
    sorted_idx = np.argsort(oid, kind="stable")
    s_oid = src["objectId"].to_numpy()
    pos = np.searchsorted(oid[sorted_idx], s_oid)
    pos = sorted_idx[np.minimum(pos, len(oid) - 1)] if len(oid) else pos
    orphan = (oid[pos] != s_oid) if len(oid) else np.ones(len(s_oid), bool)
    if orphan.any():
        i = int(np.flatnonzero(orphan)[0])
        raise ValueError(f"{source_path}: row {i}: Source objectId {s_oid[i]} has no Object "
                         f"in {object_path}; regenerate the catalog part")
    src = _with_location(src, chunk_id[pos], sub_id[pos], groups)

    for name, table in (("Object", obj), ("ObjectOverlap", overlap), ("Source", src)):
        _write_grouped(table, out / f"{name}.parquet")
    return {"objects": obj.num_rows, "sources": src.num_rows, "overlap_rows": overlap.num_rows}


def _group_rows(path, group: int) -> pa.Table | None:
    """The rows of ``group`` in one staging file (row groups are pure per group)."""
    f = open_parquet(path)
    col = f.schema_arrow.get_field_index("_group")
    wanted = []
    for i in range(f.num_row_groups):
        st = f.metadata.row_group(i).column(col).statistics
        if st is not None and st.has_min_max and st.min == group:
            wanted.append(i)
    return f.read_row_groups(wanted) if wanted else None


def reduce_group(staging_dirs, group: int, chunks_dir, manifest_path) -> dict:
    """Write every chunk file of one chunk group and a manifest of them."""
    chunks_dir = Path(chunks_dir)
    manifest = []
    object_chunks: set[int] = set()
    for name in TABLES:
        # Each part's rows are already in chunk order: cut them into per-chunk slices
        # and concatenate the slices of all parts in part (= generation) order.
        slices: dict[int, list[pa.Table]] = {}
        schema = None
        for d in staging_dirs:
            t = _group_rows(Path(d) / f"{name}.parquet", group)
            if t is None:
                continue
            t = t.drop_columns(["_group"])
            schema = t.schema
            ids = t["chunkId"].to_numpy()
            starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]) if len(ids) else []
            for a, b in zip(starts, np.r_[starts[1:], len(ids)]):
                slices.setdefault(int(ids[a]), []).append(t.slice(a, b - a))
        folder = chunks_dir / ("Source" if name == "Source" else "Object")
        folder.mkdir(parents=True, exist_ok=True)
        suffix = "_overlap" if name == "ObjectOverlap" else ""
        if name == "Object":
            object_chunks = set(slices)
        if name == "ObjectOverlap" and schema is None and object_chunks:
            schema = _first_schema(staging_dirs, name)
        if name == "ObjectOverlap":
            # Every chunk with Objects gets an overlap file, empty when nothing is near.
            for cid in object_chunks - set(slices):
                slices[cid] = [schema.empty_table()]
        for cid in sorted(slices):
            table = pa.concat_tables(slices[cid])
            manifest.append(_write_chunk(table, folder, cid, name, suffix))
    manifest.sort(key=lambda r: (r["chunkId"], r["table"]))
    Path(manifest_path).parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(manifest_path) as tmp:
        with open(tmp, "w") as f:
            f.write("chunkId\ttable\trows\tparquet_bytes\ttsv_bytes\n")
            for r in manifest:
                f.write(f"{r['chunkId']}\t{r['table']}\t{r['rows']}\t{r['parquet_bytes']}\t"
                        f"{r['tsv_bytes']}\n")
    return {"chunks": len(object_chunks), "files": 2 * len(manifest),
            "rows": sum(r["rows"] for r in manifest)}


def _first_schema(staging_dirs, name) -> pa.Schema:
    schema = open_parquet(Path(staging_dirs[0]) / f"{name}.parquet").schema_arrow
    return schema.remove(schema.get_field_index("_group"))


def _write_chunk(table, folder: Path, chunk_id: int, name: str, suffix: str) -> dict:
    stem = folder / f"chunk_{chunk_id}{suffix}"
    write_parquet(table, stem.with_suffix(".parquet"))
    write_tsv(table, stem.with_suffix(".tsv"))
    return {"chunkId": chunk_id, "table": name, "rows": table.num_rows,
            "parquet_bytes": stem.with_suffix(".parquet").stat().st_size,
            "tsv_bytes": stem.with_suffix(".tsv").stat().st_size}


def write_index_input(staging_dirs, n_files: int, out_numeric, out_char) -> dict:
    """Split (key, chunkId, subChunkId) in generation order into ``n_files`` TSV files,
    once with the numeric objectId key and once zero-padded to CHAR(28)."""
    counts = [open_parquet(Path(d) / "index.parquet").metadata.num_rows for d in staging_dirs]
    total = sum(counts)
    if total == 0:
        raise ValueError("the catalog has no objects: nothing to write to the index input")
    n_files = min(n_files, total)
    bounds = [total * k // n_files for k in range(n_files + 1)]
    out_numeric, out_char = Path(out_numeric), Path(out_char)
    out_numeric.mkdir(parents=True, exist_ok=True)
    out_char.mkdir(parents=True, exist_ok=True)
    k, written, pending = 0, 0, []
    for d in staging_dirs:
        pending.append(read_parquet(Path(d) / "index.parquet"))
        buf = pa.concat_tables(pending)
        # Emit every file that is complete with what has been read so far.
        while k < n_files and written + buf.num_rows >= bounds[k + 1]:
            n = bounds[k + 1] - written
            _write_index_file(buf.slice(0, n), k, out_numeric, out_char)
            buf, written, k = buf.slice(n), written + n, k + 1
        pending = [buf]
    return {"files": n_files, "rows": total}


def _write_index_file(t: pa.Table, k: int, out_numeric: Path, out_char: Path):
    name = f"part-{k:05d}.tsv"
    write_tsv(t, out_numeric / name)
    padded = pc.utf8_lpad(pc.cast(t["objectId"], pa.string()), KEY_WIDTH, "0")
    write_tsv(t.set_column(0, "source_id", padded), out_char / name)
