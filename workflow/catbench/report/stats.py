"""The product's one rule for saying that one choice beats another, and the intervals it
rests on. Every final table, the summary, the report and ``catbench compare`` use these
functions; nothing else in catbench decides what is faster.

Timings are compared on a log scale (a 2x change is the same size up or down, and a
measurement's spread grows with its size). For a figure's repetitions x1..xn:

- its **interval** (``median_interval``; columns ``_ci_low``/``_ci_high``) is the
  ``confidence`` (config ``report.confidence``, default 0.95) Student-t interval of the mean
  of log(x), back-transformed: an interval of the figure's typical (geometric-mean) value.
  It is printed from n >= 3 and where its upper end is at most 10x its lower (n = 2 gives one
  degree of freedom, t = 12.7 at 95 %); elsewhere the figure says in words that its
  repetitions cannot bound it and what n would (``ci_note``, columns ``_ci_note``);
- a **ratio** of two figures (``ratio_interval``, a speed-up) is the ratio of their geometric
  means, with the same test's interval (below) at the same confidence.

The rule (``verdict``): "A is faster than B" only when

1. both have at least ``MIN_N`` = 2 repetitions, some spread and no value <= 0 (otherwise
   'single', 'flat' or 'nonpositive': no test, each in its own words);
2. the two-sided t-test on log values (pooled within-run variance; between runs, plus the
   between-run variance with Welch–Satterthwaite degrees of freedom, ``spread``) rejects "same
   typical value" at ``alpha`` (config ``report.alpha``, default 0.05); and
3. the ratio differs from 1 by more than ``practical_threshold`` (config
   ``report.practical_threshold``, default 0.10 = 10 %).

Otherwise "within noise" (2 fails) or "less than the practical threshold" (3 fails), each
with the smallest ratio it could have seen (``detectable``) and the repetitions that would see
``SEE`` (1.3x).

What it guarantees: when A and B come from one distribution whose log is roughly normal
(timings usually are), it calls a winner at most ``alpha`` of the time, at every n and any
threshold (tests/test_stats.py, tests/test_repeat.py for adaptive repetitions; power: a 1.5x
difference at 20 % spread is called right ~80 % of the time with n = 5). Between runs see
docs/noise.md (tests/test_compare_calibration.py). What it does not guarantee:

- **many comparisons**: each pair is tested at ``alpha``; the findings say how many they
  tested and mark those that hold under Holm's correction (``holm_cutoff``);
- outliers: one repetition far off (a page-cache flush, another process) widens the interval
  and so hides a difference rather than creating one.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field

import numpy as np

from ..core.infra.jobs.repeat import bounded, t_ppf, t_sf, unbounded

MIN_N = 2
DEFAULT_CONFIDENCE = 0.95
DEFAULT_ALPHA = 0.05
DEFAULT_THRESHOLD = 0.10
SEP = ";"               # raw repetitions in a table cell: "1.02;0.98;1.05"


def _clean(values) -> np.ndarray:
    xs = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return np.asarray(xs, dtype=float)


def _logs(xs: np.ndarray) -> np.ndarray | None:
    """log of positive values; None when any is <= 0 (no ratio scale: compared as values)."""
    return np.log(xs) if len(xs) and np.all(xs > 0) else None


def median_interval(values, confidence: float = DEFAULT_CONFIDENCE) -> tuple[float | None, float | None]:
    """The interval of a figure's typical value (see the module docstring); (None, None) for
    fewer than 2 values or where they cannot bound it (``ci_note`` says why)."""
    ci = bounded(_clean(values), confidence)
    return (None, None) if ci is None else ci


@dataclass(frozen=True)
class RunSpread:
    """What comparing two runs adds to a figure's test (log scale): ``var``, the variance one run
    adds to a figure beyond the runs' common offset, known to ``df`` degrees of freedom (inf:
    exactly); ``offset``, the common offset taken off the difference (log A - log B as the test
    is called), and the variance of that estimate, ``offset_var``."""
    var: float = 0.0
    df: float = math.inf
    offset: float = 0.0
    offset_var: float = 0.0


WITHIN = RunSpread()      # two figures of one run: nothing between them


def spread(w, df_w, between: RunSpread = WITHIN):
    """(variance, degrees of freedom) of a difference of log means whose within-run part ``w``
    is known to ``df_w`` degrees of freedom, plus 2 x the between-run variance and the offset's
    variance: Welch–Satterthwaite, so an estimated between-run variance costs degrees of
    freedom. Works on numpy arrays (also in ``between``)."""
    b2 = 2 * np.asarray(between.var, dtype=float)
    v = w + b2 + between.offset_var
    with np.errstate(divide="ignore", invalid="ignore"):
        den = w * w / df_w + np.where(b2 > 0, b2 * b2 / np.asarray(between.df, dtype=float), 0.0)
        return v, np.where(den > 0, v * v / np.maximum(den, 1e-300), np.inf)


def log_diff(la, lb):
    """(d = mean log A - mean log B, w = its within-run variance from the pooled variance,
    df_w, the pooled variance) over the last axis of arrays of log values."""
    na, nb = la.shape[-1], lb.shape[-1]
    df_w = na + nb - 2
    pooled = ((na - 1) * la.var(axis=-1, ddof=1) + (nb - 1) * lb.var(axis=-1, ddof=1)) / df_w
    return la.mean(axis=-1) - lb.mean(axis=-1), pooled * (1 / na + 1 / nb), df_w, pooled


def t_test(d, w, df_w, between: RunSpread = WITHIN):
    """(p, df, se) of the two-sided test of d (log A - log B, the offset taken off) against 0.
    Works on arrays."""
    v, df = spread(w, df_w, between)
    se = np.sqrt(v)
    with np.errstate(divide="ignore", invalid="ignore"):
        return 2 * t_sf(np.abs(d - between.offset) / se, df), df, se


def kind_of(p, x, threshold: float, alpha: float):
    """The tested verdict from p and x = log of how many times better A is: 'noise', 'small',
    'better' or 'worse'. Works on arrays."""
    return np.select([p >= alpha, np.abs(x) <= math.log1p(threshold), x > 0], ["noise", "small", "better"],
                     "worse")


@dataclass(frozen=True)
class Test:
    """The t-test of log(A) against log(B): ratio = geomean(A) / geomean(B) (offset taken off);
    ``p``, ``lo``, ``hi`` None when neither side has any spread (nothing to test); ``pooled``
    the within-run variance of one repetition, ``df`` the test's degrees of freedom."""
    ratio: float
    p: float | None
    lo: float | None
    hi: float | None
    pooled: float = 0.0
    df: float = math.inf
    se: float = 0.0


