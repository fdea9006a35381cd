"""The secondary-index input straight from the catalog generator (the index study at the
users' scale): ``key \\t chunkId \\t subChunkId`` of every Object, in generation order,
split into the same files with the same bytes and manifest as the partition stage writes
(``partition.write_index_input``) — but with no Source rows, no wide columns, no chunk
files and no staging. Only the base patch's positions are kept; each copy is moved,
located and written, so memory is one copy's rows (bounded by ``catalog.patch.objects``),
whatever the catalog's size. Files are independent: worker processes write them in
parallel, and ``parts`` jobs (on several nodes) each write their share of the files, which
``merge_parts`` then links into one folder per variant. The lines' text: rowtext.py (IndexText).
Speed at 10^8 rows (5.06 M rows/s, 0.35 CPU-us a row on 2 cores), what it costs and what
did not help: index_only.md.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import numpy as np

from ..core.index.input import MANIFEST, write_manifest
from ..core.infra.files import atomic_path, write_all
from ..core.infra.jobs.workers import forkserver_pool
from ..core.sky.copies import copy_layout
from .catalog import _band, generate_patch, layer
from .chunker import Chunker, check_coordinates
from .ids import IdLayout
from .rowtext import IndexText
from .spec import PrepareSpec

log = logging.getLogger(__name__)
WRITE_ROWS = 1 << 16
_STATE: dict = {}  # the patch positions and layout, set in each worker process


def _setup(spec: PrepareSpec):
    """The base patch's positions (the generator is seeded: every process gets the same)
    and the formatter of its lines."""
    patch = generate_patch(spec.catalog).objects
    chunker = Chunker.of(spec.partition.geometry)
    layout = copy_layout(spec.catalog.section)
    # Per copy as lists (a copy of a 100-object patch is located in ~1 us: numpy scalars
    # cost 10 % of it); whole copies (uniform) are found by a division.
    _STATE.update(oid=patch["objectId"].to_numpy(), ra=patch["ra_PS"].to_numpy(),
                  dec=patch["decl_PS"].to_numpy(), layout=layout,
                  copies={k: layout[k].tolist() for k in layout.dtype.names},
                  starts=np.r_[0, np.cumsum(layout["keep"])],   # each copy's first row
                  whole=bool((layout["keep"] == patch.num_rows).all()),
                  chunker=chunker, text=IndexText(WRITE_ROWS), band=None, ids=IdLayout(spec))


def bounds(total: int, n_files: int) -> list[int]:
    """First row of each file (and the end): the partition stage's even split."""
    n_files = min(n_files, total)
    return [total * k // n_files for k in range(n_files + 1)]


def _copy_rows(copy: int, lo: int, hi: int):
    """(objectId, chunkId, subChunkId) of objects lo..hi-1 of one copy. The copies of a
    band (and layer: its dec shift) share their declinations, ra stretch and sub-stripes:
    made once a band."""
    s, c = _STATE, _STATE["copies"]
    key = (c["dec_centre"][copy], c["dec_shift"][copy])
    if s.get("band") is None or s["band"][0] != key:
        _, local_dec = layer(None, s["dec"], 0.0, key[1], c["width"][copy], c["height"][copy])
        dec, stretch = _band(local_dec, key[0])
        check_coordinates(np.zeros_like(dec), dec, where=f"copy {copy}")
        s["band"] = (key, stretch, s["chunker"].sub_stripe(dec), dec)
    _, stretch, sub_stripe, dec = s["band"]
    local_ra = s["ra"][lo:hi]
    if c["ra_shift"][copy]:
        local_ra, _ = layer(local_ra, None, c["ra_shift"][copy], 0.0, c["width"][copy], c["height"][copy])
    ra = np.mod(c["ra_start"][copy] + local_ra * stretch[lo:hi], 360.0)  # as catalog._move
    ra[ra == 360.0] = 0.0  # as locate's check (finite by construction, in [0, 360])
    chunk, sub = s["chunker"].locate_in(ra, sub_stripe[lo:hi])
    return s["ids"].ids(s["oid"][lo:hi], copy, chunk, sub), chunk, sub, ra, dec[lo:hi]


def _batches(first: int, end: int):
    """Rows [first, end) of the whole index, located copy by copy (as the full path does, a
    long copy in pieces), as lists of ``_copy_rows`` pieces of at most ``WRITE_ROWS`` rows."""
    starts, whole, n_obj = _STATE["starts"], _STATE["whole"], len(_STATE["oid"])
    keep = _STATE["copies"]["keep"]
    row = first
    while row < end:
        stop, batch = min(end, row + WRITE_ROWS), []
        while row < stop:
            if whole:
                copy, lo = divmod(row, n_obj)
            else:
                copy = int(np.searchsorted(starts, row, side="right")) - 1
                lo = row - int(starts[copy])
            hi = min(keep[copy], lo + (stop - row))
            batch.append(_copy_rows(copy, lo, hi))
            row += hi - lo
        yield batch


def _write_file(args) -> tuple[str, int, int, int]:
    """Rows [first, end) of the whole index into part-<k>.tsv of both folders, written in
    batches of ``WRITE_ROWS`` rows: with small patches the per-write cost dominated
    (0.05 M rows/s at 100 objects a copy), and a batch bounds the memory."""
    k, first, end, out_numeric, out_char = args
    name = f"part-{k:05d}.tsv"
    with atomic_path(Path(out_numeric) / name) as num_tmp, atomic_path(Path(out_char) / name) as chr_tmp, \
            open(num_tmp, "wb", buffering=0) as num, open(chr_tmp, "wb", buffering=0) as char:
        for batch in _batches(first, end):
            numeric, padded = _STATE["text"].lines(*(np.concatenate([b[i] for b in batch]) for i in range(3)))
            write_all(num.fileno(), numeric)
            write_all(char.fileno(), padded)
    return name, end - first, (Path(out_numeric) / name).stat().st_size, (Path(out_char) / name).stat().st_size


def _write_positions(args) -> tuple[str, int]:
    """Rows [first, end) as a Parquet file of objectId, ra, dec: the generator's catalog as a
    user's files, for the index study from files (prepare/own/index.py) and its benchmark."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    k, first, end, out = args
    name = f"part-{k:05d}.parquet"
    schema = pa.schema([("objectId", pa.int64()), ("ra", pa.float64()), ("dec", pa.float64())])
    with atomic_path(Path(out) / name) as tmp, pq.ParquetWriter(tmp, schema) as w:
        for batch in _batches(first, end):
            cols = [np.concatenate([b[i] for b in batch]) for i in (0, 3, 4)]
            w.write_table(pa.table(dict(zip(schema.names, cols)), schema=schema))
    return name, end - first


def write_positions(spec: PrepareSpec, n_files: int, out, workers: int = 1) -> dict:
    """The whole catalog's objectId, ra, dec in generation order, split evenly into ``n_files``
    Parquet files in ``out``."""
    t0 = time.monotonic()
    _setup(spec)
    total = int(_STATE["starts"][-1])
    b = bounds(total, n_files)
    Path(out).mkdir(parents=True, exist_ok=True)
    tasks = [(k, b[k], b[k + 1], str(out)) for k in range(len(b) - 1)]
    with forkserver_pool(max(1, workers), _setup, (spec,)) as pool:
        written = sum(n for _, n in pool.imap(_write_positions, tasks))
    seconds = time.monotonic() - t0
    log.info("positions: %d files, %d rows in %.1f s", len(tasks), written, seconds)
    return {"files": len(tasks), "rows": written, "seconds": seconds}


def part_files(n_files: int, part: int, parts: int) -> range:
    """Files (numbers) of job ``part`` of ``parts``: an even split of the file numbers."""
    if not 0 <= part < parts:
        raise ValueError(f"part {part} is not in 0..{parts - 1}")
    return range(n_files * part // parts, n_files * (part + 1) // parts)


def generate_index(spec: PrepareSpec, n_files: int, out_numeric, out_char, rows: int | None = None,
                   workers: int = 1, part: int = 0, parts: int = 1) -> dict:
    """Write the index input of the catalog ``spec`` describes (its first ``rows`` rows when
    given) into ``out_numeric`` (objectId keys) and ``out_char`` (CHAR(28) keys); with
    ``parts`` > 1 only the files of ``part`` (each folder's manifest then lists just them)."""
    t0 = time.monotonic()
    _setup(spec)
    whole = int(_STATE["starts"][-1])
    total = whole if rows is None else min(int(rows), whole)
    if total <= 0:
        raise ValueError("the catalog has no objects: nothing to write to the index input")
    if rows is not None and rows > whole:
        raise ValueError(f"index rows {rows} exceed the catalog's {whole} objects; enlarge "
                         f"catalog.patch.objects or catalog.sky")
    b = bounds(total, n_files)
    out_numeric, out_char = Path(out_numeric), Path(out_char)
    for d in (out_numeric, out_char):
        d.mkdir(parents=True, exist_ok=True)
    tasks = [(k, b[k], b[k + 1], str(out_numeric), str(out_char)) for k in part_files(len(b) - 1, part, parts)]
    total = sum(t[2] - t[1] for t in tasks)
    done, written = [], 0
    with forkserver_pool(max(1, workers), _setup, (spec,)) as pool:
        for name, n, num_bytes, chr_bytes in pool.imap(_write_file, tasks):
            done.append((name, n, num_bytes, chr_bytes))
            written += n
            dt = time.monotonic() - t0
            log.info("index input: %d/%d files, %d/%d rows, %.2f M rows/s, ETA %.0f s", len(done),
                     len(tasks), written, total, written / dt / 1e6, dt / max(written, 1) * (total - written))
    write_manifest(out_numeric, {n: {"rows": r, "bytes": nb} for n, r, nb, _ in done}, total)
    write_manifest(out_char, {n: {"rows": r, "bytes": cb} for n, r, _, cb in done}, total)
    seconds = time.monotonic() - t0
    return {"files": len(tasks), "rows": total, "seconds": seconds, "rows_per_s": total / seconds}


def merge_parts(staging: list, out_numeric, out_char) -> dict:
    """One folder per variant from the parts' folders of the same names (``<part>/input``,
    ``<part>/input_char28``, as ``generate_index`` wrote them): files hard-linked (copied
    across filesystems), one manifest over all of them. Two parts naming one file is an error."""
    t0 = time.monotonic()
    totals = {}
    numeric, char = Path(out_numeric).name, Path(out_char).name
    for sub, out in ((numeric, Path(out_numeric)), (char, Path(out_char))):
        out.mkdir(parents=True, exist_ok=True)
        files, rows = {}, 0
        for d in map(Path, staging):
            try:
                doc = json.loads((d / sub / MANIFEST).read_text())
            except (OSError, ValueError) as exc:
                raise ValueError(f"{d / sub / MANIFEST}: unreadable ({exc}); re-run that part's job") from None
            for name, info in doc["files"].items():
                if name in files:
                    raise ValueError(f"{d / sub / name}: written by two parts; re-run the index parts")
                _link(d / sub / name, out / name)
                files[name] = info
            rows += doc["rows"]
        write_manifest(out, files, rows)
        totals[sub] = (len(files), rows)
    if totals[numeric] != totals[char]:
        raise ValueError(f"the parts hold {totals[numeric]} (files, rows) of numeric keys but "
                         f"{totals[char]} of CHAR(28) keys; re-run the index parts")
    files, rows = totals[numeric]
    return {"files": files, "rows": rows, "seconds": time.monotonic() - t0}


def _link(src: Path, dst: Path):
    dst.unlink(missing_ok=True)
    try:
        os.link(src, dst)
    except OSError:   # another filesystem, or one without hard links
        with atomic_path(dst) as tmp:
            tmp.write_bytes(src.read_bytes())
