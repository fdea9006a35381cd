"""The page cache as a second cache level below the engine's (model.md, ρ and η): how much of
the RAM beside the server serves the engine's misses. ρ = pool ÷ (pool + η × page cache); η = 1
adds the page cache to the pool, η = 0 gives it none of the table (it holds the log, the input
files, compaction's and the page cleaners' writes, and copies of what the pool holds). η is
fitted on the rungs' own device reads against the page cache each rung really had
(``LoadRepetition.page_cache_seen``: its memory cgroup's limit less the server's own bytes, sampled)."""

from __future__ import annotations

import numpy as np

from .rate import RateCurve
from .runs import LoadRepetition

SHARES = np.linspace(0.0, 1.0, 101)
# The rungs tell η apart only where η = 0 and η = 1 put a window's device reads this far apart
# (misses a row): a rung whose table its page cache held whole, or one past both caches, cannot.
MIN_SPLIT = 0.05


def _windows(reps: list[LoadRepetition], overhead: float):
    """Per window of the rungs that say where their misses were served: x, the device reads a
    row, the rung's pool and its page cache, and the rows."""
    use = [r for r in reps if r.buffered and r.page_cache_seen is not None and r.misses is not None
           and r.device_reads is not None and len(r.device_reads) == len(r.x)]
    if not use:
        return None
    def per_window(value) -> np.ndarray:
        return np.concatenate([np.broadcast_to(np.asarray(value(r), float), r.x.shape) for r in use])
    return (per_window(lambda r: r.x), np.nan_to_num(per_window(lambda r: r.device_reads)),
            per_window(lambda r: r.pool - overhead), per_window(lambda r: r.page_cache_seen),
            per_window(lambda r: r.weight))


def fit_share(curve: RateCurve, reps: list[LoadRepetition], overhead: float = 0.0) -> float | None:
    """η in [0, 1], least squares of the rungs' windows' device reads a row against the curve's
    m(ρx) (rows-weighted); None where no rung measured it or η = 0 and 1 predict the same."""
    if curve.form != "misses":
        return None
    got = _windows(reps, overhead)
    if got is None:
        return None
    x, d, pool, page, w = got
    pred = np.array([curve.miss_ratio(x * pool / (pool + share * page)) for share in SHARES])
    if np.max(np.abs(pred[0] - pred[-1])) < MIN_SPLIT:
        return None
    sse = np.sum(w * (pred - d) ** 2, axis=1)
    return float(SHARES[int(np.argmin(sse))])
