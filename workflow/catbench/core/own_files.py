"""The user's own catalog files (``index.source: file``, the ``index.file`` keys): which
files, in which order, their format, the mapped columns, their row counts and a
fingerprint — all cheap (a Parquet footer, a CSV header, a stat), so the workflow checks
them before any job starts and re-runs the read when a file changes. Reading the rows
is prepare/own_ids.py.
"""

from __future__ import annotations

import csv
import functools
import glob
import io
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv", ".txt": "tsv"}
COMPRESSED = (".gz", ".bz2", ".zst", ".lz4")
ROLES = ("objectId", "ra", "dec")
CSV_ROW_BYTES = 40   # a guess at a CSV row's size, for the plan only (Parquet counts exactly)
_BLOCK = 8 << 20


class SourceError(ValueError):
    """A user's file that cannot be the index study's input; the message names the file
    (and, where it applies, the column and the row)."""


@dataclass(frozen=True)
class Source:
    path: Path
    format: str   # parquet, csv, tsv

    @property
    def delimiter(self) -> str:
        return "\t" if self.format == "tsv" else ","


def file_format(path: Path) -> str:
    name = path.name.lower()
    for ext in COMPRESSED:   # pyarrow's CSV reader decompresses by the suffix
        if name.endswith(ext):
            name = name[: -len(ext)]
    fmt = FORMATS.get(Path(name).suffix)
    if fmt is None:
        raise SourceError(f"config key 'index.file.paths': {path}: unknown format (its name should end in "
                          f"{', '.join(FORMATS)}, CSV/TSV optionally compressed: {', '.join(COMPRESSED)})")
    if fmt == "parquet" and name != path.name.lower():
        raise SourceError(f"config key 'index.file.paths': {path}: a compressed Parquet file; Parquet "
                          f"compresses inside the file")
    return fmt


def sources(section: dict, base: Path | None = None) -> list[Source]:
    """The files of ``index.file.paths`` in input order: the entries as listed, a glob's
    matches sorted by name. A pattern that matches nothing, or a file named twice, is refused."""
    out, seen = [], {}
    for entry in section.get("paths") or []:
        pattern = os.path.expanduser(entry)
        if base is not None and not os.path.isabs(pattern):
            pattern = str(base / pattern)
        hits = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        hits = [h for h in hits if Path(h).is_file()]
        if not hits:
            raise SourceError(f"config key 'index.file.paths': {entry!r} names no file")
        for h in hits:
            p = Path(h).resolve()
            if p in seen:
                raise SourceError(f"config key 'index.file.paths': {p} is listed twice ({seen[p]!r} and "
                                  f"{entry!r}); its ids would be duplicates")
            seen[p] = entry
            out.append(Source(p, file_format(p)))
    if not out:
        raise SourceError("config key 'index.file.paths': no files; index.source: file reads the "
                          "objectId, ra and dec of these Parquet/CSV files")
    return out


def column_map(section: dict) -> dict[str, str]:
    """{role: the file's column name} for objectId, ra, dec."""
    return {role: section["columns"][role] for role in ROLES}


def csv_header(src: Source) -> list[str]:
    import pyarrow as pa
    with pa.input_stream(str(src.path), compression="detect") as f:
        first = f.read(1 << 16).decode("utf-8", "replace").splitlines()[:1]
    if not first:
        raise SourceError(f"{src.path}: empty; a CSV/TSV file needs a header line naming its columns")
    return next(csv.reader(io.StringIO(first[0]), delimiter=src.delimiter))


def check_columns(src: Source, columns: dict[str, str]):
    """Every mapped column is in the file, Parquet's with a usable type: an integer
    objectId, numeric ra/dec (a CSV's values are checked row by row as they are read)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    if src.format == "parquet":
        try:
            schema = pq.read_schema(src.path)
        except (OSError, pa.ArrowException) as exc:
            raise SourceError(f"{src.path}: not a readable Parquet file ({exc})") from None
        names = schema.names
    else:
        schema, names = None, csv_header(src)
    for role, name in columns.items():
        if name not in names:
            raise SourceError(f"{src.path}: no column {name!r} (index.file.columns.{role}); its columns: "
                              f"{', '.join(names[:20])}{' ...' if len(names) > 20 else ''}")
        if schema is None:
            continue
        t = schema.field(name).type
        ok = pa.types.is_integer(t) if role == "objectId" else (pa.types.is_floating(t) or pa.types.is_integer(t)
                                                                or pa.types.is_decimal(t))
        if not ok:
            want = "an integer type (BIGINT ids)" if role == "objectId" else "a numeric type (degrees)"
            raise SourceError(f"{src.path}: column {name!r} (index.file.columns.{role}) is {t}, expected {want}")


def row_count(src: Source) -> int:
    """Rows of a Parquet file (its footer); a CSV file's estimated from its size."""
    if src.format == "parquet":
        import pyarrow.parquet as pq
        return pq.ParquetFile(src.path).metadata.num_rows
    return max(1, src.path.stat().st_size // CSV_ROW_BYTES)


@functools.lru_cache(maxsize=16)
def _rows(files: tuple) -> int:
    return sum(row_count(Source(Path(p), fmt)) for p, fmt, _, _ in files)


def total_rows(section: dict) -> int:
    """Rows of all the files (CSV estimated): the plan's and the space estimate's index rows."""
    srcs = sources(section)
    return _rows(tuple((str(s.path), s.format, *f[1:]) for s, f in zip(srcs, fingerprint(srcs))))


def fingerprint(srcs: list[Source]) -> list[list]:
    """[path, bytes, mtime_ns] of each file: what the workflow compares between runs."""
    out = []
    for s in srcs:
        st = s.path.stat()
        out.append([str(s.path), st.st_size, st.st_mtime_ns])
    return out


def checksum(path: Path) -> int:
    """CRC-32 of a file's bytes (streamed)."""
    crc = 0
    with open(path, "rb") as f:
        while block := f.read(_BLOCK):
            crc = zlib.crc32(block, crc)
    return crc


def changed(recorded: list[dict], now: list[list]) -> list[str]:
    """What differs between the files an index input was read from (its sources.json
    ``files``) and the files as they are now, in words; empty when nothing did."""
    was = {r["path"]: r for r in recorded}
    out = []
    for path, size, mtime in now:
        r = was.pop(path, None)
        if r is None:
            out.append(f"{path} is new")
        elif (r["bytes"], r["mtime_ns"]) != (size, mtime):
            what = [f"{r['bytes']} bytes then, {size} now"] if r["bytes"] != size else []
            what += ["modified since"] if r["mtime_ns"] != mtime else []
            out.append(f"{path} changed ({'; '.join(what)})")
    out += [f"{p} is no longer listed" for p in was]
    return out