def log_test(a, b, confidence: float = DEFAULT_CONFIDENCE, between: RunSpread = WITHIN) -> Test | None:
    """Test A against B on log values (pooled within-run variance, plus ``between`` when A and
    B come from different runs). None unless both have >= MIN_N positive values."""
    la, lb = _logs(_clean(a)), _logs(_clean(b))
    if la is None or lb is None or len(la) < MIN_N or len(lb) < MIN_N:
        return None
    d, w, df_w, pooled = (float(x) for x in log_diff(la, lb))
    x = d - between.offset
    if pooled == 0:
        return Test(math.exp(x), None, None, None)
    p, df, se = (float(v) for v in t_test(d, w, df_w, between))
    half = float(t_ppf((1 + confidence) / 2, df)) * se
    return Test(math.exp(x), p, math.exp(x - half), math.exp(x + half), pooled, df, se)


SEE = 1.3               # the difference every "within noise" says how many repetitions would see
POWER = 0.8             # "could see": called right this often
MAX_SEE_N = 100
MDR_SAID = 100          # a smaller ratio a test could not see is said as such, a larger one as "even 100x"


def detectable(pooled, n, between: RunSpread = WITHIN, alpha: float = DEFAULT_ALPHA):
    """The smallest ratio the rule calls at ``POWER`` with ``n`` repetitions a side of this
    within-run variance ``pooled`` (log scale) and ``between``. Works on arrays of n."""
    n = np.asarray(n, dtype=float)
    v, df = spread(pooled * 2 / n, 2 * n - 2, between)
    return np.exp((t_ppf(1 - alpha / 2, df) + t_ppf(POWER, df)) * np.sqrt(v))


