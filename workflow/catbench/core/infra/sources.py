"""The user's own catalog files (index.source: file, the index.file keys; catalog.patch.file):
which files, in which order, their format, the mapped columns, their row counts and a
fingerprint: all cheap (a Parquet footer, a CSV header, a stat), so the workflow checks them
before any job starts and re-runs the read when a file changes. Reading their rows is
prepare/own/index.py."""

from __future__ import annotations

import csv
import functools
import glob
import io
import logging
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from . import ecsv
from .ecsv import Ecsv

log = logging.getLogger(__name__)

SOURCE_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".ecsv": "csv", ".tsv": "tsv",
                  ".txt": "tsv"}
COMPRESSED = (".gz", ".bz2", ".zst", ".lz4")
ROLES = ("objectId", "ra", "dec")
TEXT_WIDTH = 255   # characters a carried text column of a patch file holds (VARCHAR in the chunk tables)
CSV_ROW_BYTES = 40   # a guess at a CSV row's size, for the plan only (Parquet counts exactly)
_CRC_BLOCK = 8 << 20


class SourceError(ValueError):
    """A user's file that cannot be the index study's input; the message names the file
    (and, where it applies, the column and the row)."""


@dataclass(frozen=True)
class Source:
    path: Path
    format: str   # parquet, csv, tsv

    @property
    def delimiter(self) -> str:
        """A TSV's tab, a CSV's comma; an ECSV's own (its header says: a space unless a comma)."""
        meta = ecsv_header(self)
        return meta.delimiter if meta else "\t" if self.format == "tsv" else ","


def file_format(path: Path, key: str = "index.file") -> str:
    name = path.name.lower()
    for ext in COMPRESSED:   # pyarrow's CSV reader decompresses by the suffix
        if name.endswith(ext):
            name = name[: -len(ext)]
    fmt = SOURCE_FORMATS.get(Path(name).suffix)
    if fmt is None:
        raise SourceError(f"config key '{key}.paths': {path}: unknown format (its name should end in "
                          f"{', '.join(SOURCE_FORMATS)}, CSV/TSV optionally compressed: {', '.join(COMPRESSED)})")
    if fmt == "parquet" and name != path.name.lower():
        raise SourceError(f"config key '{key}.paths': {path}: a compressed Parquet file; Parquet "
                          f"compresses inside the file")
    return fmt


def _not_data(path: Path) -> bool:
    """A glob's match that is no catalog file: a name no format reads (notes, checksums), or a
    README whatever its suffix; skipped, said in the log."""
    try:
        file_format(path)
    except SourceError:
        log.info("skipping %s: not a Parquet, CSV or TSV file", path)
        return True
    if path.name.upper().startswith("README"):
        log.info("skipping %s: a README, not a catalog file", path)
        return True
    return False


def sources(section: dict, base: Path | None = None, key: str = "index.file") -> list[Source]:
    """The files of ``<key>.paths`` (index.file, catalog.patch.file) in input order: the
    entries as listed, a glob's matches sorted by name. A pattern that matches nothing, or a
    file named twice, is refused."""
    out, seen = [], {}
    for entry in section.get("paths") or []:
        pattern = os.path.expanduser(entry)
        if base is not None and not os.path.isabs(pattern):
            pattern = str(base / pattern)
        if not glob.has_magic(pattern) and Path(pattern).is_dir():
            raise SourceError(f"config key '{key}.paths': {entry!r} is a folder; give its files, e.g. "
                              f"'{entry.rstrip('/')}/*.parquet' or '{entry.rstrip('/')}/*.csv.gz'")
        hits = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        hits = [h for h in hits if Path(h).is_file() and not (glob.has_magic(pattern) and _not_data(Path(h)))]
        if not hits:
            raise SourceError(f"config key '{key}.paths': {entry!r} names no file")
        for h in hits:
            p = Path(h).resolve()
            if p in seen:
                raise SourceError(f"config key '{key}.paths': {p} is listed twice ({seen[p]!r} and "
                                  f"{entry!r}); its ids would be duplicates")
            seen[p] = entry
            out.append(Source(p, file_format(p, key)))
    if not out:
        raise SourceError(f"config key '{key}.paths': no files; it reads the objectId, ra and dec "
                          "of these Parquet/CSV files")
    return out


