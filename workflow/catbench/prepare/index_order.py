"""The order in which the index input's rows arrive at the load (``index.order``).

``generation``: as the generator makes them, copy after copy (what the files hold first).
``chunk``: as Qserv's ingest presents them: its director index is filled one contribution
(one chunk's rows) after another, chunks in chunkId order; within a chunk the rows keep
their generation order, as in the chunk files the partition stage writes.
``chunk-sorted``: chunks in chunkId order, each chunk's rows in key order (a chunk table
dumped in its primary key's order): with spatial ids every file ascends and each starts
where the last ended; with random ids each file ascends across the whole key space.
The rows are then split into the same number of files, evenly, as before.

The chunk order is made from the generation-order files, whichever path wrote them (so
both paths give the same bytes): each file is read once (Arrow's CSV reader), numbered,
appended to an on-disk DuckDB table, sorted by (chunkId, generation number) with DuckDB's
external sort under ``index.sort_memory`` (spilling beside the output), and written again
with the same formatter. Cost: one more read of the numeric files, a sort of 20 bytes a
row, and a second write of both forms; the generation-order files are removed after.
"""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv

from ..core.index.input import MANIFEST, list_input, write_manifest
from ..core.infra.files import atomic_path, write_all
from .arrays import arrow, numpy
from .index_only import WRITE_ROWS, bounds
from .rowtext import IndexText

# each order but generation: the rows' sort (c: chunkId, o: generation number, k: key)
ORDER_BY = {"chunk": "c, o", "chunk-sorted": "c, k"}
ORDERS = ("generation", *ORDER_BY)
_COLUMNS = {"k": pa.int64(), "c": pa.int32(), "s": pa.int32()}


def written_in_order(order: str, write, out_numeric, out_char, memory: str) -> dict:
    """``write(numeric_dir, char_dir)`` writes the input in generation order; with
    ``order`` chunk it writes into a work folder beside ``out_numeric`` and the rows are
    rearranged from there. Returns ``write``'s summary (and the rearrangement's)."""
    if order not in ORDERS:
        raise ValueError(f"config key 'index.order': {order!r} is not one of {', '.join(ORDERS)}")
    if order == "generation":
        return write(out_numeric, out_char)
    out_numeric = Path(out_numeric)
    work = out_numeric.parent / f".arrival-{out_numeric.name}"
    shutil.rmtree(work, ignore_errors=True)
    try:
        return _arranged(write, out_numeric, out_char, memory, work, order)
    except BaseException:     # part of the files, no manifest: nothing that could pass for the input
        for d in (out_numeric, out_char):
            shutil.rmtree(d, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _arranged(write, out_numeric, out_char, memory: str, work, order: str) -> dict:
    """The input written into ``work`` and arranged from there, the failures said as what to
    change: the memory key, or the full disk."""
    import duckdb
    full = f"out of space in {Path(work).parent} while sorting the index input into chunk order; " \
           "free space there (the sort needs about three times the input) or set index.order: generation"
    try:
        summary = write(work / out_numeric.name, work / Path(out_char).name)
        summary.update(arrange(work / out_numeric.name, out_numeric, out_char, memory, work, order))
        return summary
    except duckdb.OutOfMemoryException:
        raise ValueError(f"config key 'index.sort_memory': {memory} is too little for DuckDB's sort of the "
                         "index input into chunk order; give it more (e.g. 256MB)") from None
    except duckdb.IOException as e:
        if "space" not in str(e).lower():
            raise
        raise ValueError(full) from None
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        raise ValueError(full) from None


def _table(files: list[Path], con):
    """Every row of ``files`` (numeric keys) into table ``rows`` with its generation number."""
    con.execute("CREATE TABLE rows (k BIGINT, c INTEGER, s INTEGER, o BIGINT)")
    first = 0
    for f in files:
        t = pcsv.read_csv(f, read_options=pcsv.ReadOptions(column_names=list(_COLUMNS)),
                          parse_options=pcsv.ParseOptions(delimiter="\t"),
                          convert_options=pcsv.ConvertOptions(column_types=_COLUMNS))
        batch = t.append_column("o", arrow(np.arange(first, first + t.num_rows, dtype=np.int64)))
        con.register("batch", batch)
        con.execute("INSERT INTO rows SELECT k, c, s, o FROM batch")
        con.unregister("batch")
        first += t.num_rows
    return first


def arrange(src_numeric, out_numeric, out_char, memory: str, work, order: str = "chunk") -> dict:
    """The rows of ``src_numeric`` (generation order) in ``order``, split evenly into as many
    files as it has, in both key forms; the manifests last."""
    import duckdb
    files = list_input(src_numeric)
    work = Path(work)
    (work / "spill").mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(work / "arrival.duckdb"), config={
        "memory_limit": memory, "temp_directory": str(work / "spill"), "threads": 1,
        "preserve_insertion_order": True})
    try:
        total = _table(files, con)
        reader = con.sql(f"SELECT k, c, s FROM rows ORDER BY {ORDER_BY[order]}").to_arrow_reader(WRITE_ROWS)
        done = write_split(reader, bounds(total, len(files)), Path(out_numeric), Path(out_char))
    finally:
        con.close()
    write_manifest(out_numeric, {n: {"rows": r, "bytes": b} for n, r, b, _ in done}, total)
    write_manifest(out_char, {n: {"rows": r, "bytes": b} for n, r, _, b in done}, total)
    return {"order": order, "arranged_rows": total}


def write_split(reader, b: list[int], out_numeric: Path, out_char: Path) -> list[tuple]:
    """Batches of sorted rows cut at the file bounds ``b`` into part-<k>.tsv of both folders."""
    for d in (out_numeric, out_char):
        d.mkdir(parents=True, exist_ok=True)
        (d / MANIFEST).unlink(missing_ok=True)
    text, done = IndexText(WRITE_ROWS), []
    batches = (x for x in reader if x.num_rows)
    batch, at = None, 0
    for k in range(len(b) - 1):
        name = f"part-{k:05d}.tsv"
        with atomic_path(out_numeric / name) as num_tmp, atomic_path(out_char / name) as chr_tmp, \
                open(num_tmp, "wb", buffering=0) as num, open(chr_tmp, "wb", buffering=0) as char:
            left = b[k + 1] - b[k]
            while left:
                if batch is None or at == batch.num_rows:
                    batch, at = next(batches), 0
                n = min(left, batch.num_rows - at)
                cols = [numpy(batch.column(i).slice(at, n)) for i in range(3)]
                numeric, padded = text.lines(*cols)
                write_all(num.fileno(), numeric)
                write_all(char.fileno(), padded)
                at, left = at + n, left - n
        done.append((name, b[k + 1] - b[k], (out_numeric / name).stat().st_size,
                     (out_char / name).stat().st_size))
    return done