def ratio_interval(num, den, confidence: float = DEFAULT_CONFIDENCE) -> tuple[float | None, float | None, float | None]:
    """(geomean(num) / geomean(den), interval low, interval high): e.g. a speed-up = seconds of
    the one-file-at-a-time protocol over seconds of a strategy. No interval unless both have
    >= 2 values."""
    a, b = _clean(num), _clean(den)
    la, lb = _logs(a), _logs(b)
    if la is None or lb is None:
        return None, None, None
    t = log_test(a, b, confidence)
    if t is None:
        return float(math.exp(la.mean() - lb.mean())), None, None
    return t.ratio, t.lo, t.hi


def ci_note(values, confidence: float = DEFAULT_CONFIDENCE) -> str | None:
    """Why a figure of 2 or more values prints no interval (core/infra/jobs/repeat.unbounded)."""
    return unbounded(_clean(values), confidence)


def values_text(values) -> str | None:
    """The raw repetitions as one table cell (the rule needs them, not only the median)."""
    xs = _clean(values)
    return SEP.join(f"{x:.9g}" for x in xs) if len(xs) else None


def parse_values(text) -> tuple:
    if text is None or (isinstance(text, float) and math.isnan(text)) or text == "":
        return ()
    if isinstance(text, (int, float)):
        return (float(text),)
    return tuple(float(v) for v in str(text).split(SEP) if v.strip())


@dataclass(frozen=True)
class Figure:
    """One measured figure over its repetitions (``values``: the raw ones, which the rule tests)."""
    n: int
    median: float | None
    min: float | None
    max: float | None
    lo: float | None        # interval of the typical value (None when n < 2)
    hi: float | None
    values: tuple = field(default=(), compare=False)

    @classmethod
    def of(cls, values, confidence: float = DEFAULT_CONFIDENCE) -> Figure:
        xs = _clean(values)
        if not len(xs):
            return cls(0, None, None, None, None, None)
        lo, hi = median_interval(xs, confidence)
        return cls(len(xs), float(np.median(xs)), float(xs.min()), float(xs.max()), lo, hi,
                   tuple(float(x) for x in xs))

    @classmethod
    def from_row(cls, row: dict, median: str, prefix: str | None = None, n: str = "n",
                 names: tuple[str, ...] | None = None) -> Figure:
        """From a final-table row: the ``median`` column and ``<prefix>_min``, ``_max``,
        ``_ci_low``, ``_ci_high``, ``_values`` (prefix = median), or the ``names`` in that order."""
        p = prefix or median
        cols = names or (f"{p}_min", f"{p}_max", f"{p}_ci_low", f"{p}_ci_high", f"{p}_values")

        def g(k):
            v = row.get(k)
            return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)
        vals = parse_values(row.get(cols[4])) if len(cols) > 4 else ()
        return cls(int(row.get(n) or 0), g(median), *(g(c) for c in cols[:4]), vals)

    def scaled(self, over: float) -> Figure:
        """``over`` / this figure for every value (seconds -> rows/s of the same rows)."""
        return Figure.of([over / v for v in self.values if v]) if self.values else Figure(
            self.n, over / self.median if self.median else None, None, None, None, None)

    @property
    def has_interval(self) -> bool:
        return self.n >= MIN_N and self.lo is not None and self.hi is not None


