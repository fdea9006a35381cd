"""The chunk files of one reduce group, in the formats asked for (config
``partition.formats``): ``chunk_<id>[_overlap].tsv`` and ``.parquet`` per table.

Text goes to disk as soon as a catalog part's rows are made (appended to each chunk's
temporary file, in part = generation order), so its buffers are reused from part to part
instead of a group's worth of text being held; Parquet pieces are kept until the chunk is
complete (``complete``), then written as one table, or, once a chunk has a whole row group
(``row_group`` rows, pyarrow's default 1 Mi rows), that row group is written to the chunk's
open file and let go: the same bytes as writing the whole table at once, with at most
``row_group`` - 1 rows of any chunk held. Every file is made in a folder of this reduce's
own (``.reduce.tmp-<pid>`` beside the chunk files) and renamed into place when complete;
on failure the folder is removed, and a killed reduce's by the next reduce of the run.
A folder no other reduce writes to spares the wait on a shared folder's lock while files
are created (partition.md, "Completeness"). A TSV file stays open while its chunk gets rows
(at most OPEN_FILES at once).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

import pyarrow as pa
import pyarrow.parquet as pq

from ..core.infra.files import PARQUET_OPTIONS, remove_stale_temps, write_all
from .arrays import numpy

FOLDER = {"Object": "Object", "ObjectOverlap": "Object", "Source": "Source"}
SUFFIX = {"Object": "", "ObjectOverlap": "_overlap", "Source": ""}
ROW_GROUP = 1 << 20      # rows per row group of a chunk's Parquet file (pyarrow's default)
# Uncompressed: snappy saved 4% of a chunk file's bytes (random float values) for 1.4x the
# CPU of writing it.
OPTIONS = {**PARQUET_OPTIONS, "compression": "none"}
OPEN_FILES = 256  # TSV files a reduce keeps open (the least recently written is closed first)


class ChunkFiles:
    def __init__(self, chunks_dir, formats, row_group: int = ROW_GROUP):
        self.dir = Path(chunks_dir)
        self.formats = tuple(formats)
        self.row_group = int(row_group)
        self.held = 0       # rows of Parquet pieces held now
        self.writers: dict[tuple[str, int], tuple[pq.ParquetWriter, Path]] = {}
        self.tables: dict[tuple[str, int], list[pa.Table]] = {}
        self.written: dict[tuple[str, int], int] = {}  # Parquet bytes of each file
        self.rows: dict[tuple[str, int], int] = {}
        self.text: dict[tuple[str, int], str] = {}    # TSV files being written
        self.open: dict[tuple[str, int], int] = {}    # their open descriptors, oldest first
        self.tmp = {}
        for folder in sorted(set(FOLDER.values())):
            (self.dir / folder).mkdir(parents=True, exist_ok=True)
            remove_stale_temps(self.dir / folder)   # what a killed reduce of this run left
            self.tmp[folder] = self.dir / folder / f".reduce.tmp-{os.getpid()}"
            shutil.rmtree(self.tmp[folder], ignore_errors=True)
            self.tmp[folder].mkdir()

    def stem(self, name: str, chunk_id: int) -> Path:
        return self.dir / FOLDER[name] / f"chunk_{chunk_id}{SUFFIX[name]}"

    def _temp(self, name: str, chunk_id: int, suffix: str) -> str:
        return f"{self.tmp[FOLDER[name]]}/chunk_{chunk_id}{SUFFIX[name]}{suffix}"

    def _fd(self, key) -> int:
        """The open descriptor of a TSV file, reopened if it was closed for room."""
        fd = self.open.pop(key, None)
        self._keep(key, os.open(self.text[key], os.O_WRONLY | os.O_APPEND) if fd is None else fd)
        return self.open[key]

    def _keep(self, key, fd: int):
        self.open[key] = fd   # the most recently used last
        while len(self.open) > OPEN_FILES:
            os.close(self.open.pop(next(iter(self.open))))

    def _close_all(self):
        while self.open:
            os.close(self.open.popitem()[1])

    def add(self, name: str, chunk_id: int, rows: int, table: pa.Table | None):
        """Rows of one chunk from one catalog part (their table is kept for Parquet)."""
        key = (name, chunk_id)
        if key in self.written:
            raise RuntimeError(f"rows of {key} after its Parquet file was written")
        self.rows[key] = self.rows.get(key, 0) + rows
        if "parquet" in self.formats:
            self.tables.setdefault(key, []).append(table)
            self.held += rows
            self._flush(key)
        if "tsv" in self.formats and key not in self.text:
            self.text[key] = self._temp(name, chunk_id, ".tsv")
            self._keep(key, os.open(self.text[key], os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_TRUNC, 0o644))

    def add_text(self, pieces):
        """Lines of chunks, (name, chunkId, bytes) each, appended to their TSVs now, in the
        order given."""
        for name, cid, text in pieces:
            if len(text):
                write_all(self._fd((name, cid)), text)

    def chunks(self, name: str) -> set[int]:
        return {cid for n, cid in self.rows if n == name}

    def complete(self, keys, empty: pa.Table | None = None):
        """Write the Parquet files of chunks that get no more rows, and let their rows go."""
        if "parquet" not in self.formats:
            return
        for key in keys:
            parts = [t for t in self.tables.pop(key) if t is not None] or [empty]
            self.held -= sum(t.num_rows for t in parts if t is not empty)
            path = self.stem(*key).with_suffix(".parquet")
            if key in self.writers:          # its first row groups are written already
                writer, tmp = self.writers.pop(key)
                rest = pa.concat_tables(parts)
                if rest.num_rows:
                    writer.write_table(rest, row_group_size=self.row_group)
                writer.close()
            else:
                tmp = self._temp(*key, ".parquet")
                pq.write_table(pa.concat_tables(parts), tmp, row_group_size=self.row_group, **OPTIONS)
            os.replace(tmp, path)
            self.written[key] = path.stat().st_size

    def _flush(self, key):
        """Write a chunk's whole row groups to its open file and let their rows go."""
        parts = [t for t in self.tables[key] if t is not None]
        n = sum(t.num_rows for t in parts)
        if n < self.row_group:
            return
        whole = n // self.row_group * self.row_group
        table = pa.concat_tables(parts)
        if key not in self.writers:
            tmp = self._temp(*key, ".parquet")
            self.writers[key] = (pq.ParquetWriter(tmp, table.schema, **OPTIONS), tmp)
        self.writers[key][0].write_table(table.slice(0, whole), row_group_size=self.row_group)
        self.tables[key] = [table.slice(whole)]
        self.held -= whole

    def finish(self, empty: pa.Table) -> list[dict]:
        """Write the Parquet files not yet written, put every file in place; one manifest
        row per chunk file pair (a format that is off counts 0 bytes)."""
        self.complete(list(self.tables), empty)
        self._close_all()
        manifest = []
        for key in sorted(self.rows, key=lambda k: (k[1], k[0])):
            name, cid = key
            stem = self.stem(name, cid)
            row = {"chunkId": cid, "table": name, "rows": self.rows[key],
                   "parquet_bytes": 0, "tsv_bytes": 0}
            if "parquet" in self.formats:
                row["parquet_bytes"] = self.written.pop(key)
            if "tsv" in self.formats:
                os.replace(self.text.pop(key), stem.with_suffix(".tsv"))
                row["tsv_bytes"] = stem.with_suffix(".tsv").stat().st_size
            manifest.append(row)
        for folder in self.tmp.values():
            folder.rmdir()   # empty now: every file was renamed into place
        return manifest

    def discard(self):
        """Remove the temporary files of a group that failed (none are left once finished)."""
        self._close_all()
        for writer, _ in self.writers.values():
            writer.close()
        for folder in self.tmp.values():
            shutil.rmtree(folder, ignore_errors=True)


