"""The load rate as a function of x = table ÷ pool, and its integral over the table's
growth (model.md). Pure numerics: no files, no config."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.integrate import cumulative_trapezoid
from scipy.optimize import curve_fit

FORMS = ("steady", "floor", "decay")
PARAMS = {"steady": 1, "floor": 3, "decay": 4}   # the BIC's parameter count (x_c counts)


@dataclass
class RateCurve:
    """rate(x) = r0 while x < x_c, then r1·(x/x_c)^(−k) (``floor``: k = 0; ``steady``:
    x_c = inf, one rate throughout)."""
    form: str
    r0: float
    x_c: float = math.inf
    r1: float | None = None
    k: float = 0.0
    k_se: float | None = None     # the decay's exponent's standard error (the fit's covariance)
    n: int = 0
    rss: float = 0.0              # residual sum of squares of log(rate)
    per_row_s: float = 0.0        # seconds every row adds on top (a file's fixed cost ÷ its rows)

    def base_rate(self, x):
        x = np.asarray(x, dtype=float)
        if self.form == "steady" or self.r1 is None:
            return np.full_like(x, self.r0)
        after = self.r1 * np.power(np.maximum(x, self.x_c) / self.x_c, -self.k)
        return np.where(x < self.x_c, self.r0, after)

    def rate(self, x):
        base = self.base_rate(x)
        return base if self.per_row_s == 0 else 1.0 / (1.0 / base + self.per_row_s)

    def as_dict(self) -> dict:
        return {"form": self.form, "r0_rows_per_s": self.r0,
                "x_c": None if math.isinf(self.x_c) else self.x_c,
                "r1_rows_per_s": self.r1, "k": self.k, "k_se": self.k_se, "points": self.n}


def _wmean(y, w):
    return float(np.sum(w * y) / np.sum(w))


DROP = 0.8   # a break is a collapse: the rate just after it at most this × the rate before


def _suffix(v: np.ndarray) -> np.ndarray:
    """Sums of v[i:] for every i."""
    return np.cumsum(v[::-1])[::-1]


def _best_break(x, y, w, form):
    """(rss, x_c, a0, a1, k) of the best break of ``form`` (floor or decay) over every break
    between two distinct x (at their midpoint), each rss from prefix and suffix sums: a drop
    of the rate (r1 ≤ DROP·r0) and, for decay, no growth after it (k ≥ 0), with a tenth of
    the points (3 at least) after it."""
    o = np.argsort(x, kind="stable")
    x, y, w = x[o], y[o], w[o]
    lx = np.log(x)
    i = np.nonzero(x[1:] > x[:-1])[0] + 1          # left x[:i], right x[i:]
    i = i[len(x) - i >= max(3, len(x) // 10)]
    if len(i) == 0:
        return None
    cw, cy, cyy = np.cumsum(w)[i - 1], np.cumsum(w * y)[i - 1], np.cumsum(w * y * y)[i - 1]
    a0 = cy / cw
    rss_l = cyy - cy * a0
    sw, sy, syy = _suffix(w)[i], _suffix(w * y)[i], _suffix(w * y * y)[i]
    xc = (x[i - 1] + x[i]) / 2
    ok = np.ones(len(i), bool)
    if form == "floor":
        a1, k = sy / sw, np.zeros(len(i))
        rss_r = syy - sy * a1
    else:
        sx, sxx, sxy = _suffix(w * lx)[i], _suffix(w * lx * lx)[i], _suffix(w * lx * y)[i]
        vxx, cxy = sxx - sx * sx / sw, sxy - sx * sy / sw
        ok = vxx > 1e-12
        slope = np.where(ok, cxy / np.where(ok, vxx, 1.0), 0.0)
        rss_r = syy - sy * sy / sw - slope * cxy
        a1, k = (sy - slope * sx) / sw + slope * np.log(xc), -slope    # the line at the break
    ok &= (a1 <= a0 + math.log(DROP)) & (k >= 0)
    if not ok.any():
        return None
    rss = np.where(ok, np.maximum(rss_l, 0) + np.maximum(rss_r, 0), np.inf)
    j = int(np.argmin(rss))
    return float(rss[j]), float(xc[j]), float(a0[j]), float(a1[j]), float(k[j])


def bic(rss: float, n: int, p: int) -> float:
    return n * math.log(max(rss, 1e-12) / n) + p * math.log(n)


def fit_rate(x, rate, weight=None, forms=FORMS) -> RateCurve:
    """Fit log(rate) over x by each form in ``forms`` and keep the one with the lowest BIC
    (a break must pay for its extra parameters). ``weight``: rows behind each point."""
    x, r = np.asarray(x, float), np.asarray(rate, float)
    ok = (x > 0) & (r > 0) & np.isfinite(x) & np.isfinite(r)
    x, r = x[ok], r[ok]
    w = np.ones_like(x) if weight is None else np.asarray(weight, float)[ok]
    w = w / w.mean() if len(w) else w
    if len(x) < 2:
        raise ValueError(f"{len(x)} rate points: a rate curve needs at least 2")
    y, n = np.log(r), len(x)
    a0 = _wmean(y, w)
    fits = {"steady": (float(np.sum(w * (y - a0) ** 2)), math.inf, a0, None, 0.0)}
    for form in forms:
        if form != "steady":
            b = _best_break(x, y, w, form)
            if b is not None:
                fits[form] = b
    form = min((f for f in fits if f in forms), key=lambda f: bic(fits[f][0], n, PARAMS[f]))
    rss, xc, a0, a1, k = fits[form]
    curve = RateCurve(form, math.exp(a0), xc, None if a1 is None else math.exp(a1), k, None, n, rss)
    if form == "decay":
        curve.k, curve.r1, curve.k_se = _refine_decay(x, y, w, xc, a1, k)
    return curve


def _refine_decay(x, y, w, xc, a1, k):
    """The decay's (k, r1, k's standard error) by scipy's least squares at the chosen break:
    the same fit, with its covariance."""
    right = x >= xc
    lx = np.log(x[right] / xc)
    try:
        p, cov = curve_fit(lambda t, a, kk: a - kk * t, lx, y[right], p0=(a1, k),
                           sigma=1 / np.sqrt(w[right]))
        se = float(math.sqrt(cov[1, 1])) if np.all(np.isfinite(cov)) else None
        return float(p[1]), math.exp(float(p[0])), se
    except (RuntimeError, ValueError):
        return k, math.exp(a1), None


def _grid(curve: RateCurve, rows: float, n_c: float, points: int) -> np.ndarray:
    """Row counts from 0 to ``rows``: the break exactly, geometric after it."""
    if rows <= 0:
        return np.array([0.0])
    if n_c >= rows:
        return np.array([0.0, rows])
    start = max(n_c, rows * 1e-9)
    after = np.geomspace(start, rows, points)
    return np.concatenate([[0.0], after]) if start > 0 else after


def cumulative_seconds(curve: RateCurve, rows: float, bytes_per_row: float, pool: float,
                       points: int = 4000) -> tuple[np.ndarray, np.ndarray]:
    """(n, t): seconds t to load the first n rows, time = ∫ dn / rate(x(n)), x(n) = n ×
    bytes_per_row ÷ pool. A constant stretch is exact; the decay, trapezoids on a geometric grid."""
    n_c = curve.x_c * pool / bytes_per_row if math.isfinite(curve.x_c) else math.inf
    n = _grid(curve, float(rows), n_c, points)
    inv = 1.0 / curve.rate(n * bytes_per_row / pool)
    if n_c < rows and n[0] == 0.0 and len(n) > 1:
        # 0..n_c at r0 exactly; the trapezoid must not straddle the break
        t = np.concatenate([[0.0], n[1] * (1 / curve.r0 + curve.per_row_s)
                            + cumulative_trapezoid(inv[1:], n[1:], initial=0.0)])
        return n, t
    return n, cumulative_trapezoid(inv, n, initial=0.0)


def load_seconds(curve: RateCurve, rows: float, bytes_per_row: float, pool: float) -> float:
    """Seconds to load ``rows`` rows into an empty table."""
    return float(cumulative_seconds(curve, rows, bytes_per_row, pool)[1][-1])


def rows_by(curve: RateCurve, seconds: float, rows: float, bytes_per_row: float, pool: float) -> float:
    """Rows loaded after ``seconds`` (at most ``rows``)."""
    n, t = cumulative_seconds(curve, rows, bytes_per_row, pool)
    return float(rows if seconds >= t[-1] else np.interp(seconds, t, n))


def rows_until_rate(curve: RateCurve, rate: float, bytes_per_row: float, pool: float) -> float | None:
    """Rows at which the rate first falls below ``rate`` (None: never, by this curve)."""
    if curve.per_row_s:    # the base rate's threshold: 1/base + per_row_s > 1/rate
        if curve.per_row_s * rate >= 1:
            return 0.0
        rate = 1.0 / (1.0 / rate - curve.per_row_s)
    if curve.r0 < rate:
        return 0.0
    if curve.r1 is None or curve.form == "steady":
        return None
    if curve.r1 < rate:
        return curve.x_c * pool / bytes_per_row
    if curve.k <= 0:
        return None
    x = curve.x_c * (curve.r1 / rate) ** (1 / curve.k)
    return x * pool / bytes_per_row
