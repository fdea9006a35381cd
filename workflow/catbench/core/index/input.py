"""The index input: TSV files of ``key \\t chunkId \\t subChunkId``.

Every line is validated and checksummed before it may reach the server (``scan_file``);
the checksum is the input-side twin of ``Variant.checksum_sql``. Keys are found again in
the input to name both places of a duplicate. ``variant`` is an ``index_table.Variant``.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import json
import logging
import os
import random
import re
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..server.loaddata import LoadError

log = logging.getLogger(__name__)
LOOKUP_FILES = 64  # at most this many input files are read to draw lookup keys

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
_BLOCK = 8 << 20
MANIFEST = "manifest.json"


@dataclass
class FileInfo:
    path: Path
    rows: int
    bytes: int
    checksum: int


def write_manifest(input_dir, files: dict[str, dict], rows: int):
    """``manifest.json``: what the partition stage wrote (rows and bytes per file), so a
    missing, emptied or truncated file is caught before any load starts."""
    doc = {"rows": rows, "files": dict(sorted(files.items()))}
    path = Path(input_dir) / MANIFEST
    tmp = path.with_name(f".{MANIFEST}.tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(path)


def list_input(input_dir) -> list[Path]:
    """Input TSV files in load order (sorted by name, as the partitioner numbers them),
    checked against the folder's manifest when it has one (the workflow's always do):
    every file present with its bytes, no file added."""
    input_dir = Path(input_dir)
    files = sorted(input_dir.glob("*.tsv"))
    if not files:
        raise LoadError(f"no *.tsv files in {input_dir}; run the partition step first")
    manifest = input_dir / MANIFEST
    if not manifest.exists():
        log.warning("%s has no %s: its files are taken as they are (row counts unchecked)",
                    input_dir, MANIFEST)
        return files
    try:
        expected = json.loads(manifest.read_text())["files"]
    except (OSError, ValueError, KeyError) as exc:
        raise LoadError(f"{manifest}: unreadable ({exc}); re-run the partition step") from None
    names = {f.name: f for f in files}
    for name, want in expected.items():
        f = names.get(name)
        if f is None:
            raise LoadError(f"{input_dir / name} is missing ({want['rows']} rows according to {manifest}); "
                            f"re-run the partition step")
        size = f.stat().st_size
        if size != want["bytes"]:
            raise LoadError(f"{f}: {size} bytes, {manifest} says {want['bytes']} ({want['rows']} rows): the "
                            f"file was changed or truncated after the partition step wrote it; re-run it")
    extra = sorted(set(names) - set(expected))
    if extra:
        raise LoadError(f"{names[extra[0]]} is not in {manifest} ({len(extra)} such file(s)): the input "
                        f"folder holds files the partition step did not write; remove them")
    return files


@functools.lru_cache(maxsize=8)
def _manifest_files(folder: str, mtime_ns: int) -> dict:
    return json.loads((Path(folder) / MANIFEST).read_text())["files"]


def _check_rows(info: FileInfo) -> FileInfo:
    """The scanned rows of a file against its folder's manifest (when it has one)."""
    m = info.path.parent / MANIFEST
    if m.exists():
        want = _manifest_files(str(m.parent), m.stat().st_mtime_ns).get(info.path.name)
        if want is not None and want["rows"] != info.rows:
            raise LoadError(f"{info.path}: {info.rows} rows, {m} says {want['rows']}; re-run the "
                            f"partition step")
    return info


def line_problem(line: bytes, variant) -> str:
    """Why ``line`` is not a valid input line, in words."""
    if line.endswith(b"\r\n"):
        return "has a Windows line ending (\\r\\n); convert the file to \\n"
    fields = line.rstrip(b"\n").split(b"\t")
    if len(fields) != 3:
        return f"has {len(fields)} tab-separated fields, expected 3 (key, chunkId, subChunkId)"
    key, chunk, sub = fields
    if variant.text_key:
        if not 1 <= len(key) <= 28:
            return f"key is {len(key)} characters, the CHAR(28) schema allows 1 to 28"
        if not re.fullmatch(rb"[!-~]+", key):
            return "key has characters other than printable ASCII without spaces"
    elif not re.fullmatch(rb"-?[0-9]{1,19}", key) or not INT64[0] <= int(key) <= INT64[1]:
        return f"key {key[:40].decode('latin1')!r} is not a BIGINT"
    for name, v in (("chunkId", chunk), ("subChunkId", sub)):
        if not re.fullmatch(rb"-?[0-9]{1,10}", v) or not INT32[0] <= int(v) <= INT32[1]:
            return f"{name} {v[:40].decode('latin1')!r} is not an INT"
    return "is malformed"


