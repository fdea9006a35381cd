"""The partition map's staging files, per catalog part (prepare/partition.py): for each
table, (row, chunkId, subChunkId, _group) sorted by (group, chunkId, row), one Parquet row
group per reduce group (a reduce reads only its own, found by the row groups' statistics);
and the part's (objectId, chunkId, subChunkId) in generation order for the index input.
Dictionary- and delta-encoded, about 2 bytes a row: Arrow IPC files (16 bytes a row,
memory-mapped by the reduces) made the partition 0.92x [0.87-1.10] in CPU and wall (n=6,
alternated, 4.76 M Objects on tmpfs), not told from noise, for 8x the temporary bytes, a
cost that grows with the catalog. They are temporary: the rules delete them after the
reduces and the index input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..core.infra.files import atomic_path, open_parquet, read_parquet, write_parquet
from .arrays import table

MAX_ROWS_KEY = b"catbench.max_rows_per_group"  # the reduce's bound, from the map's staging
INDEX = "index.parquet"   # a part's (objectId, chunkId, subChunkId), generation order


def path(folder, name: str) -> Path:
    """The staging file of table ``name`` (Object, ObjectOverlap, Source) in ``folder``."""
    return Path(folder) / f"{name}.parquet"


def write_locations(rows, chunk_id, sub_id, group, rank, where, max_rows=None):
    """Staging file of one table: (row, chunkId, subChunkId, _group) sorted by (group,
    chunkId, row), one row group per group, so a reduce job reads only its own; with the
    reduce's bound ``max_rows`` (``partition.max_rows_per_group``) in its metadata."""
    # One stable sort on (group, chunk): rows come in generation order, in runs per chunk.
    order = np.argsort(rank[chunk_id], kind="stable")
    g = group[order]
    t = table({"row": rows[order].astype(np.int64), "chunkId": chunk_id[order].astype(np.int32),
               "subChunkId": sub_id[order].astype(np.int32), "_group": g.astype(np.int32)})
    if max_rows is not None:
        t = t.replace_schema_metadata({MAX_ROWS_KEY: str(int(max_rows))})
    bounds = np.flatnonzero(np.diff(g)) + 1
    # Small: locations dictionary-encode, row numbers are runs (delta-encoded).
    with atomic_path(where) as tmp, pq.ParquetWriter(
            tmp, t.schema, compression="none", use_dictionary=list(t.schema.names[1:]),
            column_encoding={"row": "DELTA_BINARY_PACKED"}) as w:
        for a, b in zip(np.r_[0, bounds], np.r_[bounds, len(g)]):
            w.write_table(t.slice(a, b - a))


def group_rows(where, group: int, columns=None) -> pa.Table | None:
    """The rows of ``group`` in one staging file (row groups are pure per group)."""
    f = open_parquet(where)
    col = f.schema_arrow.get_field_index("_group")
    wanted = []
    for i in range(f.num_row_groups):
        st = f.metadata.row_group(i).column(col).statistics
        if st is not None and st.has_min_max and st.min == group:
            wanted.append(i)
    return f.read_row_groups(wanted, columns=columns) if wanted else None


def recorded_bound(staging_dirs) -> int | None:
    """``partition.max_rows_per_group`` as the map recorded it (None: not recorded)."""
    if not staging_dirs:
        return None
    meta = open_parquet(path(staging_dirs[0], "Object")).schema_arrow.metadata or {}
    return int(meta[MAX_ROWS_KEY]) if MAX_ROWS_KEY in meta else None


def write_table(t: pa.Table, where) -> None:
    # Read once: snappy was 6% of a map job and saved little on random ids.
    write_parquet(t, where, compression="none")


def rows(where) -> int:
    return open_parquet(where).metadata.num_rows


def read_table(where) -> pa.Table:
    return read_parquet(where)
