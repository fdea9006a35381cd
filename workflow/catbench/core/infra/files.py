"""File formats of the data products: Parquet and LOAD DATA-ready TSV, written
atomically (a temp name renamed at the end) so a failed job leaves nothing that
looks complete; and the user's own catalog files the index study can read."""

from __future__ import annotations

import contextlib
import csv
import fcntl
import functools
import glob
import io
import logging
import os
import re
import shutil
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from . import ecsv
from .ecsv import Ecsv
from .addrspace import polars
from .errors import TargetError

# Random doubles do not dictionary-encode; trying costs 10x the write time.
log = logging.getLogger(__name__)

PARQUET_OPTIONS = {"use_dictionary": False, "compression": "snappy"}


def dir_bytes(path) -> int:
    """Bytes of the files under ``path`` (0 when it does not exist)."""
    total = 0
    for root, _dirs, names in os.walk(path):
        for n in names:
            try:
                total += os.lstat(os.path.join(root, n)).st_size
            except OSError:
                pass
    return total


_TEMP = re.compile(r"\..+\.tmp-(\d+)")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temps(directory) -> int:
    """Remove the temporary files and folders (``atomic_path``'s ``.<name>.tmp-<pid>``) that a
    killed job left in ``directory``: those whose process is gone (a running job's are kept).
    Returns how many."""
    gone = 0
    for p in Path(directory).glob(".*.tmp-*"):
        m = _TEMP.fullmatch(p.name)
        if m and not _alive(int(m.group(1))):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
            gone += 1
    if gone:
        log.warning("%s: removed %d temporary files of killed jobs", directory, gone)
    return gone


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary sibling path; rename it to ``path`` only on success."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


# Bytes one write() hands the kernel at most. The page cache takes folios as large as a
# write (a 4 MiB write: 2 MiB folios, whole free blocks), and a VM that reports free memory
# to its host in 2 MiB blocks (virtio-balloon free page reporting) gets each such block back
# from the host page by page: 1 GiB to ext4 took 2.5 sys-s in 4 MiB writes, 1.5 in 1 MiB
# and 0.2 in 64-128 KiB ones (medians; prepare/partition.md has the table).
WRITE_BYTES = 1 << 17


def write_all(fd: int, data) -> int:
    """Write ``data`` (bytes-like) to the open file ``fd`` in writes of at most WRITE_BYTES."""
    view = memoryview(data).cast("B")
    for a in range(0, len(view), WRITE_BYTES):
        piece = view[a:a + WRITE_BYTES]
        while len(piece):
            piece = piece[os.write(fd, piece):]
    return len(view)


def write_parquet(table: pa.Table, path, **options):
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, **{**PARQUET_OPTIONS, **options})


def write_tsv(table: pa.Table, path):
    """Tab-separated, no header, ``\\N`` for NULL: what ``LOAD DATA INFILE`` reads.
    Floats are written in their shortest exact form (polars' writer, 1.5-3x faster
    than Arrow's at formatting floats, which dominates partitioning time)."""
    pl = polars()  # here: only TSV writers pay its 0.25 s import

    with atomic_path(path) as tmp:
        pl.from_arrow(table).write_csv(tmp, separator="\t", include_header=False,
                                       null_value="\\N", quote_style="never")


@contextlib.contextmanager
def parquet_errors(path):
    """A truncated or foreign Parquet file fails naming the path and what to do."""
    try:
        yield
    except (pa.ArrowException, OSError) as e:
        raise ValueError(f"{path}: not a readable Parquet file ({e}); re-run the stage "
                         f"that writes it") from e


def read_parquet(path, columns=None) -> pa.Table:
    """Read a Parquet file (ParquetFile, not pq.read_table: that imports pyarrow.dataset,
    0.4 s a job)."""
    f = open_parquet(path)
    with parquet_errors(path):
        return f.read(columns=columns)


def open_parquet(path) -> pq.ParquetFile:
    with parquet_errors(path):
        return pq.ParquetFile(path)


@contextlib.contextmanager
def staged_output(out_dir):
    """A stage's result directory, written as a hidden ``.<name>.partial-*`` sibling and
    renamed to ``out_dir`` only when the body succeeds. The partial folder is locked (flock)
    while its job lives, before anything else is touched; what an earlier, killed run left
    (unlocked partials, and the previous results, which a re-run replaces) is then removed, so
    after any failure nothing that looks complete remains. A partial another live job holds
    is never removed: TargetError, and this job leaves everything as it was."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.partial-", dir=out_dir.parent))
    held = None
    try:
        held = _flock_dir(work)
        for stale in out_dir.parent.glob(f".{out_dir.name}.partial-*"):
            if stale != work and not _remove_unheld(stale):
                raise TargetError(f"{out_dir} is being written by another live job ({stale} is held); "
                                  f"it was left untouched: wait for that job, or give this run another name")
        if out_dir.exists():
            log.info("removing the previous results in %s", out_dir)
            shutil.rmtree(out_dir)
        yield work
        work.chmod(0o755)  # mkdtemp's 0700 would make these results unlike every other
        work.rename(out_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if held is not None:
            os.close(held)


def _flock_dir(path: Path) -> int:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def _remove_unheld(stale: Path) -> bool:
    """Remove a partial folder no live job holds; False (kept) when one does."""
    try:
        fd = _flock_dir(stale)
    except BlockingIOError:
        return False
    except OSError:       # gone meanwhile, or not a folder: nothing of a live job
        fd = None
    try:
        log.warning("removing %s left by an interrupted run", stale)
        if stale.is_dir() and not stale.is_symlink():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)
    finally:
        if fd is not None:
            os.close(fd)
    return True


# ---- the user's own catalog files (index.source: file, the index.file keys) -----------------
# Which files, in which order, their format, the mapped columns, their row counts and a
# fingerprint: all cheap (a Parquet footer, a CSV header, a stat), so the workflow checks
# them before any job starts and re-runs the read when a file changes. Reading their rows
# is prepare/own/index.py.

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
