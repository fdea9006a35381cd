"""The patch's manifest: what the workflow's parse needs of the user's patch files (their rows,
extent and largest id) and what it compares between runs (each file's size, mtime, ctime and
CRC-32), in ``results/<run>/catalog/patch/manifest.json``. The parse that finds no manifest, or
one whose files or ``catalog.patch.file`` section differ, reads and checks every row (patch.py
``read_rows``) and writes it; every later parse, a dry run or a job's own, reads this small file
instead of the rows. A file rewritten with its size and mtime kept moved its ctime, so it is
read again; one only touched (its bytes the same, by CRC-32) is not. A parse that reads the rows
says which file and why first; the catalog job reads the rows in any case, to build the patch."""

from __future__ import annotations

import json
from pathlib import Path

from ...core.infra.files import atomic_path
from ...core.infra.sources import Source, checksum
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
    """The manifest at ``path`` when it describes ``srcs`` as they are now under the same
    section; None when absent, unreadable or stale (:func:`check` says why)."""
    return check(path, files, srcs)[0]


def check(path: Path, files: OwnFiles, srcs: list[Source]) -> tuple[dict | None, str]:
    """(the manifest at ``path``, "") when it describes ``srcs`` as they are now (same paths,
    sizes, mtimes and ctimes) under the same section; else (None, why not, naming the file and
    what of it changed). A file whose size is kept but whose mtime or ctime moved (``touch``) is
    checked by its CRC-32: the same content keeps the manifest, its times updated there."""
    try:
        doc = json.loads(Path(path).read_text())
    except FileNotFoundError:
        return None, f"no manifest of them yet ({path})"
    except (OSError, ValueError) as exc:
        return None, f"{path} is not readable ({exc})"
    listed = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(listed, list) or doc.get("version") != VERSION:
        return None, f"{path} is of another catbench version"
    if doc.get("section") != _section(files):
        return None, f"the config's catalog.patch.file section changed since {path} was written"
    now = [{**f, **_stat(s.path)} for s, f in zip(srcs, listed) if f.get("path") == str(s.path)]
    if len(now) != len(srcs) or len(listed) != len(srcs):
        return None, "; ".join(differences(listed, [{"path": str(s.path)} for s in srcs]))
    why = differences(listed, now)
    if not why:
        return doc, ""
    touched = [(s, f) for s, f, n in zip(srcs, listed, now) if n != f and n["bytes"] == f.get("bytes")]
    if len(touched) == len(why) and all(checksum(s.path) == f.get("crc32") for s, f in touched):
        doc["files"] = now   # the same bytes, only their times moved: the rows are those read
        with atomic_path(path) as tmp:
            Path(tmp).write_text(json.dumps(doc, indent=1) + "\n")
        return doc, ""
    return None, "; ".join(why)


def _stat(path: Path) -> dict:
    st = path.stat()
    return {"bytes": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns}


def differences(then: list[dict], now: list[dict]) -> list[str]:
    """What differs between two lists of file records (path, bytes, mtime_ns, ctime_ns, and
    where both have them rows and crc32), a phrase per file naming it; empty when nothing."""
    was = {f.get("path"): f for f in then}
    out = []
    for f in now:
        old = was.pop(f["path"], None)
        if old is None:
            out.append(f"{f['path']} is new")
            continue
        what = [f"{old.get(k)} {unit} then, {f[k]} now" for k, unit in (("rows", "rows"), ("bytes", "bytes"))
                if k in f and old.get(k) != f[k]]
        if "crc32" in f and "crc32" in old and old["crc32"] != f["crc32"] and not what:
            what.append(f"its content: CRC-32 {old['crc32']} then, {f['crc32']} now")
        if old.get("mtime_ns") != f.get("mtime_ns") and "mtime_ns" in f:
            what.append("modified since (its mtime moved)")
        elif old.get("ctime_ns") != f.get("ctime_ns") and "ctime_ns" in f and not what:
            what.append("rewritten with its size and mtime kept (its ctime moved)")
        if what:
            out.append(f"{f['path']} changed ({'; '.join(what)})")
    return out + [f"{p} is no longer listed" for p in was]


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
