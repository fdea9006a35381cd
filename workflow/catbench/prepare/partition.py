"""Partition catalog parts into per-chunk files, as a map/reduce over chunk groups.

map (one job per catalog part): locate every row (chunkId, subChunkId, overlap
    locations) reading only the position and id columns, and write small staging files
    of (row, chunkId, subChunkId) sorted by chunk group, one row group per group.
reduce (one job per group of chunks, ra wedges of the sky region): for each part, read
    only the catalog row groups that hold the group's rows, take those rows, order them
    by chunk (generation order within a chunk) and write per-chunk Parquet and TSV and a
    manifest listing them. Wide rows are read once and written once: no wide shuffle.
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

from ..core.files import (
    atomic_path,
    open_parquet,
    parquet_errors,
    read_parquet,
    write_parquet,
    write_tsv,
)
from ..core.index_input import write_manifest
from .chunker import Chunker

log = logging.getLogger(__name__)

TABLES = ("Object", "ObjectOverlap", "Source")
KEY_WIDTH = 28  # the seed's CHAR(28) source_id
LOCATION = ("chunkId", "subChunkId")


def chunker_from(cfg: dict) -> Chunker:
    p = cfg["partition"]
    return Chunker(p["num_stripes"], p["num_sub_stripes_per_stripe"], p["overlap_deg"])


def group_table(cfg: dict, groups: int) -> np.ndarray:
    """The reduce group of every chunk id (a lookup table: 15k entries at 85 stripes):
    ``groups`` equal ra wedges of the sky region, by chunk centre. Wedges (not
    ``chunkId % groups``) keep a group's rows in few catalog row groups, since a part's
    copies are runs in ra; equal wedges of the region hold equal numbers of rows, as
    duplication keeps the density."""
    chunker = chunker_from(cfg)
    sky = cfg["catalog"]["sky"]
    lo, hi = float(sky["ra_min_deg"]), float(sky["ra_max_deg"])
    ids = chunker.all_chunks()
    g = np.floor((chunker.chunk_ra_centre(ids) - lo) / (hi - lo) * groups)
    table = np.zeros(int(ids.max()) + 1, np.int32)
    table[ids] = np.clip(g, 0, groups - 1)
    return table


def _write_locations(rows, chunk_id, sub_id, group, path):
    """Staging file of one table: (row, chunkId, subChunkId, _group) sorted by (group,
    chunkId, row), one row group per group, so a reduce job reads only its own."""
    # One stable sort on (group, chunk): rows come in generation order, in runs per chunk.
    order = np.argsort((group.astype(np.int64) << 32) | chunk_id, kind="stable")
    g = group[order]
    t = pa.table({"row": pa.array(rows[order], pa.int64()),
                  "chunkId": pa.array(chunk_id[order], pa.int32()),
                  "subChunkId": pa.array(sub_id[order], pa.int32()),
                  "_group": pa.array(g, pa.int32())})
    bounds = np.flatnonzero(np.diff(g)) + 1
    # Small: locations dictionary-encode, row numbers are runs (delta-encoded).
    with atomic_path(path) as tmp, pq.ParquetWriter(
            tmp, t.schema, compression="none", use_dictionary=list(t.schema.names[1:]),
            column_encoding={"row": "DELTA_BINARY_PACKED"}) as w:
        for a, b in zip(np.r_[0, bounds], np.r_[bounds, len(g)]):
            w.write_table(t.slice(a, b - a))


def map_part(cfg: dict, object_path, source_path, out_dir, groups: int) -> dict:
    """Locate one catalog part and write its staging files into ``out_dir``."""
    chunker = chunker_from(cfg)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    obj = read_parquet(object_path, columns=["objectId", "ra_PS", "decl_PS"])
    ra, dec = obj["ra_PS"].to_numpy(), obj["decl_PS"].to_numpy()
    chunk_id, sub_id = chunker.locate(ra, dec, where=str(object_path))
    ov_rows, ov_chunk, ov_sub = chunker.overlap_locations(ra, dec, where=str(object_path))
    oid = obj["objectId"].to_numpy()
    write_parquet(pa.table({"objectId": oid, "chunkId": chunk_id, "subChunkId": sub_id}),
                  out / "index.parquet")

    # Sources take their Object's location (child table, no overlap).
    s_oid = read_parquet(source_path, columns=["objectId"])["objectId"].to_numpy()
    sorted_idx = np.argsort(oid, kind="stable")
    pos = np.searchsorted(oid[sorted_idx], s_oid)
    pos = sorted_idx[np.minimum(pos, len(oid) - 1)] if len(oid) else pos
    orphan = (oid[pos] != s_oid) if len(oid) else np.ones(len(s_oid), bool)
    if orphan.any():
        i = int(np.flatnonzero(orphan)[0])
        raise ValueError(f"{source_path}: row {i}: Source objectId {s_oid[i]} has no Object "
                         f"in {object_path}; regenerate the catalog part")

    n_obj, n_src = len(oid), len(s_oid)
    group_of = group_table(cfg, groups)
    obj_group = group_of[chunk_id]
    for name, loc in (("Object", (np.arange(n_obj), chunk_id, sub_id, obj_group)),
                      ("ObjectOverlap", (ov_rows, ov_chunk, ov_sub, group_of[ov_chunk])),
                      ("Source", (np.arange(n_src), chunk_id[pos], sub_id[pos], obj_group[pos]))):
        _write_locations(*loc, out / f"{name}.parquet")
    return {"objects": n_obj, "sources": n_src, "overlap_rows": len(ov_rows)}


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


def _take_rows(path, rows: np.ndarray) -> pa.Table:
    """Rows ``rows`` (ascending within runs, any order overall) of a catalog file,
    decoding only the row groups that hold them."""
    f = open_parquet(path)
    sizes = [f.metadata.row_group(i).num_rows for i in range(f.num_row_groups)]
    starts = np.cumsum([0] + sizes)
    rg = np.searchsorted(starts, rows, side="right") - 1
    needed = np.flatnonzero(np.bincount(rg, minlength=len(sizes)))
    with parquet_errors(path):
        table = f.read_row_groups(needed.tolist())
    # Position of each wanted row in the concatenation of the needed row groups.
    base = np.zeros(len(sizes), np.int64)
    base[needed] = np.cumsum([0] + [sizes[i] for i in needed[:-1]])
    return table.take(pa.array(rows - starts[rg] + base[rg]))


def reduce_group(staging_dirs, catalog_parts, group: int, chunks_dir, manifest_path) -> dict:
    """Write every chunk file of one chunk group and a manifest of them.
    ``catalog_parts`` are the (Object, Source) Parquet files each staging dir was
    mapped from, in the same order."""
    if len(catalog_parts) != len(staging_dirs):
        raise ValueError(f"{len(staging_dirs)} staging dirs but {len(catalog_parts)} catalog "
                         f"parts: give the parts in the order they were mapped")
    chunks_dir = Path(chunks_dir)
    slices: dict[str, dict[int, list[pa.Table]]] = {name: {} for name in TABLES}
    for d, (objects, sources) in zip(staging_dirs, catalog_parts):
        locs = {name: _group_rows(Path(d) / f"{name}.parquet", group) for name in TABLES}
        # Object and its overlap come from the same file: decode its row groups once.
        for path, names in ((objects, ("Object", "ObjectOverlap")), (sources, ("Source",))):
            present = [(name, locs[name]) for name in names if locs[name] is not None]
            if not present:
                continue
            taken = _take_rows(path, np.concatenate([loc["row"].to_numpy() for _, loc in present]))
            at = 0
            for name, loc in present:
                t = taken.slice(at, loc.num_rows)
                at += loc.num_rows
                for col in LOCATION:
                    t = t.append_column(col, loc[col])
                # Rows are in chunk order: cut them into per-chunk slices, concatenated
                # below in part (= generation) order.
                ids = loc["chunkId"].to_numpy()
                starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
                for a, b in zip(starts, np.r_[starts[1:], len(ids)]):
                    slices[name].setdefault(int(ids[a]), []).append(t.slice(a, b - a))
    object_chunks = set(slices["Object"])
    # Every chunk with Objects gets an overlap file, empty when nothing is near.
    empty_overlap = _located_schema(catalog_parts[0][0]).empty_table() if catalog_parts else None
    for cid in object_chunks - set(slices["ObjectOverlap"]):
        slices["ObjectOverlap"][cid] = [empty_overlap]
    manifest = []
    for name in TABLES:
        folder = chunks_dir / ("Source" if name == "Source" else "Object")
        folder.mkdir(parents=True, exist_ok=True)
        suffix = "_overlap" if name == "ObjectOverlap" else ""
        for cid in sorted(slices[name]):
            table = pa.concat_tables(slices[name].pop(cid))
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


def _located_schema(objects_path) -> pa.Schema:
    schema = open_parquet(objects_path).schema_arrow
    for col in LOCATION:
        schema = schema.append(pa.field(col, pa.int32()))
    return schema


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
    manifests: dict[Path, dict] = {out_numeric: {}, out_char: {}}
    for d in staging_dirs:
        pending.append(read_parquet(Path(d) / "index.parquet"))
        buf = pa.concat_tables(pending)
        # Emit every file that is complete with what has been read so far.
        while k < n_files and written + buf.num_rows >= bounds[k + 1]:
            n = bounds[k + 1] - written
            _write_index_file(buf.slice(0, n), k, out_numeric, out_char, manifests)
            buf, written, k = buf.slice(n), written + n, k + 1
        pending = [buf]
    for folder, files in manifests.items():  # last: its presence says the input is whole
        write_manifest(folder, files, total)
    return {"files": n_files, "rows": total}


def _write_index_file(t: pa.Table, k: int, out_numeric: Path, out_char: Path, manifests: dict):
    name = f"part-{k:05d}.tsv"
    write_tsv(t, out_numeric / name)
    padded = pc.utf8_lpad(pc.cast(t["objectId"], pa.string()), KEY_WIDTH, "0")
    write_tsv(t.set_column(0, "source_id", padded), out_char / name)
    for folder in (out_numeric, out_char):
        manifests[folder][name] = {"rows": t.num_rows, "bytes": (folder / name).stat().st_size}
