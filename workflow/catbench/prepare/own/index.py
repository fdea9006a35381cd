"""The index input from the user's own catalog (``index.source: file``): objectId, ra and
dec read from their Parquet/CSV files (``index.file``), chunkId and subChunkId from the
same chunker as the generator, written as the same files and bytes (rowtext.py IndexText,
index_order.write_split) in the files' order (``index.order: generation``) or chunk order.

One pass over the files, in batches of ``index.file.batch_rows`` rows (Arrow's Parquet
and streaming CSV readers): each batch is checked (NULL, non-numeric, non-finite or
out-of-range values, ids a BIGINT cannot hold), located, and appended with its row
number to an on-disk DuckDB table (``index.sort_memory``, spilling beside the output).
Duplicate ids, within a file or across files, are found there by DuckDB's external
aggregation. Only when every row passed is anything written: the input files, then the
manifests, then ``sources.json`` (each file's path, bytes, mtime, CRC-32 and rows). A
failure names the file, the column and the row, and leaves no output folder behind.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from ...core.index.input import write_manifest
from ...core.infra.files import atomic_path
from ...core.infra.sources import (
    CSV_ROW_BYTES, ROLES, Source, SourceError, check_columns, checksum, comment_lines, csv_line)
from ..arrays import numpy
from ..index_order import ORDER_BY, ORDERS, write_split
from ..chunker import Chunker
from ..index_only import WRITE_ROWS, bounds
from ..spec import PrepareSpec

log = logging.getLogger(__name__)
INT64_MAX = 2**63 - 1
PROGRESS_S = 5.0


@dataclass
class ReadSetup:
    """What ``read_index`` needs: the files and their column map (role -> name), the
    chunker, the batch size, the input files to write, the order, DuckDB's memory and threads."""

    sources: list[Source]
    columns: dict[str, str]
    chunker: Chunker
    batch_rows: int
    n_files: int
    order: str = "generation"
    memory: str = "1GB"
    threads: int = 1


def setup_from(spec: PrepareSpec, srcs: list[Source], threads: int = 1) -> ReadSetup:
    ix = spec.index
    return ReadSetup(srcs, ix.file.roles(), Chunker.of(spec.partition.geometry), ix.file.batch_rows,
                     spec.partition.index_files, ix.order, ix.sort_memory, threads)


# ---- reading and checking ----------------------------------------------------------------

def batches(src: Source, names: list[str], batch_rows: int):
    """Record batches of the columns ``names``, in file order, at most ``batch_rows`` rows
    each (a CSV's by bytes: about that many rows); a CSV's values come as text, checked
    and converted by ``checked``, so a bad value is found with its row."""
    if src.format == "parquet":
        # Arrow decodes the columns on its threads; the batches still come in file order
        yield from pq.ParquetFile(src.path).iter_batches(batch_size=batch_rows, columns=names, use_threads=True)
        return
    opts = pcsv.ReadOptions(block_size=min(1 << 30, max(1 << 16, batch_rows * CSV_ROW_BYTES)),  # Arrow's limit: 2 GB
                            skip_rows=comment_lines(src))   # an ECSV's '#' header
    conv = pcsv.ConvertOptions(include_columns=names, column_types={n: pa.string() for n in names},
                               strings_can_be_null=True)
    try:
        reader = pcsv.open_csv(str(src.path), read_options=opts,
                               parse_options=pcsv.ParseOptions(delimiter=src.delimiter), convert_options=conv)
        yield from reader
    except (OSError, pa.ArrowException) as exc:   # a malformed line (Arrow names it), a cut-short .gz
        raise SourceError(f"{src.path}: not readable as {src.format.upper()} ({exc})") from None


@dataclass
class Place:
    """Where a batch is: its file, first row (1-based) and the column map."""

    src: Source
    first: int
    columns: dict[str, str]
    key: str = "index.file"   # the config section naming the files (catalog.patch.file)

    def at(self, i: int, role: str) -> str:
        row = self.first + int(i)
        line = f" (line {csv_line(self.src, row)})" if self.src.format != "parquet" else ""
        return f"{self.src.path}: row {row}{line}, column {self.columns[role]!r} ({self.key}.columns.{role})"


def _first(mask) -> int:
    return int(np.flatnonzero(np.asarray(mask))[0])


def _text_problem(values: list, parse) -> tuple[int, str] | None:
    """The first text value ``parse`` refuses, with its reason (only run once Arrow's cast failed)."""
    for i, s in enumerate(values):
        why = parse(s)
        if why:
            return i, why
    return None


def _int_problem(s: str) -> str:
    if not re.fullmatch(r"-?[0-9]+", s):
        return f"value {s[:40]!r} is not a decimal integer"
    return f"value {s} is over BIGINT's maximum 2^63-1" if int(s) > INT64_MAX else (
        f"value {s} is under BIGINT's minimum" if int(s) < -INT64_MAX - 1 else "")


def _float_problem(s: str) -> str:
    try:
        float(s)
    except ValueError:
        return f"value {s[:40]!r} is not a number"
    return ""