def _noncanonical(block: bytes, text_key: bool) -> bool:
    """Whether a block of well-formed lines has a number that the server reads but that
    does not print back the same: a leading zero ("07") or a negative zero ("-0"), at the
    start of a numeric field (after a tab; the BIGINT key also at a line's start). One numpy
    pass: the regex it replaces started a match at every tab and newline, 1.4 us a row, 70%
    of a BIGINT-key scan."""
    a = np.frombuffer(block, np.uint8)
    starts = np.flatnonzero(a == 9) if text_key else np.flatnonzero((a == 9) | (a == 10))
    starts = starts[starts + 2 < len(a)] + 1   # a field of one character has no second one
    if not text_key:
        starts = np.concatenate(([0], starts))
    c0, c1 = a[starts], a[starts + 1]
    return bool((((c0 == 48) & (c1 >= 48) & (c1 <= 57)) | ((c0 == 45) & (c1 == 48))).any())


def _fast_scan(path: Path, variant) -> tuple[int, int] | None:
    """(rows, checksum) if every line is canonical (then the checksum line is the input
    line itself), else None."""
    rows, total, crc = 0, 0, zlib.crc32
    rest = b""
    with open(path, "rb") as f:
        while True:
            block = f.read(_BLOCK)
            if not block:
                break
            data = rest + block
            cut = data.rfind(b"\n") + 1
            data, rest = data[:cut], data[cut:]
            if not data:
                continue
            if variant.block.fullmatch(data) is None or _noncanonical(data, variant.text_key):
                return None
            lines = data.split(b"\n")
            lines.pop()
            rows += len(lines)
            total += sum(map(crc, lines))
    if rest:
        return None  # no final newline: let the exact scan judge it
    return rows, total


def scan_file(path, variant) -> FileInfo:
    """Validate every line and compute the file's checksum."""
    path = Path(path)
    fast = _fast_scan(path, variant)
    if fast is not None:
        return _check_rows(FileInfo(path, fast[0], path.stat().st_size, fast[1]))
    return _check_rows(_scan_file_exact(path, variant))


def _scan_file_exact(path: Path, variant) -> FileInfo:
    rows, total = 0, 0
    match, crc = variant.line.fullmatch, zlib.crc32
    with open(path, "rb") as f:
        for rows, line in enumerate(f, 1):
            m = match(line)
            if m is None:
                raise LoadError(f"{path}: line {rows} {line_problem(line, variant)}")
            key, chunk, sub = m.groups()
            c, s = int(chunk), int(sub)
            k = key if variant.text_key else b"%d" % int(key)
            if not (INT32[0] <= c <= INT32[1] and INT32[0] <= s <= INT32[1]) or (
                    not variant.text_key and not INT64[0] <= int(k) <= INT64[1]):
                raise LoadError(f"{path}: line {rows} {line_problem(line, variant)}")
            total += crc(b"%s\t%d\t%d" % (k, c, s))
    return FileInfo(path, rows, path.stat().st_size, total)


def _scan_one(args):
    path, variant = args
    return scan_file(path, variant)


