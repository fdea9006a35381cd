"""Partition catalog parts into per-chunk files, as a map/reduce over chunk groups.

map (one job per run of catalog parts, core.sky.copies.map_batches): locate every row
    (chunkId, subChunkId, overlap locations) reading only the position and id columns,
    and write staging files of (row, chunkId, subChunkId) per part, sorted by chunk
    group, one row group per group (staging.py).
reduce (one job per group of chunks, ra wedges of the sky region): for each part, read
    only the catalog row groups that hold the group's rows, take those rows, order them
    by chunk (generation order within a chunk) and write per-chunk Parquet and/or TSV
    (``formats``) and a manifest listing them. Wide rows are read once and written once:
    no wide shuffle. TSV lines are glued from the text the catalog stage wrote, each value
    formatted once (rowtext.py); chunk files are written by chunkfiles.py.
index: concatenate the parts' (objectId, chunkId, subChunkId) in generation order and
    split them into the secondary-index input files.
Memory is bounded by the part size (map) and the group size (reduce), both settings.
See partition.md.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..core.index.input import write_manifest
from ..core.infra.files import (
    atomic_path,
    open_parquet,
    parquet_errors,
    read_parquet,
    write_all,
)
from ..core.sky.copies import copy_layout
from .arrays import lpad, numpy, table, take
from .catalog import VARYING
from . import staging
from .chunker import Chunker
from .chunkfiles import ROW_GROUP, ChunkFiles, in_range, passes, slices
from .rowtext import PartText, column_text, copy_rows, formatted, join, patch_rows, repeat
from .spec import PrepareSpec

log = logging.getLogger(__name__)

TABLES = ("Object", "ObjectOverlap", "Source")
KEY_WIDTH = 28  # the char28 variant's CHAR(28) source_id
LOCATION = ("chunkId", "subChunkId")
FORMATS = ("tsv", "parquet")  # of the chunk files; config partition.formats


def group_table(spec: PrepareSpec, groups: int) -> np.ndarray:
    """The reduce group of every chunk id (a lookup table: 15k entries at 85 stripes):
    ``groups`` ra wedges of the sky region, by chunk centre, cut so that each holds about
    the same expected rows (``expected_chunk_rows``: the density model's crowded chunks
    make narrower wedges). Wedges (not ``chunkId % groups``) keep a group's rows in few
    catalog row groups, since a part's copies are runs in ra."""
    chunker = Chunker.of(spec.partition.geometry)
    lo, hi = spec.catalog.ra_min_deg, spec.catalog.ra_max_deg
    ids = chunker.all_chunks()
    centre = chunker.chunk_ra_centre(ids)
    weight = expected_chunk_rows(spec, chunker)[ids]
    if weight.sum() > 0:
        order = np.lexsort((ids, centre))
        before = np.cumsum(weight[order]) - weight[order] / 2    # each chunk's middle row
        g = np.empty(len(ids))
        g[order] = np.floor(before / weight.sum() * groups)
    else:
        g = np.floor((centre - lo) / (hi - lo) * groups)
    table = np.zeros(int(ids.max()) + 1, np.int32)
    table[ids] = np.clip(g, 0, groups - 1)
    return table


FOOTPRINT_SAMPLES = 4  # per side of a copy: a copy's rows spread over 4 x 4 points


def expected_chunk_rows(spec: PrepareSpec, chunker: Chunker | None = None) -> np.ndarray:
    """Expected rows (Objects and their Sources) of every chunk id, from the copy layout
    (core/sky/copies.py, with the density model): each copy's kept objects spread evenly over
    its footprint (dec centre +- height/2, ra start + width / cos dec). An estimate known
    before any row is generated, the same in every map job."""
    cat = spec.catalog
    chunker = chunker or Chunker.of(spec.partition.geometry)
    layout = copy_layout(cat.section)
    out = np.zeros(int(chunker.all_chunks().max()) + 1)
    if not len(layout):
        return out
    f = (np.arange(FOOTPRINT_SAMPLES) + 0.5) / FOOTPRINT_SAMPLES
    fd, fr = (a.ravel() for a in np.meshgrid(f - 0.5, f))
    dec = np.clip(layout["dec_centre"][:, None] + fd * layout["height"][:, None], -90.0, 90.0)
    span = layout["width"] / np.maximum(np.cos(np.radians(layout["dec_centre"])), 1e-9)
    ra = np.mod(layout["ra_start"][:, None] + fr * span[:, None], 360.0)
    rows = layout["keep"] * (1.0 + float(cat.sources_per_object)) / len(fd)
    chunk_id, _ = chunker.locate(ra.ravel(), dec.ravel(), where="copy layout")
    np.add.at(out, chunk_id, np.repeat(rows, len(fd)))
    return out


