"""The czar's part of a query: what the whole query takes beyond its chunk queries (Qserv's
czar looks objectId → chunkId up in the secondary index, builds and sends the chunk queries,
merges their results and returns them). At each rung it is the median whole-query time less the
chunk part the model prices for that rung at its own size on one server, kept ≥ 0; it is fitted
against what drives it: the log2 of the index's rows for a lookup (the B-tree's depth), the
chunk queries the class sends for the rest (a dispatch and a merge each)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .runs import CLASSES

SPREAD = 0.05       # the rungs' quantities must span 5 % of the largest to tell a slope (as the chunk fit)


@dataclass(frozen=True)
class RungCzar:
    """One rung's inputs to the czar fit."""
    x: float                # its quantity: log2 of the index's rows, or the chunk queries sent
    reps: np.ndarray        # its whole-query seconds, one a repetition
    driver: np.ndarray      # its own chunks' drivers, for the chunk part at its own size
    connections: int
    size: float             # its data bytes: the largest rung carries its cost a unit
    med: np.ndarray | None = None   # a box class's own chunk medians (NaN: not timed), else None


@dataclass(frozen=True)
class CzarLaw:
    """Czar seconds = intercept + slope × quantity (≥ 0)."""
    intercept: float
    slope: float
    told: bool              # False: the rungs could not tell a slope; the largest rung's cost a unit
    miss: float             # the law's largest miss at the rungs ÷ its value at the largest rung

    def at(self, x: float) -> float:
        return max(0.0, self.intercept + self.slope * x)


def unit(query: str) -> str:
    return "log2 index row" if CLASSES[query][1] == "lookup" else "chunk query"


def quantity(query: str, index_rows: float, chunk_queries: int) -> float:
    """What drives the czar's part of ``query``: the index's depth for a lookup, else the chunk queries."""
    return math.log2(max(index_rows, 2.0)) if CLASSES[query][1] == "lookup" else float(chunk_queries)


def fit_czar(x: np.ndarray, y: np.ndarray, big: int) -> CzarLaw:
    """The czar's law over the rungs (``big``: the largest's index). Where the rungs cannot tell
    a slope (one rung, quantities too close, or a slope ≤ 0) the largest rung's cost a unit is
    carried to the user's quantity: growth is assumed, never its absence."""
    if len(y) >= 2 and np.ptp(x) > SPREAD * np.max(x):
        # least squares in closed form: np.polyfit's overhead, 200 draws a class, is most of the answer's time
        dx = x - x.mean()
        slope = float(dx @ (y - y.mean()) / (dx @ dx))
        if slope > 0:
            return _law(float(y.mean() - slope * x.mean()), slope, True, x, y, big)
    if x[big] > 0:
        return _law(0.0, float(y[big] / x[big]), False, x, y, big)
    return _law(float(y[big]), 0.0, False, x, y, big)


def _law(a: float, b: float, told: bool, x: np.ndarray, y: np.ndarray, big: int) -> CzarLaw:
    fitted = np.maximum(a + b * x, 0.0)
    # relative to the largest rung's value: a rung whose czar part is ~0 does not blow it up
    miss = float(np.max(np.abs(y - fitted)) / fitted[big]) if fitted[big] > 0 else 0.0
    return CzarLaw(a, b, told, miss)


def residuals(rungs: list[RungCzar], chunk_s: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
    """Each rung's czar part: its median whole query (its repetitions resampled with ``rng``)
    less ``chunk_s``, its chunk part; ≥ 0."""
    med = np.array([_median(r.reps if rng is None else r.reps[rng.integers(0, len(r.reps), len(r.reps))])
                    for r in rungs])
    return np.maximum(med - chunk_s, 0.0)


def _median(a: np.ndarray) -> float:
    s = np.sort(a)      # np.median's overhead is ten times this on a rung's few repetitions
    return float(s[(len(s) - 1) // 2] + s[len(s) // 2]) / 2