def scan_files(files: list[Path], variant, workers: int | None = None) -> list[FileInfo]:
    """scan_file over all files in worker processes (the regexes hold the GIL)."""
    workers = workers or min(os.cpu_count() or 1, 4)
    if workers <= 1 or len(files) < 8:
        return [scan_file(f, variant) for f in files]
    from ..infra.jobs.workers import forkserver_executor
    with forkserver_executor(workers) as ex:
        return _logged(ex.map(_scan_one, [(f, variant) for f in files], chunksize=max(1, len(files) // (64 * workers))),
                       len(files))


def _logged(infos, total: int, every_s: float = 5.0) -> list[FileInfo]:
    """The scan's results, with a progress line every ``every_s`` (hours at 10^9 rows)."""
    out, t0, rows = [], time.monotonic(), 0
    last = t0
    for info in infos:
        out.append(info)
        rows += info.rows
        now = time.monotonic()
        if now - last >= every_s:
            last = now
            log.info("validating the input: %d/%d files, %s rows, %.0f rows/s, ETA %.0f s", len(out), total,
                     f"{rows:,}", rows / (now - t0), (now - t0) * (total - len(out)) / len(out))
    return out


# ---- finding keys again -------------------------------------------------------------

def find_key(path: Path, key, variant) -> list[int]:
    """Line numbers of ``key`` in one file."""
    want = variant.key_value(key)
    hits = []
    with open(path, "rb") as f:
        for n, line in enumerate(f, 1):
            try:
                if variant.key_value(line.split(b"\t", 1)[0]) == want:
                    hits.append(n)
            except ValueError:
                pass
    return hits


def locate_key(key: str, files: list[Path], variant, limit: int = 4) -> list[tuple[Path, int]]:
    """(file, line) of every occurrence of ``key`` in ``files`` (input order), at most
    ``limit``; DuckDB finds the files first, so a large input is not read line by line."""
    import duckdb
    try:
        want = variant.key_value(key)
    except ValueError:
        return []
    con = duckdb.connect()
    try:
        hit = {r[0] for r in con.execute(
            f"SELECT DISTINCT filename FROM read_csv($files, delim='\t', header=false, quote='', escape='', "
            f"auto_detect=false, filename=true, columns={{'k': '{variant.duckdb_type}', 'c': 'VARCHAR', "
            f"'s': 'VARCHAR'}}) WHERE {variant.sort_expr('k')} = $key",
            {"files": [str(f) for f in files], "key": want}).fetchall()}
    except Exception as exc:  # noqa: BLE001 - a failing lookup must not hide the real error
        log.warning("could not search the input for key %r: %s", key, exc)
        return []
    finally:
        con.close()
    out: list[tuple[Path, int]] = []
    for f in (f for f in files if str(f) in hit):
        out += [(f, n) for n in find_key(f, key, variant)][:limit - len(out)]
        if len(out) >= limit:
            break
    return out


def shared_key(path: Path, others: list[Path], variant) -> str | None:
    """A key of ``path`` that one of ``others`` holds too, or None: names the duplicate behind
    a failure that does not say which key it was (MyRocks' snapshot conflict when two
    connections load the same key at once)."""
    import duckdb
    if not others:
        return None
    read = ("read_csv({}, delim='\t', header=false, quote='', escape='', auto_detect=false, "
            f"columns={{{{'k': '{variant.duckdb_type}', 'c': 'VARCHAR', 's': 'VARCHAR'}}}})")
    con = duckdb.connect()
    try:
        row = con.execute(f"SELECT a.k FROM {read.format('$one')} AS a WHERE {variant.sort_expr('a.k')} IN "
                          f"(SELECT {variant.sort_expr('b.k')} FROM {read.format('$others')} AS b) LIMIT 1",
                          {"one": [str(path)], "others": [str(f) for f in others]}).fetchone()
    except Exception as exc:  # noqa: BLE001 - a failing lookup must not hide the real error
        log.warning("could not search the input for the keys of %s: %s", path, exc)
        return None
    finally:
        con.close()
    return None if row is None else str(row[0])


def duplicate_message(key: str, files: list[Path], variant, head: str = "") -> str:
    hits = locate_key(key, files, variant)
    where = " and ".join(f"{f} line {n}" for f, n in hits) if hits else "(not found again in the input)"
    return f"{head}duplicate key {key!r}: {where}"


def explain_duplicate(head: str, key: str, path: Path, input_files: list[Path], variant) -> str:
    """A duplicate-key failure of loading ``path`` in words: both lines when the file
    repeats its own key, else the other file and line; ``path`` not in the input (a
    sorted chunk) names the input's files and lines."""
    if path not in input_files:
        return duplicate_message(key, input_files, variant, f"{head}: ")
    hits = find_key(path, key, variant)
    if len(hits) > 1:
        return f"{head}: line {hits[1]} repeats key {key!r} of line {hits[0]} (duplicate key)"
    others = [f for f in input_files if f != path]
    where = locate_key(key, others, variant, limit=1) if others else []
    line = hits[0] if hits else "?"
    if where:
        return (f"{head}: line {line} key {key!r} was already loaded from {where[0][0]} line "
                f"{where[0][1]} (duplicate key)")
    return f"{head}: duplicate key {key!r} (line {line})"


def pick_lookup_keys(infos: list[FileInfo], n: int, variant, seed: int = 42,
                     max_files: int = LOOKUP_FILES) -> list[tuple]:
    """Up to ``n`` random (key, chunkId, subChunkId) rows from the input: files drawn by
    rows (at most ``max_files`` of them, so a 10^9-row input is not read whole for a
    lookup benchmark; the partitioner's files hold unsorted keys from all over the sky),
    then rows drawn uniformly among those files' rows, one pass over each file."""
    rng = random.Random(seed)
    total = sum(i.rows for i in infos)
    n = min(n, total)
    if n <= 0:
        return []
    cum = list(itertools.accumulate(i.rows for i in infos))
    chosen = sorted({bisect.bisect_right(cum, rng.randrange(total)) for _ in range(max_files)})
    pool = list(itertools.accumulate(infos[fi].rows for fi in chosen))
    wanted: dict[int, set[int]] = {}
    for r in rng.sample(range(pool[-1]), min(n, pool[-1])):
        j = bisect.bisect_right(pool, r)
        wanted.setdefault(chosen[j], set()).add(r - (pool[j - 1] if j else 0) + 1)
    out = []
    for fi, lines in wanted.items():
        with open(infos[fi].path, "rb") as f:
            for no, line in enumerate(f, 1):
                if no in lines:
                    k, c, s = line.rstrip(b"\n").split(b"\t")
                    out.append((variant.parse_key(k), int(c), int(s)))
    rng.shuffle(out)
    return out
