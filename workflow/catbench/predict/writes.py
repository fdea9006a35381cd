"""What a row makes the server write, from the rungs' own counters (model.md, "Writes"): its
redo (``Innodb_os_log_written``), the pages its page cleaners flush
(``Innodb_buffer_pool_pages_flushed``: each page as it fills, again each time the redo log's
checkpoint must pass it, and each dirty page the pool evicts), and all the device took; the
device MB/s these make at the target's rate, and the least time a row can take to write them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .runs import PAGE, LoadRepetition

CACHED = 0.05     # a window whose counted misses a row are below this: its leaves were in the pool


@dataclass(frozen=True)
class Writes:
    redo: float | None             # redo bytes a row
    pages: float | None            # pages flushed a row while the leaves are cached
    pages_per_miss: float          # pages flushed more for each counted miss (an evicted dirty leaf)
    device: float | None           # bytes a row the device took while cached (pages, doublewrite, redo)
    device_per_miss: float         # and for each counted miss
    checkpoint_share: float | None  # the largest checkpoint age seen ÷ the redo log's capacity

    def floor_s(self, dev: dict) -> float:
        """The least seconds a cached row can take: the bytes it makes the device write (its redo,
        its flushed pages and their doublewrite copies; 2 × the pages + the redo where the target
        has no device counters) at fio's sequential write rate, the most any device takes. The page
        cleaners write in batches, in the order of the pages, which an in-order load fills in file
        order. A miss's own write-back is in its cost (model.md); 0 without the figures."""
        seq = dev.get("seq_write_s_per_byte")
        if not seq or self.redo is None:
            return 0.0
        written = self.device if self.device is not None else self.redo + 2 * (self.pages or 0.0) * PAGE
        return written * seq

    def at(self, misses: float, seconds: float, rows: float) -> dict:
        """The figures at the target: per row over its load (``misses`` its pool misses a row)
        and the device MB/s at its mean rate (``rows`` in ``seconds``)."""
        dev = None if self.device is None else self.device + self.device_per_miss * misses
        return {"redo_bytes_per_row": self.redo,
                "pages_flushed_per_row": None if self.pages is None else self.pages + self.pages_per_miss * misses,
                "device_write_bytes_per_row": dev,
                "device_write_MBps": None if dev is None or seconds <= 0 else dev * rows / seconds / 1e6,
                "checkpoint_age_share": self.checkpoint_share}


def _stack(reps: list[LoadRepetition], name: str):
    got = [(r.writes[name], r.weight, r.misses) for r in reps if name in r.writes and len(r.writes[name]) == len(r.x)]
    if not got:
        return None
    v, w = np.concatenate([g[0] for g in got]), np.concatenate([g[1] for g in got])
    m = (np.concatenate([g[2] for g in got]) if all(g[2] is not None and len(g[2]) == len(g[0]) for g in got)
         else np.zeros_like(v))
    ok = np.isfinite(v) & np.isfinite(m) & (v >= 0)
    return v[ok], w[ok], m[ok]


def _per_row(reps: list[LoadRepetition], name: str) -> tuple[float | None, float]:
    """(a row's ``name`` while cached, its addition per counted miss): the rows-weighted mean over
    cached windows where no window missed, else least squares on the counted misses (both ≥ 0)."""
    got = _stack(reps, name)
    if got is None or not len(got[0]):
        return None, 0.0
    v, w, m = got
    if np.count_nonzero(m > CACHED) < 3:
        return float(np.average(v, weights=w)), 0.0
    sw = np.sqrt(w)
    coef, *_ = np.linalg.lstsq(np.column_stack([np.ones_like(m), m]) * sw[:, None], v * sw, rcond=None)
    if coef[1] < 0 or coef[0] < 0:
        cached = m <= CACHED
        return (float(np.average(v[cached], weights=w[cached])) if cached.any() else float(np.average(v, weights=w))), 0.0
    return float(coef[0]), float(coef[1])


def fit_writes(reps: list[LoadRepetition]) -> Writes:
    """The writes of one load, from every rung's windows."""
    redo, _ = _per_row(reps, "redo_bytes")
    pages, pages_m = _per_row(reps, "pages_flushed")
    device, device_m = _per_row(reps, "device_write_bytes")
    shares = [float(np.max(r.writes["checkpoint_age_bytes"])) / r.log_bytes for r in reps
              if r.log_bytes and len(r.writes.get("checkpoint_age_bytes", ())) > 0]
    return Writes(redo, pages, pages_m, device, device_m, float(np.median(shares)) if shares else None)
