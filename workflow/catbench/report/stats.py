"""The product's one rule for saying that one choice beats another, and the intervals it
rests on. Every final table, the summary, the report and ``catbench compare`` use these
functions; nothing else in catbench decides what is faster.

Intervals: the ``confidence`` (config ``report.confidence``, default 0.95) percentile
bootstrap interval of the **median** of a figure's repetitions (``median_interval``), and
of the **ratio of two medians** for speed-ups (``ratio_interval``: both samples resampled
independently). Resampling is seeded, so the same rows always give the same interval.
A single repetition has no interval (NULL / empty); with two or three repetitions the
bootstrap interval of the median is about the range of the values, which is what such a
small sample can honestly say.

The rule (``verdict``): "A is faster than B" only when

1. both have at least two repetitions (a single run is never a finding: "single run"),
2. their intervals of the median do not overlap (the test of significance), and
3. the medians differ by more than ``practical_threshold`` (config
   ``report.practical_threshold``, default 0.10 = 10 %) of the faster one;

otherwise "A and B are within noise (n=…)". Non-overlapping intervals are conservative:
a difference they accept is significant at a level better than ``1 - confidence``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000
SEED = 20131208          # fixed: the same rows always give the same interval
DEFAULT_CONFIDENCE = 0.95
DEFAULT_THRESHOLD = 0.10


def _clean(values) -> np.ndarray:
    xs = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return np.asarray(xs, dtype=float)


def _medians(xs: np.ndarray, resamples: int, rng) -> np.ndarray:
    idx = rng.integers(0, len(xs), size=(resamples, len(xs)))
    return np.median(xs[idx], axis=1)


def median_interval(values, confidence: float = DEFAULT_CONFIDENCE,
                    resamples: int = RESAMPLES) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of the median; (None, None) for fewer than 2 values."""
    xs = _clean(values)
    if len(xs) < 2:
        return None, None
    if np.all(xs == xs[0]):
        return float(xs[0]), float(xs[0])
    meds = _medians(xs, resamples, np.random.default_rng(SEED))
    a = (1 - confidence) / 2
    return float(np.quantile(meds, a)), float(np.quantile(meds, 1 - a))


def ratio_interval(num, den, confidence: float = DEFAULT_CONFIDENCE,
                   resamples: int = RESAMPLES) -> tuple[float | None, float | None, float | None]:
    """(median(num) / median(den), interval low, interval high): e.g. a speed-up = seconds of
    the seed's protocol over seconds of a strategy. No interval unless both have >= 2 values."""
    a, b = _clean(num), _clean(den)
    if not len(a) or not len(b) or np.median(b) == 0:
        return None, None, None
    ratio = float(np.median(a) / np.median(b))
    if len(a) < 2 or len(b) < 2:
        return ratio, None, None
    rng = np.random.default_rng(SEED)
    ra, rb = _medians(a, resamples, rng), _medians(b, resamples, rng)
    ok = rb != 0
    r = ra[ok] / rb[ok]
    q = (1 - confidence) / 2
    return ratio, float(np.quantile(r, q)), float(np.quantile(r, 1 - q))


@dataclass(frozen=True)
class Figure:
    """One measured figure over its repetitions."""
    n: int
    median: float | None
    min: float | None
    max: float | None
    lo: float | None        # interval of the median (None when n < 2)
    hi: float | None

    @classmethod
    def of(cls, values, confidence: float = DEFAULT_CONFIDENCE) -> Figure:
        xs = _clean(values)
        if not len(xs):
            return cls(0, None, None, None, None, None)
        lo, hi = median_interval(xs, confidence)
        return cls(len(xs), float(np.median(xs)), float(xs.min()), float(xs.max()), lo, hi)

    @classmethod
    def from_row(cls, row: dict, median: str, prefix: str | None = None, n: str = "n",
                 names: tuple[str, str, str, str] | None = None) -> Figure:
        """From a final-table row: the ``median`` column and ``<prefix>_min``, ``_max``,
        ``_ci_low``, ``_ci_high`` (prefix = median), or the four ``names`` in that order."""
        p = prefix or median
        cols = names or (f"{p}_min", f"{p}_max", f"{p}_ci_low", f"{p}_ci_high")

        def g(k):
            v = row.get(k)
            return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)
        return cls(int(row.get(n) or 0), g(median), *(g(c) for c in cols))

    @property
    def has_interval(self) -> bool:
        return self.n >= 2 and self.lo is not None and self.hi is not None


