"""The chunk files of one reduce group, in the formats asked for (config
``partition.formats``): ``chunk_<id>[_overlap].tsv`` and ``.parquet`` per table.

Text goes to disk as soon as a catalog part's rows are made (appended to each chunk's
temporary file, in part = generation order), so its buffers are reused from part to part
instead of a group's worth of text being held; Parquet pieces are kept and each chunk is
written as one table at the end. Every file is renamed into place only when the group is
complete; on failure the temporary files are removed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa

from ..core.files import write_parquet

FOLDER = {"Object": "Object", "ObjectOverlap": "Object", "Source": "Source"}
SUFFIX = {"Object": "", "ObjectOverlap": "_overlap", "Source": ""}


class ChunkFiles:
    def __init__(self, chunks_dir, formats):
        self.dir = Path(chunks_dir)
        self.formats = tuple(formats)
        self.tables: dict[tuple[str, int], list[pa.Table]] = {}
        self.rows: dict[tuple[str, int], int] = {}
        self.text: dict[tuple[str, int], Path] = {}
        for folder in set(FOLDER.values()):
            (self.dir / folder).mkdir(parents=True, exist_ok=True)

    def stem(self, name: str, chunk_id: int) -> Path:
        return self.dir / FOLDER[name] / f"chunk_{chunk_id}{SUFFIX[name]}"

    def add(self, name: str, chunk_id: int, rows: int, table: pa.Table | None):
        """Rows of one chunk from one catalog part (their table is kept for Parquet)."""
        key = (name, chunk_id)
        self.rows[key] = self.rows.get(key, 0) + rows
        if "parquet" in self.formats:
            self.tables.setdefault(key, []).append(table)
        if "tsv" in self.formats and key not in self.text:
            stem = self.stem(name, chunk_id)
            self.text[key] = stem.with_name(f".{stem.name}.tsv.tmp-{os.getpid()}")
            self.text[key].write_bytes(b"")

    def add_text(self, name: str, chunk_id: int, text):
        """Lines of one chunk, appended to its TSV now (in the order they come)."""
        if len(text):
            with open(self.text[(name, chunk_id)], "ab") as f:
                f.write(text)

    def chunks(self, name: str) -> set[int]:
        return {cid for n, cid in self.rows if n == name}

    def finish(self, empty: pa.Table) -> list[dict]:
        """Write the Parquet files, put every file in place; one manifest row per chunk
        file pair (a format that is off counts 0 bytes)."""
        manifest = []
        for key in sorted(self.rows, key=lambda k: (k[1], k[0])):
            name, cid = key
            stem = self.stem(name, cid)
            row = {"chunkId": cid, "table": name, "rows": self.rows[key],
                   "parquet_bytes": 0, "tsv_bytes": 0}
            if "parquet" in self.formats:
                parts = [t for t in self.tables.pop(key) if t is not None] or [empty]
                write_parquet(pa.concat_tables(parts), stem.with_suffix(".parquet"))
                row["parquet_bytes"] = stem.with_suffix(".parquet").stat().st_size
            if "tsv" in self.formats:
                os.replace(self.text.pop(key), stem.with_suffix(".tsv"))
                row["tsv_bytes"] = stem.with_suffix(".tsv").stat().st_size
            manifest.append(row)
        return manifest

    def discard(self):
        """Remove the temporary text files of a group that failed."""
        for path in self.text.values():
            path.unlink(missing_ok=True)