def _chunk_rank(group_of: np.ndarray) -> np.ndarray:
    """Rank of every chunk id in (group, chunkId) order: sorting rows by it orders them by
    group then chunk, and a 16-bit rank sorts by radix (10x a 64-bit key's merge sort)."""
    order = np.lexsort((np.arange(len(group_of)), group_of))
    rank = np.empty(len(group_of), np.uint16 if len(group_of) <= 1 << 16 else np.int64)
    rank[order] = np.arange(len(group_of))
    return rank


def map_parts(spec: PrepareSpec, parts, out_dir, groups: int, threads: int = 1) -> dict:
    """Locate catalog parts, (Object, Source) file pairs, ``threads`` at a time (a map
    job holds that many parts at once; numpy and pyarrow release the GIL) and write each
    one's staging files into ``out_dir/<Object file's stem>``; return the summed counts."""
    names = [Path(o).stem for o, _ in parts]
    if len(set(names)) != len(names):
        raise ValueError(f"catalog parts with the same file name {names}: staging dirs would collide")
    chunker, group_of = Chunker.of(spec.partition.geometry), group_table(spec, groups)
    rank, bound = _chunk_rank(group_of), spec.partition.max_rows_per_group

    def one(k):
        (o, s), name = parts[k], names[k]
        return _map_one(chunker, group_of, rank, o, s, Path(out_dir) / name, bound)

    total = {"objects": 0, "sources": 0, "overlap_rows": 0}
    with ThreadPoolExecutor(max(1, threads)) as pool:
        for counts in pool.map(one, range(len(parts))):
            for k, v in counts.items():
                total[k] += v
    return total


def map_part(spec: PrepareSpec, object_path, source_path, out_dir, groups: int) -> dict:
    """Locate one catalog part and write its staging files into ``out_dir``."""
    group_of = group_table(spec, groups)
    return _map_one(Chunker.of(spec.partition.geometry), group_of, _chunk_rank(group_of), object_path,
                    source_path, Path(out_dir), spec.partition.max_rows_per_group)


def _map_one(chunker: Chunker, group_of, rank, object_path, source_path, out: Path,
             max_rows=None) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    obj = read_parquet(object_path, columns=["objectId", "ra_PS", "decl_PS"])
    ra, dec = numpy(obj["ra_PS"]), numpy(obj["decl_PS"])
    chunk_id, sub_id, ov_rows, ov_chunk, ov_sub = chunker.locate_with_overlap(
        ra, dec, where=str(object_path))
    oid = numpy(obj["objectId"])
    staging.write_table(table({"objectId": oid, "chunkId": chunk_id, "subChunkId": sub_id}),
                        out / staging.INDEX)

    # Sources take their Object's location (child table, no overlap).
    s_oid = numpy(read_parquet(source_path, columns=["objectId"])["objectId"])
    pos = np.zeros(len(s_oid), np.int64)
    orphan = np.ones(len(s_oid), bool)
    if len(oid) and len(s_oid):
        sorted_idx = np.argsort(oid)
        pos = sorted_idx[np.minimum(np.searchsorted(oid[sorted_idx], s_oid), len(oid) - 1)]
        orphan = oid[pos] != s_oid
    if orphan.any():
        i = int(np.flatnonzero(orphan)[0])
        raise ValueError(f"{source_path}: row {i}: Source objectId {s_oid[i]} has no Object "
                         f"in {object_path}; regenerate the catalog part")

    n_obj, n_src = len(oid), len(s_oid)
    obj_group = group_of[chunk_id]
    for name, loc in (("Object", (np.arange(n_obj), chunk_id, sub_id, obj_group)),
                      ("ObjectOverlap", (ov_rows, ov_chunk, ov_sub, group_of[ov_chunk])),
                      ("Source", (np.arange(n_src), chunk_id[pos], sub_id[pos], obj_group[pos]))):
        staging.write_locations(*loc, rank, staging.path(out, name), max_rows if name == "Object" else None)
    return {"objects": n_obj, "sources": n_src, "overlap_rows": len(ov_rows)}