def column_map(section: dict) -> dict[str, str]:
    """{role: the file's column name} for objectId, ra, dec."""
    return {role: section["columns"][role] for role in ROLES}


def csv_header(src: Source) -> list[str]:
    """A CSV/TSV file's column names: its first line that is not a ``#`` comment (ECSV, as Gaia
    distributes its tables, and commented CSV put their metadata there; ``comment_lines``)."""
    line = _header(*_header_key(src))[1]
    return next(csv.reader(io.StringIO(line), delimiter=src.delimiter))


def _header_key(src: Source) -> tuple:
    st = src.path.stat()   # a file changed in place is read again
    return str(src.path), st.st_size, st.st_mtime_ns


def comment_lines(src: Source) -> int:
    """The ``#`` lines before a CSV/TSV file's header: the rows its readers skip."""
    return _header(*_header_key(src))[0] if src.format != "parquet" else 0


def ecsv_header(src: Source) -> Ecsv | None:
    """An ECSV file's header (delimiter, declared types); None for other files."""
    if src.format == "parquet":
        return None
    lines = _header(*_header_key(src))[2]
    if not lines:
        return None
    try:
        return ecsv.parse(list(lines), src.path)
    except ValueError as exc:
        raise SourceError(str(exc)) from None


def csv_line(src: Source, row: int) -> int:
    """The line of a CSV/TSV file on which its data row ``row`` (1-based) starts, as an editor
    numbers them: its ``#`` comment lines, its header, and the newlines inside quoted values
    (a row may take several lines) all counted. Read up to that row: for error messages only."""
    line, ended, skip, quoted = 1, 0, comment_lines(src), False
    with pa.input_stream(str(src.path), compression="detect") as f:
        while block := f.read(1 << 20):
            while skip and block:              # comment lines: no quoting in them
                cut = block.find(b"\n")
                if cut < 0:
                    block = b""
                    break
                block, skip, line = block[cut + 1:], skip - 1, line + 1
            for k, part in enumerate(block.split(b'"')):
                if k:
                    quoted = not quoted
                n = part.count(b"\n")
                if not quoted and ended + n >= row:   # a newline outside quotes ends a row (the header first)
                    return line + row - ended
                line += n
                ended += 0 if quoted else n
    return line


HEADER_LIMIT = 64 << 20   # an ECSV header of every Gaia column is ~0.1 MB; past this, not a CSV
BOM = b"\xef\xbb\xbf"    # a UTF-8 byte-order mark (Excel's CSV), not part of the first name


@functools.lru_cache(maxsize=64)
def _header(path: str, _size: int, _mtime: int) -> tuple[int, str, tuple]:
    """(the ``#`` lines, the header line, the ``#`` lines' text when the file is an ECSV)."""
    skipped, seen, rest, kept = 0, 0, b"", []
    try:
        with pa.input_stream(path, compression="detect") as f:
            while seen < HEADER_LIMIT:
                block = f.read(1 << 16)
                if not seen and block.startswith(BOM):
                    block = block[len(BOM):]
                seen += len(block)
                lines = (rest + block).split(b"\n")
                rest = lines.pop() if block else b""
                for line in lines + ([rest] if not block and rest else []):
                    text = line.decode("utf-8", "replace").rstrip("\r")
                    if not line.lstrip().startswith(b"#"):
                        return skipped, text, tuple(kept if kept[:1] and kept[0].startswith(ecsv.MAGIC) else ())
                    skipped += 1
                    if kept or (skipped == 1 and text.startswith(ecsv.MAGIC)):
                        kept.append(text)
                if not block:
                    break
    except (OSError, pa.ArrowException) as exc:   # a .gz that is plain text, or cut short
        raise SourceError(f"{path}: not readable as a compressed CSV/TSV file ({exc}); "
                          f"check the file, or drop the suffix if it is not compressed") from None
    raise SourceError(f"{path}: empty; a CSV/TSV file needs a header line naming its columns"
                      + (f" (after its {skipped} '#' lines)" if skipped else ""))