@dataclass(frozen=True)
class Verdict:
    """The rule's answer for A against B. ``kind``: 'better', 'worse', 'noise' (the test cannot
    tell them apart), 'small' (told apart, but by less than the practical threshold) — the four
    that were tested — or, untested: 'single' (too few repetitions), 'flat' (no spread within
    either figure: nothing to test against), 'nonpositive' (a value <= 0: no ratio scale).
    ``ratio``: how many times better A is than B (geometric means; >= 1 when A is better),
    ``lo``/``hi`` its interval, ``p`` the test's; ``mdr`` the smallest ratio the test would
    call at its n and noise (``detectable``)."""
    kind: str
    ratio: float | None
    a: Figure
    b: Figure
    p: float | None = None
    lo: float | None = None
    hi: float | None = None
    threshold: float = DEFAULT_THRESHOLD
    mdr: float | None = None
    pooled: float = field(default=0.0, compare=False)
    between: RunSpread = field(default=WITHIN, compare=False)
    alpha: float = field(default=DEFAULT_ALPHA, compare=False)

    @property
    def real(self) -> bool:
        return self.kind in ("better", "worse")

    @property
    def tested(self) -> bool:
        return self.kind in ("better", "worse", "noise", "small")

    @property
    def n_see(self) -> int | None:
        """Repetitions a side that would see a SEE x difference; None when no n up to
        MAX_SEE_N would (the between-run spread alone hides it)."""
        ns = np.arange(MIN_N, MAX_SEE_N + 1)
        ok = ns[detectable(self.pooled, ns, self.between, self.alpha) <= SEE]
        return int(ok[0]) if len(ok) else None


_TALLY: list[list] = []


@contextlib.contextmanager
def tally():
    """Count the verdicts given inside the block (a report says how many it judged)."""
    got: list = []
    _TALLY.append(got)
    try:
        yield got
    finally:
        _TALLY.remove(got)


def holm_cutoff(verdicts: list, alpha: float = DEFAULT_ALPHA) -> float:
    """Holm's step-down over the tested verdicts: the largest p that still stands (-1: none)."""
    ps = sorted(v.p for v in verdicts if v.tested and v.p is not None)
    cut = -1.0
    for i, p in enumerate(ps):
        if p > alpha / (len(ps) - i):
            break
        cut = p
    return cut


_HOLM: list[float] = []


@contextlib.contextmanager
def holm(cutoff: float):
    """Inside the block, a finding with p <= ``cutoff`` says that it holds under Holm's correction."""
    _HOLM.append(cutoff)
    try:
        yield
    finally:
        _HOLM.pop()


def holds_under_holm(v: Verdict) -> bool:
    """A real verdict whose p is within the cutoff of the ``holm`` block it is said in."""
    return bool(_HOLM) and v.real and v.p <= _HOLM[-1]


def verdict(a: Figure, b: Figure, *, higher_is_better: bool = False, threshold: float = DEFAULT_THRESHOLD,
            alpha: float = DEFAULT_ALPHA, between: RunSpread = WITHIN) -> Verdict:
    """Is A better than B? See the module docstring for the rule."""
    v = _verdict(a, b, higher_is_better, Rule(threshold, alpha), between)
    for got in _TALLY:
        got.append(v)
    return v


@dataclass(frozen=True)
class Rule:
    threshold: float = DEFAULT_THRESHOLD
    alpha: float = DEFAULT_ALPHA


def _verdict(a: Figure, b: Figure, higher_is_better: bool, rule: Rule, between: RunSpread) -> Verdict:
    base = {"a": a, "b": b, "threshold": rule.threshold, "alpha": rule.alpha, "between": between}
    if a.median is None or b.median is None:
        return Verdict("single", None, **base)
    if a.values and b.values and min(a.values + b.values) <= 0:
        return Verdict("nonpositive", None, **base)
    t = log_test(a.values, b.values, 1 - rule.alpha, between)
    if t is None:
        good, bad = (a.median, b.median) if higher_is_better else (b.median, a.median)
        ratio = good / bad if bad else (math.inf if good else 1.0)
        return Verdict("single", ratio, **base)
    if t.p is None:
        return Verdict("flat", t.ratio if higher_is_better else 1 / t.ratio, **base)
    ratio, lo, hi = (t.ratio, t.lo, t.hi) if higher_is_better else (1 / t.ratio, 1 / t.hi, 1 / t.lo)
    kind = str(kind_of(t.p, math.log(ratio), rule.threshold, rule.alpha))
    mdr = float(np.exp((t_ppf(1 - rule.alpha / 2, t.df) + t_ppf(POWER, t.df)) * t.se))
    return Verdict(kind, ratio, p=t.p, lo=lo, hi=hi, mdr=max(mdr, 1 + rule.threshold), pooled=t.pooled,
                   **base)