def _take_rows(path, rows: np.ndarray, columns=None) -> pa.Table:
    """Rows ``rows`` (ascending within runs, any order overall) of a catalog file,
    decoding only the row groups that hold them (and only ``columns``, default all)."""
    f = open_parquet(path)
    sizes = [f.metadata.row_group(i).num_rows for i in range(f.num_row_groups)]
    starts = np.cumsum([0] + sizes)
    rg = np.searchsorted(starts, rows, side="right") - 1
    needed = np.flatnonzero(np.bincount(rg, minlength=len(sizes)))
    with parquet_errors(path):
        table = f.read_row_groups(needed.tolist(), columns=columns)
    # Position of each wanted row in the concatenation of the needed row groups.
    base = np.zeros(len(sizes), np.int64)
    base[needed] = np.cumsum([0] + [sizes[i] for i in needed[:-1]])
    return take(table, rows - starts[rg] + base[rg])


@dataclass(frozen=True)
class Prepared:
    """What a reduce takes ready-made from the catalog stage instead of making it: ``texts``,
    each part's (Object, Source) varying text files (a None formatted here), ``shared_texts``,
    the patch's (Object, Source) text files (rowtext.py), ``patches``, the patch's (Object,
    Source) Parquet files."""
    texts: list | None = None
    shared_texts: tuple | None = None
    patches: tuple | None = None


@dataclass(frozen=True)
class Bound:
    """Rows a reduce holds at once (None: the ``partition.max_rows_per_group`` the map
    recorded; none recorded, unbounded) and the rows of a Parquet row group."""
    max_rows: int | None = None
    row_group: int = ROW_GROUP


def reduce_group(staging_dirs, catalog_parts, group: int, chunks_dir, manifest_path,
                 formats=FORMATS, prepared: Prepared = Prepared(), bound: Bound = Bound()) -> dict:
    """Write every chunk file of one chunk group, in ``formats`` (tsv, parquet), and a
    manifest of them. ``catalog_parts`` are the (Object, Source) Parquet files each staging
    dir was mapped from, in the same order. Given ``prepared.shared_texts``, TSV lines are
    glued from the text the catalog stage made: the shared columns' from those, the varying
    columns' from ``prepared.texts`` (catalog.PART_TEXT); without them every value is
    formatted here. Given ``prepared.patches``, a part's shared columns are taken from the
    patch and only its varying columns decoded (``SharedRows``). A chunk's Parquet file is
    written once the last part holding its rows is cut.

    Rows held are bounded by ``bound.max_rows``: the group's chunks are taken in passes of
    at most that many rows, a chunk larger than that in a pass of its own per table, cut in
    slices while its Parquet file is written a row group (``bound.row_group`` rows) at a
    time (``chunkfiles.passes``). The files are the same bytes whatever the bound."""
    texts, shared_texts, patches = prepared.texts, prepared.shared_texts, prepared.patches
    max_rows, row_group = bound.max_rows, bound.row_group
    if len(catalog_parts) != len(staging_dirs):
        raise ValueError(f"{len(staging_dirs)} staging dirs but {len(catalog_parts)} catalog "
                         f"parts: give the parts in the order they were mapped")
    if texts is not None and len(texts) != len(catalog_parts):
        raise ValueError(f"{len(texts)} text files for {len(catalog_parts)} catalog parts")
    tsv = "tsv" in formats
    files = ChunkFiles(chunks_dir, formats, row_group)
    complete, counts = _complete_after(staging_dirs, group)
    max_rows = staging.recorded_bound(staging_dirs) if max_rows is None else int(max_rows)
    runs = passes(counts, max_rows)
    shared_rows = [SharedRows(p, kind) for p, kind in zip(patches, ("Object", "Source"))] \
        if patches else [None, None]
    peak = 0
    try:
        for first, last, step in runs:
            # A chunk over the bound: one table at a time, each slice leaving room for the
            # row group being filled.
            big = "parquet" in formats and step < counts.get(first, 0)
            for only in [(name,) for name in TABLES] if big else [TABLES]:
                size = max(1, step - (row_group - 1)) if big else step
                for k, (d, parquets) in enumerate(zip(staging_dirs, catalog_parts)):
                    locs = {name: in_range(staging.group_rows(staging.path(d, name), group), first, last)
                            for name in only}
                    # Object and its overlap come from the same file: decode its row groups once.
                    for i, names in ((0, ("Object", "ObjectOverlap")), (1, ("Source",))):
                        present = [(name, locs[name]) for name in names if locs.get(name) is not None]
                        if not present:
                            continue
                        meta = open_parquet(parquets[i])
                        text = PartText(shared_texts[i], meta.metadata.num_rows, texts[k][i] if texts
                                        else None, copy_rows(meta)) if tsv and shared_texts else None
                        for piece in slices(present, size):
                            peak = max(peak, files.held + sum(loc.num_rows for _, loc in piece))
                            _cut(piece, text, _load(parquets[i], piece, text, formats, shared_rows[i]),
                                 files)
                    files.complete([key for key in complete.get(k, ())
                                    if first <= key[1] <= last and key[0] in only])
        object_chunks = files.chunks("Object")
        # Every chunk with Objects gets an overlap file, empty when nothing is near.
        for cid in object_chunks - files.chunks("ObjectOverlap"):
            files.add("ObjectOverlap", cid, 0, None)
        empty = pa.Table.from_batches([], schema=_located_schema(catalog_parts[0][0])) \
            if catalog_parts else None
        manifest = files.finish(empty)
    finally:
        files.discard()
    Path(manifest_path).parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(manifest_path) as tmp:
        with open(tmp, "w") as f:
            f.write("chunkId\ttable\trows\tparquet_bytes\ttsv_bytes\n")
            for r in manifest:
                f.write(f"{r['chunkId']}\t{r['table']}\t{r['rows']}\t{r['parquet_bytes']}\t"
                        f"{r['tsv_bytes']}\n")
    return {"chunks": len(object_chunks), "files": len(formats) * len(manifest),
            "rows": sum(r["rows"] for r in manifest), "max_rows": max_rows,
            "passes": len(runs), "peak_rows_held": peak,
            "largest_chunk_rows": max(counts.values(), default=0)}