def passes(counts: dict[int, int], max_rows: int | None) -> list[tuple[int, int, int]]:
    """(first, last chunkId, rows per slice) of each pass over the group's parts: runs of
    consecutive chunks holding at most ``max_rows`` rows together; a chunk holding more is
    a pass of its own, taken ``max_rows`` rows at a time. One pass when unbounded."""
    ids = sorted(counts)
    if not ids:
        return []
    if max_rows is None:
        return [(ids[0], ids[-1], 1 << 62)]
    out, start, held, prev = [], ids[0], 0, ids[0]
    for c in ids:
        if held and held + counts[c] > max_rows:
            out.append((start, prev, max_rows))
            start, held = c, 0
        held, prev = held + counts[c], c
    return out + [(start, prev, max_rows)]


def in_range(loc: pa.Table | None, first: int, last: int) -> pa.Table | None:
    """The staging rows of chunks ``first``..``last`` (rows are sorted by chunk)."""
    if loc is None:
        return None
    cid = numpy(loc["chunkId"])
    a, b = np.searchsorted(cid, first, "left"), np.searchsorted(cid, last, "right")
    return loc.slice(int(a), int(b - a)) if b > a else None


def slices(present, step: int):
    """``present`` (name, rows) at once, or each table's rows ``step`` at a time when they
    are more than that (rows stay in order, so every file's bytes are the same)."""
    if sum(loc.num_rows for _, loc in present) <= step:
        yield present
        return
    for name, loc in present:
        for a in range(0, loc.num_rows, step):
            yield [(name, loc.slice(a, step))]
