"""The partition map's staging files, per catalog part (prepare/partition.py): for each
table, (row, chunkId, subChunkId) sorted by (group, chunkId, row), one Arrow record batch
per reduce group; and the part's (objectId, chunkId, subChunkId) in generation order for
the index input. Arrow IPC, uncompressed and memory-mapped when read: 16 bytes a row
against Parquet's ~2, but written and read as they are (encoding them as Parquet was a
quarter of a map job's CPU). They are temporary: the rules delete them after the reduces
and the index input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..core.infra.files import atomic_path
from .arrays import table

MAX_ROWS_KEY = b"catbench.max_rows_per_group"  # the reduce's bound, from the map's staging
GROUPS_KEY = b"catbench.groups"  # the group of each record batch of a staging file
INDEX = "index.arrow"   # a part's (objectId, chunkId, subChunkId), generation order


def write_locations(rows, chunk_id, sub_id, group, rank, path, max_rows=None):
    """Staging file of one table: (row, chunkId, subChunkId) sorted by (group, chunkId,
    row), one record batch per group, so a reduce job maps only its own; with the
    reduce's bound ``max_rows`` (``partition.max_rows_per_group``) in its metadata."""
    # One stable sort on (group, chunk): rows come in generation order, in runs per chunk.
    order = np.argsort(rank[chunk_id], kind="stable")
    g = group[order]
    t = table({"row": rows[order].astype(np.int64), "chunkId": chunk_id[order].astype(np.int32),
               "subChunkId": sub_id[order].astype(np.int32)})
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]]) if len(g) else np.zeros(0, np.int64)
    meta = {GROUPS_KEY: json.dumps(g[starts].tolist())}
    if max_rows is not None:
        meta[MAX_ROWS_KEY] = str(int(max_rows))
    schema = t.schema.with_metadata(meta)
    with atomic_path(path) as tmp, pa.ipc.new_file(str(tmp), schema) as w:
        for a, b in zip(starts.tolist(), np.r_[starts[1:], len(g)].tolist()):
            w.write_batch(t.slice(a, b - a).combine_chunks().to_batches()[0])


def open_staging(path, grouped: bool = True) -> tuple[pa.ipc.RecordBatchFileReader, list[int] | None]:
    """A staging file (memory-mapped) and the group of each of its record batches."""
    try:
        reader = pa.ipc.open_file(pa.memory_map(str(path)))
        return reader, json.loads(reader.schema.metadata[GROUPS_KEY]) if grouped else None
    except (pa.ArrowException, OSError, KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{path}: not a readable staging file ({e!r}); re-run the partition "
                         f"map job that writes it") from e


def group_rows(path, group: int, columns=None) -> pa.Table | None:
    """The rows of ``group`` in one staging file (a record batch per group)."""
    reader, groups = open_staging(path)
    if group not in groups:
        return None
    t = pa.Table.from_batches([reader.get_batch(groups.index(group))])
    return t.select(columns) if columns else t


def recorded_bound(staging_dirs) -> int | None:
    """``partition.max_rows_per_group`` as the map recorded it (None: not recorded)."""
    if not staging_dirs:
        return None
    meta = open_staging(Path(staging_dirs[0]) / "Object.arrow")[0].schema.metadata or {}
    return int(meta[MAX_ROWS_KEY]) if MAX_ROWS_KEY in meta else None


def write_table(t: pa.Table, path) -> None:
    with atomic_path(path) as tmp, pa.ipc.new_file(str(tmp), t.schema) as w:
        w.write_table(t)


def read_table(path) -> pa.Table:
    """A staging file whole (memory-mapped, no copy)."""
    return open_staging(path, grouped=False)[0].read_all()
