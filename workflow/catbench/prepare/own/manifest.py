"""The patch's manifest: what the workflow's parse needs of the user's patch files (their rows,
extent and largest id) and what it compares between runs (each file's size, mtime, ctime and
CRC-32), in ``results/<run>/catalog/patch/manifest.json``. The parse that finds no manifest, or
one whose files or ``catalog.patch.file`` section differ, reads and checks every row (patch.py
``read_rows``) and writes it; every later parse, a dry run or a job's own, reads this small file
instead of the rows. A file rewritten with its size and mtime kept moved its ctime, so it is
read again; the catalog job reads the rows in any case, to build the patch."""

from __future__ import annotations

import json
from pathlib import Path

from ...core.infra.files import Source, atomic_path
from ..spec import OwnFiles

VERSION = 2
NAME = "manifest.json"


def path_of(root: Path, run: str) -> Path:
    """The manifest of the run ``run`` under the results folder ``root``."""
    return Path(root) / run / "catalog" / "patch" / NAME


def _section(files: OwnFiles) -> dict:
    """What the rows' reading depends on: the file section, as JSON holds it."""
    return json.loads(json.dumps(files.section, sort_keys=True, default=str))


def read(path: Path, files: OwnFiles, srcs: list[Source]) -> dict | None:
    """The manifest at ``path`` when it describes ``srcs`` as they are now (same paths, sizes,
    mtimes and ctimes) under the same section; None when absent, unreadable or stale."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    listed = doc.get("files") if isinstance(doc, dict) else None
    if doc.get("version") != VERSION or doc.get("section") != _section(files) or not isinstance(listed, list) \
            or [f.get("path") for f in listed] != [str(s.path) for s in srcs]:
        return None
    for s, f in zip(srcs, listed):
        st = s.path.stat()
        if (st.st_size, st.st_mtime_ns, st.st_ctime_ns) != (f.get("bytes"), f.get("mtime_ns"), f.get("ctime_ns")):
            return None
    return doc


def write(path: Path, files: OwnFiles, rows) -> dict:
    """The manifest of ``rows`` (patch.FileRows, every row checked), written whole."""
    fp = rows.footprint
    doc = {"version": VERSION, "section": _section(files), "files": rows.files, "objects": len(rows.ids),
           "ra_width_deg": fp.width, "dec_height_deg": fp.height, "max_id": int(rows.ids.max()),
           "non_finite_as_null": rows.non_finite}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(doc, indent=1) + "\n")
    return doc
