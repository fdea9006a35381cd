"""What to expect of a B-tree load of the index input, before it runs: the insert working
set (the B-tree leaves a window of consecutive inserts keeps open) against the load's
buffer pool, from a sample of the input itself. The model and its limits: working_set.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv

from ..core.index.input import list_input
from ..core.infra.files import atomic_path
from .arrays import numpy
from .spec import PoolSetup

ORDERED_FILL, RANDOM_FILL = 15 / 16, 0.69
# Bytes a row takes in a leaf page: load/estimate.md's measured table bytes per row of the
# sorted loads (pages ~15/16 full), times 15/16. Both variants' keys sort alike (CHAR(28)
# keys are the zero-padded digits), so ranks are read once, from the numeric form.
ROW_BYTES = {"char28": 61.3 * 15 / 16, "bigint": 37.4 * 15 / 16}
DONE = 0.9              # a leaf that gets this share of its rows within the window is filled and left
MAX_WINDOW = 2_000_000  # rows, unless 4 pools' pages are more
REFERENCE_ROWS = 4_000_000
_BLOCK = 1 << 16


def rows_per_leaf(variant: str, page: int, ordered: bool) -> int:
    return max(2, int(page * (ORDERED_FILL if ordered else RANDOM_FILL) / ROW_BYTES[variant]))


def _keys_of(data: bytes) -> np.ndarray:
    if not data:
        return np.empty(0, np.int64)
    # An Arrow buffer read on this thread: a 64 KiB block gains nothing from Arrow's pool,
    # and no Python object is then called from Arrow's threads.
    t = pcsv.read_csv(pa.BufferReader(data),
                      read_options=pcsv.ReadOptions(column_names=["k", "c", "s"], use_threads=False),
                      parse_options=pcsv.ParseOptions(delimiter="\t"),
                      convert_options=pcsv.ConvertOptions(column_types={"k": pa.int64()},
                                                          include_columns=["k"]))
    return numpy(t["k"])


def reference(files: list[Path], total: int, rows: int = REFERENCE_ROWS) -> np.ndarray:
    """A sorted sample of every key (all of them up to ``rows``): evenly spaced blocks of
    every file, whole lines only; its ranks stand for the final table's."""
    share = min(1.0, rows / max(total, 1))
    keys = []
    for f in files:
        size = f.stat().st_size
        if share >= 1.0:
            keys.append(_keys_of(f.read_bytes()))
            continue
        blocks = max(1, round(share * size / _BLOCK))
        with open(f, "rb") as fh:
            for off in np.linspace(0, max(0, size - _BLOCK), blocks).astype(np.int64):
                fh.seek(int(off))
                data = fh.read(_BLOCK)
                start = 0 if off == 0 else data.find(b"\n") + 1
                keys.append(_keys_of(data[start:data.rfind(b"\n") + 1]))
    return np.sort(np.concatenate(keys))


def stretch(files: list[Path], file_rows: list[int], first: int, n: int) -> np.ndarray:
    """Keys of rows [first, first + n) of the input, in file (arrival) order."""
    out, start = [], 0
    for f, rows in zip(files, file_rows):
        lo, hi = max(first, start), min(first + n, start + rows)
        if lo < hi:
            out.append(_keys_of(f.read_bytes())[lo - start:hi - start])
        start += rows
    return np.concatenate(out) if out else np.empty(0, np.int64)


def open_leaves(keys: np.ndarray, ref: np.ndarray, total: int, per_leaf: int) -> int:
    """Leaves (of ``per_leaf`` rows, by the keys' ranks in the final table) that ``keys``
    touch without filling them: those stay open for later inserts."""
    rank = np.searchsorted(ref, keys) * (total / len(ref))
    _, count = np.unique((rank // per_leaf).astype(np.int64), return_counts=True)
    return int((count < DONE * per_leaf).sum())


def estimate(input_dir, setup: PoolSetup, variants=tuple(ROW_BYTES)) -> dict:
    """The working set of each variant's load of ``input_dir`` (numeric keys) with the
    pool ``setup`` describes (``spec.PoolSetup``)."""
    files = list_input(input_dir)
    manifest = json.loads((Path(input_dir) / "manifest.json").read_text())
    file_rows = [manifest["files"][f.name]["rows"] for f in files]
    total = sum(file_rows)
    pool_bytes, page = int(setup.pool_bytes), int(setup.page_bytes)
    pages = max(1, pool_bytes // page)
    ref = reference(files, total)
    ends = {"middle": total // 2, "end": total}
    window = max(1, min(max(4 * pages, MAX_WINDOW), total // 2))
    windows = {k: stretch(files, file_rows, max(0, e - window), window) for k, e in ends.items()}
    ascending = float(np.mean(np.diff(windows["end"]) > 0)) if window > 1 else 1.0
    out = {"rows": total, "files": len(files), "pool_bytes": pool_bytes, "page_bytes": page,
           "pool_pages": pages, "id_layout": setup.id_layout, "order": setup.order,
           "reference_rows": len(ref), "rank_step_rows": round(total / len(ref), 2),
           "ascending_share": round(ascending, 4), "variants": {}}
    for v in variants:
        per_leaf = rows_per_leaf(v, page, ascending > 0.5)
        w = min(window, pages * per_leaf)
        sets = {k: open_leaves(keys[-w:], ref, total, per_leaf) for k, keys in windows.items()}
        leaves = -(-total // per_leaf)
        out["variants"][v] = {
            "rows_per_leaf": per_leaf, "window_rows": w, "leaves": leaves,
            "table_over_pool": round(leaves / pages, 4),
            "working_set_pages": sets["end"], "working_set_pages_middle": sets["middle"],
            "working_set_over_pool": round(sets["end"] / pages, 4),
            "collapse_expected": sets["end"] > pages}
    return out


def write(input_dir, setup: PoolSetup, out) -> dict:
    doc = estimate(input_dir, setup)
    with atomic_path(out) as tmp:
        Path(tmp).write_text(json.dumps(doc, indent=1) + "\n")
    return doc