def _complete_after(staging_dirs, group: int) -> tuple[dict[int, list], dict[int, int]]:
    """The (table, chunk) keys whose rows end in each part (after cutting that part, their
    Parquet files can be written and their pieces let go), and the rows of each chunk (all
    tables)."""
    last, counts = {}, {}
    for k, d in enumerate(staging_dirs):
        for name in TABLES:
            loc = staging.group_rows(staging.path(d, name), group, ["chunkId"])
            if loc is not None:
                ids, n = np.unique(numpy(loc["chunkId"]), return_counts=True)
                last.update({(name, c): k for c in ids.tolist()})
                for c, m in zip(ids.tolist(), n.tolist()):
                    counts[c] = counts.get(c, 0) + m
    out: dict[int, list] = {}
    for key, k in last.items():
        out.setdefault(k, []).append(key)
    return out, counts


# Rows whose lines are made at once: bounds the text's memory. 64k rather than 256k: a
# reduce's peak RSS 0.55 against 0.78 GB, 0.92x its wall (fresh pages cost on this VM).
TEXT_BATCH = 1 << 16
# Where the varying columns are formatted here, at least twice the patch's rows: each such
# batch copies the patch's text into its gather (Sources: a 200k-row patch; 64k-row batches
# made the bench partition 1.07x user), up to 16x TEXT_BATCH.
PATCH_ROWS_PER_BATCH = 2


def _load(path, present, text: PartText | None, formats, shared: SharedRows | None):
    """One catalog file's rows of the group (all tables ``present`` at once): their row
    numbers, locations and columns (decoded, or the shared ones from ``shared``)."""
    rows = np.concatenate([numpy(loc["row"]) for _, loc in present])
    chunk_id = np.concatenate([numpy(loc["chunkId"]) for _, loc in present])
    sub_id = np.concatenate([numpy(loc["subChunkId"]) for _, loc in present])
    # Decoded: every column for Parquet or formatting, only the varying ones when the
    # text of the others is the patch's; none when all the text was made before.
    columns = None if "parquet" in formats or text is None else \
        open_parquet(path).schema_arrow.names[:text.varying] if text.batches is None else []
    if columns is None and shared is not None:
        taken = shared.rows(path, rows)
    else:
        taken = _take_rows(path, rows, columns) if columns != [] else None
    return rows, chunk_id, sub_id, taken


class SharedRows:
    """A catalog part's rows with their shared columns taken from the patch (a copy's row
    k holds patch row k in every column but the leading ``VARYING``, see
    catalog.duplicate and rowtext.patch_rows): only the varying columns are decoded from the part, 22% of an
    Object row's bytes. Decoding every column was a third of a reduce's CPU."""

    def __init__(self, patch_path, kind: str):
        self.path, self.varying = patch_path, VARYING[kind]
        self.patch = read_parquet(patch_path)

    def rows(self, part_path, rows: np.ndarray) -> pa.Table:
        f = open_parquet(part_path)
        n, sizes = len(self.patch), copy_rows(f)
        whole = sizes is None and n and f.metadata.num_rows % n == 0
        thinned = sizes is not None and sum(sizes) == f.metadata.num_rows and max(sizes, default=0) <= n
        if f.schema_arrow != self.patch.schema or n == 0 or not (whole or thinned):
            raise ValueError(f"{part_path} ({f.metadata.num_rows} rows) is not made of "
                             f"copies of the patch {self.path} ({n} rows): re-run the "
                             f"catalog stage")
        names = self.patch.schema.names
        own = _take_rows(part_path, rows, names[:self.varying])
        shared = take(self.patch.select(names[self.varying:]), patch_rows(rows, n, sizes), checked=False)
        return pa.Table.from_arrays(own.columns + shared.columns, schema=self.patch.schema)