def _as(arr, to, place: Place, role: str, problem):
    """``arr`` cast to ``to``; NULLs and text that is no such number refused naming the row."""
    if arr.null_count:
        text = place.src.format != "parquet"   # batches(): Arrow reads "", NA, NULL, NaN... as NULL; patch.py: ""
        markers = " or a marker such as NA, NULL or NaN" if place.key == "index.file" else ""
        raise SourceError(f"{place.at(_first(arr.is_null()), role)}: NULL"
                          + (f" (an empty value{markers})" if text else ""))
    over = pc.greater(arr, pa.scalar(INT64_MAX, pa.uint64())) if pa.types.is_uint64(arr.type) else None
    if over is not None and pc.any(over).as_py():
        i = _first(over)
        raise SourceError(f"{place.at(i, role)}: value {arr[i].as_py()} is over BIGINT's maximum 2^63-1")
    if pa.types.is_string(arr.type) and pa.types.is_integer(to):   # Arrow's cast also takes 0x10 as 16
        bad = pc.invert(pc.match_substring_regex(arr, r"^-?[0-9]+$"))
        if pc.any(bad).as_py():
            i = _first(bad)
            raise SourceError(f"{place.at(i, role)}: {problem(arr[i].as_py())}")
    try:
        return numpy(pc.cast(arr, to))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        found = _text_problem(arr.to_pylist(), problem) if pa.types.is_string(arr.type) else None
        if found is None:
            raise SourceError(f"{place.at(0, role)}: cannot be read as {to} (type {arr.type})") from None
        raise SourceError(f"{place.at(found[0], role)}: {found[1]}") from None


def checked(batch, place: Place):
    """(ids int64, ra, dec) of a batch, every value checked; ra = 360 wraps to 0."""
    col = {role: batch.column(batch.schema.get_field_index(place.columns[role])) for role in ROLES}
    ids = _as(col["objectId"], pa.int64(), place, "objectId", _int_problem)
    if len(ids) and ids.min() < 0:
        raise SourceError(f"{place.at(_first(ids < 0), 'objectId')}: value {ids[ids < 0][0]} is negative; "
                          f"the index keys are ids >= 0")
    out = [ids]
    for role, lo, hi in (("ra", 0.0, 360.0), ("dec", -90.0, 90.0)):
        v = _as(col[role], pa.float64(), place, role, _float_problem)
        bad = ~np.isfinite(v)
        if bad.any():
            raise SourceError(f"{place.at(_first(bad), role)}: value {v[bad][0]} is not finite")
        bad = (v < lo) | (v > hi)
        if bad.any():
            raise SourceError(f"{place.at(_first(bad), role)}: {role} {v[bad][0]} is outside {lo:g}..{hi:g} degrees")
        out.append(v)
    ra = out[1]
    out[1] = np.where(ra == 360.0, 0.0, ra)
    return out


# ---- the pass over the files -----------------------------------------------------------------

def _read_file(con, src: Source, setup: ReadSetup, first_row: int, progress) -> dict:
    """Every row of one file into table ``rows`` (key, chunk, sub-chunk, row number)."""
    before = src.path.stat()
    names = list(dict.fromkeys(setup.columns.values()))
    row = 0
    for batch in batches(src, names, setup.batch_rows):
        if not batch.num_rows:
            continue
        ids, ra, dec = checked(batch, Place(src, row + 1, setup.columns))
        chunk, sub = setup.chunker.locate_in(ra, setup.chunker.sub_stripe(dec))
        n = len(ids)
        con.register("batch", pa.table({"k": ids, "c": chunk, "s": sub,
                                        "o": np.arange(first_row + row, first_row + row + n, dtype=np.int64)}))
        con.execute("INSERT INTO rows SELECT k, c, s, o FROM batch")
        con.unregister("batch")
        row += n
        progress(n)
    return file_record(src, before, row)


def file_record(src: Source, before, rows: int) -> dict:
    """What a read file was (path, format, bytes, mtime, ctime, CRC-32, rows: sources.json and the
    provenance), refused when it changed since ``before`` (its stat when the read began)."""
    after = src.path.stat()
    if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns):
        raise SourceError(f"{src.path}: changed while it was read; read it again once it is complete")
    return {"path": str(src.path), "format": src.format, "bytes": after.st_size, "mtime_ns": after.st_mtime_ns,
            "ctime_ns": after.st_ctime_ns, "crc32": checksum(src.path), "rows": rows}


class _Progress:
    """A log line every PROGRESS_S seconds: files, rows, rows/s."""

    def __init__(self, files: int):
        self.files, self.file, self.rows = files, 0, 0
        self.t0 = self.last = time.monotonic()

    def __call__(self, n: int):
        self.rows += n
        now = time.monotonic()
        if now - self.last >= PROGRESS_S:
            self.last = now
            log.info("reading the files: file %d/%d, %s rows, %.0f rows/s", self.file + 1, self.files,
                     f"{self.rows:,}", self.rows / (now - self.t0))


