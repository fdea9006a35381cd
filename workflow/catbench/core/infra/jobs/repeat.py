"""Repetitions that adapt to the noise, in the spirit of hyperfine's minimum runs and time,
without costing the comparison rule its false-alarm rate. With ``max_repetitions`` unset, n is
fixed at ``repetitions``. With it, the first ``repetitions`` runs are a pilot: their spread alone
sets how many runs follow (Stein's two-stage design: as many as bring the half-width of the 95 %
interval of the typical value to ``precision``, at least ``repetitions``, at most
``max_repetitions`` in all), and the figure keeps only the runs after the pilot (``kept``). A
number of runs chosen from the values it is then judged on (stop when the interval looks tight)
picks lucky low spreads: from one distribution such figures were called different 5-9 % of the
time at alpha = 5 %; a number fixed before them keeps the rule's alpha. ``budget_s`` still
stops a figure early (after the pilot and its minimum, never inside them: the time is the
measurements', not their spread's). Every figure's n is in the tables."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


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
    half = float(t_ppf((1 + confidence) / 2, len(ys) - 1)) * ys.std(ddof=1) / math.sqrt(len(ys))
    lo, hi = ys.mean() - half, ys.mean() + half
    return (math.exp(lo), math.exp(hi)) if logs else (float(lo), float(hi))


# An interval is printed only where the data can bound it: from three repetitions up (two give
# one degree of freedom: t = 12.7 at 95 %) and with its upper end at most this many times its
# lower. Elsewhere the figure says so in words (``unbounded``).
BOUND_FACTOR = 10.0
SUGGEST_N = 5          # the repetitions a note proposes, more where this spread needs more
MAX_SUGGEST_N = 30
UNBOUNDED = "cannot bound this"   # the words of a figure's note (report/wording.py finds them)


def _wide(ci: tuple[float, float]) -> bool:
    return ci[0] > 0 and ci[1] / ci[0] > BOUND_FACTOR


def bounded(values, confidence: float = 0.95) -> tuple[float, float] | None:
    """:func:`interval` where the data can bound it (see ``BOUND_FACTOR``), else None."""
    xs = [float(v) for v in values]
    ci = interval(xs, confidence)
    if ci is None or ci[0] == ci[1]:
        return ci
    return None if len(xs) == 2 or (min(xs) > 0 and _wide(ci)) else ci


def _factor(f: float) -> str:
    """'42x'; past 10,000 its power of ten ('over 10^36x'): a 37-digit number reads as noise."""
    return f"{f:,.0f}x" if f < 1e4 else f"over 10^{int(math.log10(f))}x"


def unbounded(values, confidence: float = 0.95) -> str | None:
    """Words for a figure whose repetitions cannot bound its interval ("n = 2 cannot bound
    this; n = 5 would give ±38 %"), from their spread; None where they can (or n < 2: a
    single run says so itself)."""
    xs = np.asarray([float(v) for v in values], dtype=float)
    n = len(xs)
    if bounded(xs, confidence) is not None or n < 2:
        return None
    ci = interval(xs, confidence)
    logs = bool(np.all(xs > 0))
    span = f" (its interval spans {_factor(ci[1] / ci[0])})" if logs and _wide(ci) else ""
    if not logs:
        return f"n = {n} {UNBOUNDED}{span}"
    s = float(np.log(xs).std(ddof=1))
    for m in range(max(SUGGEST_N, n + 1), MAX_SUGGEST_N + 1):
        half = float(t_ppf(0.5 + confidence / 2, m - 1)) * s / math.sqrt(m)
        if math.exp(2 * half) <= BOUND_FACTOR:
            return f"n = {n} {UNBOUNDED}{span}; n = {m} would give ±{100 * math.expm1(half):.0f} %"
    return f"n = {n} {UNBOUNDED}{span}; no n up to {MAX_SUGGEST_N} would at this spread"


# Student's t from scipy.special's ufuncs, equal to scipy.stats.t's to 1e-12: a call costs ~0.6 µs
# against its ~140 µs, and scipy.stats takes ~1.4 s to import (every job's command imports this
# module, few call it). Work on arrays.
def t_ppf(q, df):
    from scipy.special import stdtrit
    return stdtrit(df, q)


def t_sf(x, df):
    from scipy.special import stdtr
    return stdtr(df, -np.asarray(x, dtype=float))


def z_ppf(q):
    """The standard normal's quantile (scipy.stats.norm.ppf's, from scipy.special)."""
    from scipy.special import ndtri
    return ndtri(q)


def binom_ppf(q: float, n: int, p: float) -> int:
    """The least j with P(X ≤ j) ≥ q for X ~ Binomial(n, p) (scipy.stats.binom.ppf's for q > 0)."""
    from scipy.special import bdtr
    return next((j for j in range(n + 1) if bdtr(j, n, p) >= q), n)


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

    @property
    def adaptive(self) -> bool:
        return self.max_n > self.min_n

    def after(self, pilot) -> int:
        """Runs after the pilot that its spread asks for (see the module docstring). A run
        may give several figures (a row each, e.g. a restart's first answer with the buffer
        pool dump off and on): the one that asks for the most runs sets them."""
        xs = np.asarray([[float(v) for v in np.atleast_1d(r)] for r in pilot], dtype=float)
        room = self.max_n - self.min_n
        if len(xs) < 2 or np.any(~(xs > 0)):   # too few, a value <= 0 or missing (NaN)
            return room
        half = float(t_ppf(0.975, len(xs) - 1)) * np.log(xs).std(axis=0, ddof=1).max()   # one run's, log scale
        need = math.ceil((half / math.asinh(self.precision)) ** 2) if self.precision > 0 else room
        return int(min(room, max(self.min_n, need)))

    def more(self, values, elapsed_s: float) -> bool:
        """Whether the figure with these ``values`` (pilot included; after ``elapsed_s``
        seconds) needs another run."""
        n = len(values)
        if n < self.min_n or (self.adaptive and n < 2 * self.min_n and n < self.max_n):
            return True
        if n >= self.max_n or (self.budget_s is not None and elapsed_s >= self.budget_s):
            return False
        return n < self.min_n + self.after(values[:self.min_n])

    def kept(self, values) -> list:
        """The runs a figure keeps: with adaptive repetitions those after the pilot (when any)."""
        return list(values[self.min_n:]) if self.adaptive and len(values) > self.min_n else list(values)
