"""Repetitions that adapt to the noise, in the spirit of hyperfine's minimum runs and time:
a measurement repeats until it has ``repetitions`` runs and its interval is as tight as asked
(``precision``: the half-width of the 95 % interval of its typical value, relative to it), or
until ``max_repetitions`` or its time budget ``budget_s``. Fast figures so get many runs and
slow ones few; every figure's n is in the tables. With ``max_repetitions`` unset, n is fixed
at ``repetitions``. The interval is the one the report uses (``interval``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps


def interval(values, confidence: float = 0.95) -> tuple[float, float] | None:
    """The Student-t interval of the mean of log(values), back-transformed (for values > 0; of
    the values themselves otherwise); None for fewer than 2 values."""
    xs = np.asarray([float(v) for v in values], dtype=float)
    if len(xs) < 2:
        return None
    if np.all(xs == xs[0]):
        return float(xs[0]), float(xs[0])
    logs = bool(np.all(xs > 0))
    ys = np.log(xs) if logs else xs
    half = sps.t.ppf((1 + confidence) / 2, len(ys) - 1) * ys.std(ddof=1) / math.sqrt(len(ys))
    lo, hi = ys.mean() - half, ys.mean() + half
    return (math.exp(lo), math.exp(hi)) if logs else (float(lo), float(hi))


@dataclass(frozen=True)
class Repeats:
    min_n: int
    max_n: int
    precision: float
    budget_s: float | None

    @classmethod
    def of(cls, section: dict) -> Repeats:
        """From a config section's ``repetitions``, ``max_repetitions``, ``precision``, ``budget_s``."""
        n = int(section["repetitions"])
        top = section.get("max_repetitions")
        return cls(n, max(n, int(top)) if top else n, float(section.get("precision") or 0.0),
                   section.get("budget_s"))

    def more(self, values, elapsed_s: float) -> bool:
        """Whether the figure with these ``values`` (after ``elapsed_s`` seconds) needs another run."""
        n = len(values)
        if n < self.min_n:
            return True
        if n >= self.max_n or (self.budget_s is not None and elapsed_s >= self.budget_s):
            return False
        ci = interval(values)
        if ci is None or ci[0] <= 0:
            return True
        centre = math.sqrt(ci[0] * ci[1])
        return (ci[1] - ci[0]) / 2 / centre > self.precision