def _duplicate(con, files: list[dict], column: str) -> str | None:
    """The first repeated id (by its first row) in words, naming both rows; None if none."""
    hit = con.execute("WITH d AS (SELECT k, min(o) AS m FROM rows GROUP BY k HAVING count(*) > 1) "
                      "SELECT (SELECT count(*) FROM d), k FROM d ORDER BY m LIMIT 1").fetchone()
    if hit is None:
        return None
    n, key = hit
    rows = [r[0] for r in con.execute("SELECT o FROM rows WHERE k = ? ORDER BY o LIMIT 2", [key]).fetchall()]
    return duplicate_message(key, rows, n, files, column)


def duplicate_message(key: int, rows: list[int], n: int, files: list[dict], column: str,
                      section: str = "index.file") -> str:
    """A repeated id in words: its first two rows (0-based over all ``files``, each a
    record with its path, format and rows), and how many ids repeat."""
    starts = np.cumsum([0] + [f["rows"] for f in files])

    def where(o: int) -> str:
        i = int(np.searchsorted(starts, o, side="right")) - 1
        row = o - int(starts[i]) + 1
        line = f" (line {csv_line(Source(Path(files[i]['path']), files[i]['format']), row)})" \
            if files[i]["format"] != "parquet" else ""
        return f"{files[i]['path']} row {row}{line}"
    return (f"duplicate objectId {key} in column {column!r} ({section}.columns.objectId): {where(rows[0])} and "
            f"{where(rows[1])}; {n} id(s) repeated in all (ids must be unique over every file of {section}.paths)")


def read_index(setup: ReadSetup, out_numeric, out_char, sources_out) -> dict:
    """Read, check and locate every row of ``setup.sources``; then write the index input
    (both key forms) and ``sources_out``. Nothing is written unless every row passed."""
    import duckdb
    if setup.order not in ORDERS:
        raise ValueError(f"config key 'index.order': {setup.order!r} is not one of {', '.join(ORDERS)}")
    for src in setup.sources:   # every file's columns before any row is read
        check_columns(src, setup.columns)
    out_numeric, out_char = Path(out_numeric), Path(out_char)
    work = out_numeric.parent / f".read-{out_numeric.name}"
    shutil.rmtree(work, ignore_errors=True)
    (work / "spill").mkdir(parents=True)
    t0 = time.monotonic()
    con = duckdb.connect(str(work / "rows.duckdb"), config={
        "memory_limit": setup.memory, "temp_directory": str(work / "spill"), "threads": setup.threads,
        "preserve_insertion_order": True})   # a plain scan then returns the files' order
    try:
        con.execute("CREATE TABLE rows (k BIGINT, c INTEGER, s INTEGER, o BIGINT)")
        files, total, progress = [], 0, _Progress(len(setup.sources))
        for i, src in enumerate(setup.sources):
            progress.file = i
            files.append(_read_file(con, src, setup, total, progress))
            total += files[-1]["rows"]
        read_s = time.monotonic() - t0
        log.info("read %d files, %s rows in %.1f s (%.0f rows/s); checking the ids are unique", len(files),
                 f"{total:,}", read_s, total / max(read_s, 1e-9))
        if total == 0:
            raise SourceError(f"config key 'index.file.paths': its {len(files)} file(s) hold no rows (the first: "
                              f"{setup.sources[0].path})")
        dup = _duplicate(con, files, setup.columns["objectId"])
        if dup:
            raise SourceError(dup)
        order = f" ORDER BY {ORDER_BY[setup.order]}" if setup.order in ORDER_BY else ""
        reader = con.sql(f"SELECT k, c, s FROM rows{order}").to_arrow_reader(WRITE_ROWS)
        done = write_split(reader, bounds(total, setup.n_files), out_numeric, out_char)
    except duckdb.OutOfMemoryException as exc:
        con.close()
        _remove(out_numeric, out_char, work)
        raise ValueError(f"config key 'index.sort_memory': {setup.memory} is too little for DuckDB's duplicate check "
                         f"and sort on {setup.threads} thread(s) ({str(exc).splitlines()[0]}); raise it (it spills "
                         f"beyond it: 64MB took 1.5 x 10^7 rows)") from None
    except BaseException:
        con.close()
        _remove(out_numeric, out_char, work)
        raise
    con.close()
    shutil.rmtree(work, ignore_errors=True)
    write_manifest(out_numeric, {n: {"rows": r, "bytes": b} for n, r, b, _ in done}, total)
    write_manifest(out_char, {n: {"rows": r, "bytes": b} for n, r, _, b in done}, total)
    doc = {"rows": total, "columns": setup.columns, "order": setup.order, "files": files}
    with atomic_path(sources_out) as tmp:
        Path(tmp).write_text(json.dumps(doc, indent=1) + "\n")
    seconds = time.monotonic() - t0
    return {"files": len(done), "source_files": len(files), "rows": total, "order": setup.order,
            "read_seconds": round(read_s, 3), "read_rows_per_s": total / max(read_s, 1e-9),
            "seconds": seconds, "rows_per_s": total / seconds}


def _remove(*folders):
    """After a failure: nothing that looks like an input folder stays, nor the work folder."""
    for d in folders:
        shutil.rmtree(d, ignore_errors=True)