def check_columns(src: Source, columns: dict[str, str], key: str = "index.file"):
    """Every mapped column is in the file, Parquet's with a usable type: an integer
    objectId, numeric ra/dec (a CSV's values are checked row by row as they are read)."""
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
            raise SourceError(f"{src.path}: no column {name!r} ({key}.columns.{role}); its columns: "
                              f"{', '.join(names[:20])}{' ...' if len(names) > 20 else ''}")
        if schema is None:
            continue
        t = schema.field(name).type
        ok = pa.types.is_integer(t) if role == "objectId" else (pa.types.is_floating(t) or pa.types.is_integer(t)
                                                                or pa.types.is_decimal(t))
        if not ok:
            want = "an integer type (BIGINT ids)" if role == "objectId" else "a numeric type (degrees)"
            raise SourceError(f"{src.path}: column {name!r} ({key}.columns.{role}) is {t}, expected {want}")


def row_count(src: Source) -> int:
    """Rows of a Parquet file (its footer); a CSV file's estimated from its size."""
    if src.format == "parquet":
        return pq.ParquetFile(src.path).metadata.num_rows
    return max(1, src.path.stat().st_size // CSV_ROW_BYTES)


@functools.lru_cache(maxsize=16)
def _rows(files: tuple) -> int:
    return sum(row_count(Source(Path(p), fmt)) for p, fmt, _, _ in files)


def total_rows(section: dict) -> int:
    """Rows of all the files (CSV estimated): the plan's and the space estimate's index rows."""
    stats = [(s, s.path.stat()) for s in sources(section)]
    return _rows(tuple((str(s.path), s.format, st.st_size, st.st_mtime_ns) for s, st in stats))


def fingerprint(srcs: list[Source], recorded: list[dict] | None = None, content: bool = True) -> list[list]:
    """[path, bytes, mtime_ns, CRC-32] of each file: what the workflow compares between runs
    (a rule's params, so a change re-runs what was read from it). The CRC-32 is the one
    ``recorded`` when the file was read (files.json's or sources.json's ``files``) while its
    size, mtime and ctime are those recorded; otherwise it is computed now: a file rewritten with
    its size and mtime kept (``touch -r``) still moved its ctime, and its content is checked.
    ``content`` False (a job's own parse of the workflow) never reads a file: None instead."""
    was = {r["path"]: r for r in recorded or [] if isinstance(r, dict)}
    out = []
    for s in srcs:
        st, r = s.path.stat(), was.get(str(s.path))
        same = r is not None and r.get("crc32") is not None and \
            (r.get("bytes"), r.get("mtime_ns"), r.get("ctime_ns")) == (st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        out.append([str(s.path), st.st_size, st.st_mtime_ns,
                    r["crc32"] if same else checksum(s.path) if content else None])
    return out


def checksum(path: Path) -> int:
    """CRC-32 of a file's bytes (streamed)."""
    crc = 0
    with open(path, "rb") as f:
        while block := f.read(_CRC_BLOCK):
            crc = zlib.crc32(block, crc)
    return crc


def changed(recorded: list[dict], now: list[list]) -> list[str]:
    """What differs between the files an index input was read from (its sources.json
    ``files``) and the files as they are now, in words; empty when nothing did."""
    was = {r["path"]: r for r in recorded}
    out = []
    for path, size, mtime, crc in now:
        r = was.pop(path, None)
        if r is None:
            out.append(f"{path} is new")
        elif (r["bytes"], r["mtime_ns"]) != (size, mtime):
            what = [f"{r['bytes']} bytes then, {size} now"] if r["bytes"] != size else []
            what += ["modified since"] if r["mtime_ns"] != mtime else []
            out.append(f"{path} changed ({'; '.join(what)})")
        elif r.get("crc32") is not None and r["crc32"] != crc:
            out.append(f"{path} changed (its content: CRC-32 {r['crc32']} then, {crc} now, its size and "
                       f"modification time kept)")
    out += [f"{p} is no longer listed" for p in was]
    return out