def _cut(present, text: PartText | None, loaded, files: ChunkFiles):
    """Make the lines of one catalog file's rows of the group (``_load``), and hand them
    and the rows to ``files`` per chunk."""
    rows, chunk_id, sub_id, taken = loaded
    parquet, tsv = "parquet" in files.formats, "tsv" in files.formats
    at = 0
    for name, loc in present:
        n = loc.num_rows
        if parquet:
            t = taken.slice(at, n)
            for col in LOCATION:
                t = t.append_column(pa.field(col, pa.int32(), nullable=False), loc[col])
        for a, b in _runs(chunk_id[at:at + n]):
            files.add(name, int(chunk_id[at + a]), b - a, t.slice(a, b - a) if parquet else None)
        at += n
    if not tsv:
        return
    # Lines in batches, appended in row order, so a chunk's text stays in part order. With
    # the part's varying text, its pieces are pooled once for all batches.
    glue = text.glue(rows, chunk_id, sub_id) if text and text.batches is not None else None
    batch = min(max(TEXT_BATCH, PATCH_ROWS_PER_BATCH * len(text.shared)), 16 * TEXT_BATCH) \
        if text and not glue else TEXT_BATCH
    for s in range(0, len(rows), batch):
        e = min(s + batch, len(rows))
        part = taken.slice(s, e - s) if taken is not None else None
        lines = glue.lines(s, e) if glue else \
            text.lines(rows[s:e], chunk_id[s:e], sub_id[s:e], part) if text else \
            formatted(part, chunk_id[s:e], sub_id[s:e])
        at, pieces = 0, []
        for name, loc in present:  # the batch's rows of each table
            lo, hi = max(s, at), min(e, at + loc.num_rows)
            if lo < hi:
                bounds = [(lo - s + a, lo - s + b) for a, b in _runs(chunk_id[lo:hi])]
                pieces += [(name, int(chunk_id[s + a]), blob)
                           for (a, b), blob in zip(bounds, lines.slices(bounds))]
            at += loc.num_rows
        files.add_text(pieces)
        del lines, pieces  # the batch's buffers are reused by the next


def _runs(ids: np.ndarray) -> list[tuple[int, int]]:
    """[a, b) of each run of equal ids (rows come in chunk order)."""
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    return list(zip(starts.tolist(), np.r_[starts[1:], len(ids)].tolist()))


def _located_schema(objects_path) -> pa.Schema:
    schema = open_parquet(objects_path).schema_arrow
    for col in LOCATION:
        schema = schema.append(pa.field(col, pa.int32(), nullable=False))
    return schema


def write_index_input(staging_dirs, n_files: int, out_numeric, out_char) -> dict:
    """Split (key, chunkId, subChunkId) in generation order into ``n_files`` TSV files,
    once with the numeric objectId key and once zero-padded to CHAR(28)."""
    counts = [staging.rows(Path(d) / staging.INDEX) for d in staging_dirs]
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
        pending.append(staging.read_table(Path(d) / staging.INDEX))
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


def _text_bytes(text: pa.Array) -> int:
    return int(np.frombuffer(text.buffers()[1], np.int64, len(text) + 1)[-1])


def _write_index_file(t: pa.Table, k: int, out_numeric: Path, out_char: Path, manifests: dict):
    name = f"part-{k:05d}.tsv"
    key = column_text(t["objectId"])
    location = [column_text(t["chunkId"]), column_text(t["subChunkId"])]
    padded = lpad(key, KEY_WIDTH, "0")
    for folder, first in ((out_numeric, key), (out_char, padded)):
        lines = join([join([first, *location]), repeat("\n", t.num_rows)], "")
        with atomic_path(folder / name) as tmp, open(tmp, "wb", buffering=0) as f:
            write_all(f.fileno(), lines.buffers()[2][:_text_bytes(lines)] if len(lines) else b"")
    for folder in (out_numeric, out_char):
        manifests[folder][name] = {"rows": t.num_rows, "bytes": (folder / name).stat().st_size}
