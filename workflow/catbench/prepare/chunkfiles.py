"""The chunk files of one reduce group, in the formats asked for (config
``partition.formats``): ``chunk_<id>[_overlap].tsv`` and ``.parquet`` per table.

Text goes to disk as soon as a catalog part's rows are made (appended to each chunk's
temporary file, in part = generation order), so its buffers are reused from part to part
instead of a group's worth of text being held; Parquet pieces are kept until the chunk is
complete (``complete``), then written as one table. TSV files are renamed into place only
when the group is complete; on failure the temporary files are removed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa

from ..core.files import remove_stale_temps, write_parquet

FOLDER = {"Object": "Object", "ObjectOverlap": "Object", "Source": "Source"}
SUFFIX = {"Object": "", "ObjectOverlap": "_overlap", "Source": ""}


class ChunkFiles:
    def __init__(self, chunks_dir, formats):
        self.dir = Path(chunks_dir)
        self.formats = tuple(formats)
        self.tables: dict[tuple[str, int], list[pa.Table]] = {}
        self.written: dict[tuple[str, int], int] = {}  # Parquet bytes of each file
        self.rows: dict[tuple[str, int], int] = {}
        self.text: dict[tuple[str, int], Path] = {}
        for folder in set(FOLDER.values()):
            (self.dir / folder).mkdir(parents=True, exist_ok=True)
            remove_stale_temps(self.dir / folder)   # what a killed reduce of this run left

    def stem(self, name: str, chunk_id: int) -> Path:
        return self.dir / FOLDER[name] / f"chunk_{chunk_id}{SUFFIX[name]}"

    def add(self, name: str, chunk_id: int, rows: int, table: pa.Table | None):
        """Rows of one chunk from one catalog part (their table is kept for Parquet)."""
        key = (name, chunk_id)
        if key in self.written:
            raise RuntimeError(f"rows of {key} after its Parquet file was written")
        self.rows[key] = self.rows.get(key, 0) + rows
        if "parquet" in self.formats:
            self.tables.setdefault(key, []).append(table)
        if "tsv" in self.formats and key not in self.text:
            stem = self.stem(name, chunk_id)
            self.text[key] = stem.with_name(f".{stem.name}.tsv.tmp-{os.getpid()}")
            self.text[key].write_bytes(b"")

    def add_text(self, pieces):
        """Lines of chunks, (name, chunkId, bytes) each, appended to their TSVs now, in the
        order given."""
        for name, cid, text in pieces:
            if len(text):
                with open(self.text[(name, cid)], "ab") as f:
                    f.write(text)

    def chunks(self, name: str) -> set[int]:
        return {cid for n, cid in self.rows if n == name}

    def complete(self, keys, empty: pa.Table | None = None):
        """Write the Parquet files of chunks that get no more rows, and let their rows go."""
        if "parquet" not in self.formats:
            return
        for key in keys:
            parts = [t for t in self.tables.pop(key) if t is not None] or [empty]
            self.written[key] = _write(parts, self.stem(*key).with_suffix(".parquet"))

    def finish(self, empty: pa.Table) -> list[dict]:
        """Write the Parquet files not yet written, put every file in place; one manifest
        row per chunk file pair (a format that is off counts 0 bytes)."""
        self.complete(list(self.tables), empty)
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
        return manifest

    def discard(self):
        """Remove the temporary text files of a group that failed."""
        for path in self.text.values():
            path.unlink(missing_ok=True)


def _write(parts: list[pa.Table], path: Path) -> int:
    # Uncompressed: snappy saved 4% of a chunk file's bytes (random float values) for
    # 1.4x the CPU of writing it.
    write_parquet(pa.concat_tables(parts), path, compression="none")
    return path.stat().st_size
