"""What one fit of a load holds (``LoadFit``: its rate curve, bytes per row, phases, the target's
device figures) and the target it is asked about (``PredictTarget``: rows, cache, page cache)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .rate import RateCurve
from .runs import LoadRepetition
from .writes import Writes


@dataclass
class PredictTarget:
    rows: float
    pool: float                    # the engine's cache, bytes
    sort_memory: float | None = None
    time_limit_s: float | None = None
    below_rate: float | None = None
    files: int = 0                 # input files (partition.index_files)
    page_cache: float = 0.0        # bytes of RAM for the table's pages beside the pool (buffered IO; --ram)
    sst_file: float | None = None  # an LSM's SST file size at the target (its settings; lsm.py)


@dataclass
class LoadFit:
    curve: RateCurve
    bpr_slope: float               # table bytes per row (over the rungs' sizes)
    bpr_intercept: float
    pre: tuple[float, float]       # seconds before the first row (scan, sort): (d, e) of d + e·N (pre_line)
    post: tuple[float, float]      # seconds per row after the last row (an index build): (c, α) of c + α log2 N
    cpu_share: float | None        # server CPU-s per second of load (cores busy)
    device: dict                   # the target's fio figures (runs.device), the rungs' median
    spilled: bool                  # a rung's sort ran past its memory (its pre_s holds a spill pass)
    input_per_row: float           # input bytes per row
    x_seen: float                  # the largest table ÷ pool any rung's window reached
    overhead: float = 0.0          # bytes of the cache the table cannot use (pool_overhead)
    cpu_per_row: float | None = None   # server CPU-s per row, the rungs' median
    writes: Writes | None = None       # what a row makes the server write (writes.py)
    sorts: bool = True                 # the strategy sorts its input first (a spill pass is possible)
    miss_share: float | None = None    # an LSM's: a miss RAM served ÷ one the device did (fitted, lsm_costs)
    page_cache_share: float | None = None    # η: the page cache's share that serves the pool's misses (page_cache.py;
                                       # None: no rung measured it, taken as 1)

    @property
    def cache_share(self) -> float | None:
        return self.miss_share if self.miss_share is not None else cache_share(self.device)

    def pool(self, pool: float) -> float:
        """The cache's bytes the table can use: x of the curve is table ÷ this."""
        return pool - self.overhead

    @property
    def calibration(self) -> float | None:
        """K: a miss's cost in the fit ÷ fio's page read (+ write) on the target."""
        miss = self.device.get("page_read_s")
        if self.curve.form != "misses" or not miss:
            return None
        return self.curve.miss_s / (miss + self.device.get("page_write_s", 0.0))

    def table_bytes(self, rows: float) -> float:
        return self.bpr_intercept + self.bpr_slope * rows

    def phase_s(self, t: PredictTarget) -> tuple[float, float]:
        """Seconds before the first row and after the last at ``t``: the rungs' line d + e·N
        before (``pre_line``; plus, for a load that sorts, one pass of the input written and
        read back where ``t``'s sort spills and no rung's did, at fio's sequential rates on the
        target), and the build's per-row cost c + α log2 N after (``build_per_row``)."""
        d, e = self.pre
        pre = d + e * t.rows
        if (self.sorts and e > 0 and t.sort_memory and not self.spilled
                and t.rows * self.input_per_row > t.sort_memory and self.device.get("seq_s_per_byte")):
            pre += t.rows * self.input_per_row * self.device["seq_s_per_byte"]
        c, alpha = self.post
        return pre, max(0.0, t.rows * (c + alpha * math.log2(max(t.rows, 2))))


def pre_line(reps: list[LoadRepetition]) -> tuple[float, float]:
    """(d, e) of the seconds before the first row, d + e·N, a line through every repetition's
    pre_s over its input rows: DuckDB's sort of fixed-width keys (a radix sort) and the input's
    scan cost a row the same at every N, after a start of their own. Measured on this project's
    2-core VM (BIGINT keys, 4 GB of sort memory, n = 2 each): 145, 100 and 80 ns a row at 10^6,
    4 × 10^6 and 1.6 × 10^7 rows, where N log2 N through the origin had them rise 20 %. One
    rung size, or a line below the origin: through the origin (the rungs' least squares)."""
    rows = np.array([r.rung_rows for r in reps], float)
    pre = np.array([r.pre_s for r in reps], float)
    if len(np.unique(rows)) >= 2:
        e, d = np.polyfit(rows, pre, 1)
        if e > 0 and d >= 0:
            return float(d), float(e)
    return 0.0, float(max(0.0, (rows @ pre) / (rows @ rows))) if rows.any() else 0.0


def build_per_row(reps: list[LoadRepetition]) -> tuple[float, float]:
    """(c, α) of a key build's seconds per row, c + α log2 N, through the rungs' builds: a merge
    sort's depth in log2 N, with the intercept for the depth a CPU cache sorts almost free. One
    rung size, or a slope ≤ 0 the rungs' noise made: the rungs' median per N log2 N, through the
    origin."""
    rows = np.array([r.rows for r in reps], float)
    per = np.array([r.post_s for r in reps], float) / rows
    if len(np.unique(rows)) >= 2 and per.max() > 0:
        alpha, c = np.polyfit(np.log2(rows), per, 1)
        if alpha > 0:
            return float(c), float(alpha)
    return 0.0, float(np.median(per / np.log2(np.maximum(rows, 2))))


def cache_share(device: dict) -> float | None:
    """A pool miss the page cache serves ÷ one the device serves, at fio's costs on the target:
    (cache-read + page-write) ÷ (page-read + page-write): the evicted page is written back
    either way. None without fio's cache-read."""
    if not device.get("cache_read_s") or not device.get("page_read_s"):
        return None
    w = device.get("page_write_s", 0.0)
    return (device["cache_read_s"] + w) / (device["page_read_s"] + w)