@dataclass(frozen=True)
class Verdict:
    """The rule's answer for A against B (``kind``: 'better', 'worse', 'noise', 'single')."""
    kind: str
    ratio: float | None      # how many times better A is than B (>= 1 when A is better)
    a: Figure
    b: Figure

    @property
    def real(self) -> bool:
        return self.kind in ("better", "worse")


def verdict(a: Figure, b: Figure, *, higher_is_better: bool = False,
            threshold: float = DEFAULT_THRESHOLD) -> Verdict:
    """Is A better than B? See the module docstring for the rule."""
    if a.median is None or b.median is None:
        return Verdict("single", None, a, b)
    good, bad = (a.median, b.median) if higher_is_better else (b.median, a.median)
    ratio = good / bad if bad else (math.inf if good else 1.0)
    if not (a.has_interval and b.has_interval):
        return Verdict("single", ratio, a, b)
    apart = a.hi < b.lo or b.hi < a.lo
    big = max(ratio, 1 / ratio if ratio else math.inf) - 1 > threshold
    if not (apart and big):
        return Verdict("noise", ratio, a, b)
    return Verdict("better" if ratio > 1 else "worse", ratio, a, b)


# ---------------------------------------------------------------- wording
def fmt(v, unit: str = "") -> str:
    """A figure with 3 significant digits (thousands separated), and its unit."""
    if v is None or (isinstance(v, float) and (math.isnan(v) or math.isinf(v))):
        return "–"
    a = abs(v)
    if a >= 1000:
        s = f"{v:,.0f}"
    elif a >= 100:
        s = f"{v:.0f}"
    elif a >= 10:
        s = f"{v:.1f}"
    elif a >= 1:
        s = f"{v:.2f}"
    elif a == 0:
        s = "0"
    else:
        s = f"{v:.3g}"
    return f"{s} {unit}".rstrip() if unit and unit not in ("x", "%") else s + unit


def interval_text(f: Figure, unit: str = "", bold: bool = False) -> str:
    """'1.32 s [1.20–1.41, n=3]' (the interval of the median), or '1.32 s [single run]';
    ``bold`` marks the median up as **Markdown**."""
    if f.n == 0 or f.median is None:
        return "not measured"
    med = f"**{fmt(f.median, unit)}**" if bold else fmt(f.median, unit)
    if not f.has_interval:
        return f"{med} [single run]" if f.n == 1 else f"{med} [n={f.n}]"
    return f"{med} [{fmt(f.lo)}–{fmt(f.hi)}, n={f.n}]"


def versus(b_name: str, v: Verdict, *, unit: str = "", better: str = "faster", worse: str = "slower") -> str:
    """The rule's answer for A against ``b_name``, as the second half of a sentence about A."""
    fb = f"{b_name}, {interval_text(v.b, unit)}"
    if v.kind == "single":
        return f"{fmt(v.ratio, 'x')} the speed of {fb} — a single run is not a finding"
    if v.kind == "noise":
        return f"within noise of {fb} (n={v.a.n} vs {v.b.n})"
    if v.kind == "better":
        return f"{fmt(v.ratio, 'x')} {better} than {fb}"
    return f"{fmt(1 / v.ratio if v.ratio else None, 'x')} {worse} than {fb}"


def sentence(a_name: str, b_name: str, v: Verdict, *, unit: str = "", better: str = "faster",
             worse: str = "slower") -> str:
    """The rule's answer in words, with both figures and their intervals."""
    both = f"{interval_text(v.a, unit)} vs {interval_text(v.b, unit)}"
    if v.kind == "single":
        return f"{a_name} vs {b_name}: {both} — single runs, not a finding."
    if v.kind == "noise":
        return f"{a_name} and {b_name} are within noise (n={v.a.n} vs {v.b.n}): {both}."
    word, ratio = (better, v.ratio) if v.kind == "better" else (worse, 1 / v.ratio if v.ratio else None)
    return f"{a_name} is {fmt(ratio, 'x')} {word} than {b_name}: {both}."


def short(v: Verdict, a_name: str = "A", b_name: str = "B", better: str = "better",
          worse: str = "worse") -> str:
    """The rule's answer in a few words (for ``catbench compare``)."""
    if v.kind == "single":
        return f"not a finding: single run (n={v.a.n} vs {v.b.n})"
    if v.kind == "noise":
        return f"within noise (n={v.a.n} vs {v.b.n})"
    ratio = v.ratio if v.kind == "better" else (1 / v.ratio if v.ratio else None)
    return f"{a_name if v.kind == 'better' else b_name} {better} by {fmt(ratio, 'x')} (intervals apart)"
