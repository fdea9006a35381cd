"""A load's rate as the cost of one row, and its integral over the table's growth
(model.md). Pure numerics: no files, no config.

Seconds per row = a (the cached cost: CPU, log) + what its form adds (the law its rate follows over the rungs):

    steady   nothing                                  (key-ordered, sorted, build-bound loads)
    misses   cache_s × (m(x) − m(ρx)) + miss_s × m(ρx),  m(x) = max(0, 1 − (x_c/x)^p)  (a B-tree
             past its pool: m is the share of inserts whose leaf is not in it, x = table ÷ pool;
             p = 1 for a cache that holds a random x_c/x of the leaves; ρ = pool ÷ (pool + the
             page cache the table can use), 1 without one: a pool miss the page cache holds
             costs cache_s = K × a page read from RAM, one it does not miss_s = K × the device's;
             an LSM's key checks miss its block cache the same way, x = SST bytes ÷ block cache)

plus, in every form, depth_s × (log2 n − depth_ref) where the rungs' windows show it (a row's
compares grow with the tree's depth, n the rows in the table), and at least floor_s a row (the
writes a row forces: predict/writes.py).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from scipy.integrate import cumulative_trapezoid
from scipy.optimize import least_squares, minimize_scalar

FORMS = ("steady", "misses")
MAX_RUNS = 16.0      # the most sorted runs an LSM's key check is taken to probe (m(x)'s ceiling)


def miss_ratio(x, x_c: float, p: float):
    """m(x) = max(0, 1 − (x_c/x)^p): the share of inserts whose leaf is not in the pool."""
    x = np.asarray(x, float)
    with np.errstate(over="ignore"):    # x far below x_c: no misses
        return np.maximum(0.0, 1.0 - (x_c / np.maximum(x, 1e-300)) ** p)


@dataclass
class RateCurve:
    form: str
    a: float                      # seconds per row while cached
    miss_s: float = 0.0           # seconds per row per unit of miss ratio (misses)
    x_c: float = math.inf         # table ÷ pool where leaves start to miss (misses)
    p: float = 1.0                # how fast the hit ratio falls past x_c (misses)
    cache_s: float = 0.0          # seconds per row per unit of pool misses the page cache holds (misses)
    rho: float = 1.0              # pool ÷ (pool + page cache): x of the device's misses is ρx
    depth_s: float = 0.0          # seconds per row per doubling of the table's rows (the tree's depth)
    depth_ref: float = 0.0        # log2 rows at which a holds (the shallowest window); no less is extrapolated
    floor_s: float = 0.0          # the least a row can take: what it makes the device write (writes.py)
    m_max: float = 1.0            # misses a row once nothing is cached: 1 for a B-tree's leaf, the
                                  # sorted runs an LSM's key check probes (fitted)
    n: int = 0
    rss: float = 0.0              # residual sum of squares of log(rate)

    @property
    def r0(self) -> float:
        return 1.0 / self.a

    def miss_ratio(self, x):
        if self.form != "misses":
            return np.zeros_like(np.asarray(x, float))
        return self.m_max * miss_ratio(x, self.x_c, self.p)

    def device_ratio(self, x):
        """The misses a row that neither the pool nor the page cache holds."""
        return self.miss_ratio(np.asarray(x, float) * self.rho)

    def seconds_per_row(self, x, n=None):
        """At table ÷ pool ``x``; with ``n`` (the rows in the table), the depth term and the floor."""
        m, d = self.miss_ratio(x), self.device_ratio(x)
        s = self.a + self.cache_s * (m - d) + self.miss_s * d
        if n is None:
            return s
        if self.depth_s:
            s = s + self.depth_s * (np.log2(np.maximum(n, 2.0 ** self.depth_ref)) - self.depth_ref)
        return np.maximum(s, self.floor_s)

    def with_page_cache(self, rho: float, cache_share: float | None) -> "RateCurve":
        """The curve under a page cache: ρ = pool ÷ (pool + page cache), a pool miss the page
        cache holds costing ``cache_share`` × the device's (fio's cache-read over page-read)."""
        if self.form != "misses" or rho >= 1 or cache_share is None:
            return self
        return dataclasses.replace(self, rho=float(rho), cache_s=self.miss_s * cache_share)

    def rate(self, x):
        return 1.0 / self.seconds_per_row(x)

    def as_dict(self) -> dict:
        fin = (lambda v: v if not isinstance(v, float) or math.isfinite(v) else None)  # noqa: E731
        return {"r0_rows_per_s": self.r0, **{key: fin(getattr(self, f)) for f, key in JSON_KEYS.items()}}


# RateCurve's fields and their keys in a prediction's JSON (``as_dict``, ``curve_of``): one list
JSON_KEYS = {"form": "form", "a": "a_s_per_row", "miss_s": "miss_s_per_row", "x_c": "x_c", "p": "p", "n": "points",
             "cache_s": "cache_s_per_row", "rho": "rho", "depth_s": "depth_s_per_row_per_doubling",
             "depth_ref": "depth_ref_log2_rows", "floor_s": "write_floor_s_per_row", "m_max": "misses_per_row_max"}
# what the rungs' pool alone says: the target's page cache is applied again (``with_page_cache``)
AT_THE_TARGET = ("cache_s", "rho", "n")


def curve_of(fit: dict) -> RateCurve:
    """The curve a prediction's ``fit`` (``RateCurve.as_dict``, in its JSON) describes, at the
    rungs' pool (``with_page_cache`` and the write floor give the target's)."""
    return RateCurve(**{f: fit[key] for f, key in JSON_KEYS.items()
                        if f not in AT_THE_TARGET and fit.get(key) is not None})


def _log_rss(curve: RateCurve, x, y, w) -> float:
    spr = curve.seconds_per_row(x)
    return float(np.sum(w * (y + np.log(spr)) ** 2))


def _linear(cols, inv, w, r):
    """Least squares of seconds per row on ``cols`` (coefficients ≥ 0), weighted so that each
    point's error counts as its relative error (d log r ≈ r × d(1/r))."""
    sw = np.sqrt(w) * r
    coef, *_ = np.linalg.lstsq(np.column_stack(cols) * sw[:, None], inv * sw, rcond=None)
    if np.any(coef < 0):     # the cost a form adds cannot be negative: refit without it
        coef = np.zeros(len(cols))
        coef[0] = np.sum(w * r * r * inv) / np.sum(w * r * r)
    return coef


def fit_rate(x, rate, weight=None, form: str = "steady", misses=None, served: tuple | None = None,
             depth=None, runs: bool = False) -> RateCurve:
    """The curve of ``form`` through the windows (x, rate), weighted by their rows, in
    log(rate). misses: with the windows' measured ``misses`` per row, m(x)'s x_c and p by
    least squares on them, then a and miss_s on the rates over the measured misses; without
    them p = 1 and x_c on every midpoint between distinct x (``_fit_misses``).
    ``served``: (device, cache_share), per window the misses the device served (the rest the page
    cache did, each at ``cache_share`` × a device miss's cost); None: the device served every miss. ``depth``: per
    window log2 of the rows in the table; the depth term is added where the BIC over the windows
    pays for it (``_with_depth``). ``runs``: a row's misses may pass one (an LSM's key check probes
    several sorted runs): m(x)'s ceiling is fitted too."""
    x, r = np.asarray(x, float), np.asarray(rate, float)
    device, cache_share = served or (None, None)
    ok = (x > 0) & (r > 0) & np.isfinite(x) & np.isfinite(r)
    if depth is not None:
        depth = np.asarray(depth, float)
        ok &= np.isfinite(depth)
    if misses is not None:
        misses = np.asarray(misses, float)
        ok &= np.isfinite(misses)
        if device is not None and cache_share is not None:
            device = np.clip(np.nan_to_num(np.asarray(device, float)), 0.0, misses)
            misses, device = misses[ok], device[ok]
        else:
            misses, device = misses[ok], None
    x, r = x[ok], r[ok]
    depth = None if depth is None else depth[ok]
    w = np.ones_like(x) if weight is None else np.asarray(weight, float)[ok]
    w = w / w.mean() if len(w) else w
    if len(x) < 2:
        raise ValueError(f"{len(x)} rate points: a rate curve needs at least 2")
    y, inv = np.log(r), 1.0 / r
    steady = RateCurve("steady", float(np.exp(-np.average(y, weights=w))), n=len(x))
    term = None                  # per window, what the form adds per unit of its coefficient
    if form == "misses" and misses is not None and np.count_nonzero(misses > 0.05) >= 3:
        c = _fit_measured_misses(x, misses, inv, w, r, device, cache_share, runs)
        term = misses if device is None else (misses - device) * cache_share + device
    elif form == "misses":
        c = _fit_misses(x, y, inv, w, r)
        term = None if c is None else miss_ratio(x, c.x_c, c.p)
    else:
        c = steady
    if c is None or c.a <= 0:
        c, term = steady, None
    if c.form != "steady" and c.miss_s <= 0:
        term = None
    c.rss = _log_rss(c, x, y, w)
    return c if depth is None else _with_depth(c, term, depth, (x, y, inv, w, r))


def _with_depth(c: RateCurve, term, depth, pts) -> RateCurve:
    """``c`` refitted with depth_s × (log2 n − the shallowest window's): a, the form's
    coefficient (its shape kept) and depth_s by least squares together, kept where the BIC over
    the windows pays for the parameter and every coefficient is positive; else ``c``."""
    x, y, inv, w, r = pts
    ref = float(np.min(depth))
    cols = [np.ones_like(x)] + ([] if term is None else [term]) + [depth - ref]
    sw = np.sqrt(w) * r
    coef, *_ = np.linalg.lstsq(np.column_stack(cols) * sw[:, None], inv * sw, rcond=None)
    if np.any(coef <= 0):
        return c
    k = 1.0 if term is None else float(coef[1]) / c.miss_s
    d = dataclasses.replace(c, a=float(coef[0]), miss_s=c.miss_s * k, cache_s=c.cache_s * k,
                            depth_s=float(coef[-1]), depth_ref=ref)
    spr = (c.seconds_per_row(x) - c.a) * k + d.a + d.depth_s * (depth - ref)
    d.rss = float(np.sum(w * (y + np.log(spr)) ** 2))
    n = len(x)
    bic = [n * math.log(max(v, 1e-300) / n) + p * math.log(n) for v, p in ((c.rss, len(cols) - 1), (d.rss, len(cols)))]
    return d if bic[1] < bic[0] else c


def _fit_measured_misses(x, m_obs, inv, w, r, d_obs=None, share=None, runs=False) -> RateCurve | None:
    """m(x) through the measured misses per row (x_c, p: weighted least squares), then the
    cached cost a and the cost of a miss by least squares of each window's seconds per row on
    its measured misses: the miss's cost is read from the misses the server counted. With
    ``d_obs`` (the device's share of them) a miss the page cache served counts ``share`` of one
    the device served. ``runs``: the ceiling M of M·m(x) too (1 to MAX_RUNS)."""
    def resid(v):
        return np.sqrt(w) * (m_obs - (v[2] if runs else 1.0) * miss_ratio(x, v[0], v[1]))
    start = float(np.min(x[m_obs > 0.05]))
    top = float(np.clip(np.max(m_obs), 1.0, MAX_RUNS)) if runs else 1.0
    sol = least_squares(resid, x0=[start, 1.0, top],
                        bounds=([1e-3, 0.25, 1.0 - 1e-9], [float(np.max(x)), 8.0, MAX_RUNS if runs else 1.0]))
    cost = m_obs if d_obs is None else (m_obs - d_obs) * share + d_obs
    a, b = _linear([np.ones_like(x), cost], inv, w, r)
    if a <= 0 or b <= 0:
        return None
    return RateCurve("misses", float(a), miss_s=float(b), x_c=float(sol.x[0]), p=float(sol.x[1]), n=len(x),
                     cache_s=0.0 if share is None else float(b * share), m_max=float(sol.x[2]) if runs else 1.0)


def _misses_at(xc, x, y, inv, w, r) -> tuple[float, RateCurve | None]:
    m = np.maximum(0.0, 1.0 - xc / x)
    if np.count_nonzero(m) < 2:
        return math.inf, None
    a, b = _linear([np.ones_like(x), m], inv, w, r)
    if a <= 0 or b <= 0:
        return math.inf, None
    c = RateCurve("misses", float(a), miss_s=float(b), x_c=float(xc), n=len(x))
    return _log_rss(c, x, y, w), c


def _misses_scores(mids, x, y, inv, w, r, block: int = 256) -> np.ndarray:
    """``_misses_at``'s score at every x_c of ``mids`` at once: the same weighted least squares
    of seconds per row on (1, m), solved in closed form for a block of x_c a step."""
    out = np.full(len(mids), math.inf)
    ww = w * r * r              # lstsq's row weights (sqrt(w) r) squared
    sw = ww.sum()
    ibar = float((inv * ww).sum() / sw)
    for lo in range(0, len(mids), block):
        xc = mids[lo:lo + block, None]
        m = np.maximum(0.0, 1.0 - xc / x)
        mbar = (m * ww).sum(axis=1, keepdims=True) / sw
        dm = m - mbar
        b = (dm * ww * (inv - ibar)).sum(axis=1) / np.maximum((dm * dm * ww).sum(axis=1), 1e-300)
        a = ibar - b * mbar[:, 0]
        ok = (np.count_nonzero(m, axis=1) >= 2) & (a > 0) & (b > 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            spr = a[:, None] + b[:, None] * m
            score = (w * (y + np.log(spr)) ** 2).sum(axis=1)
        out[lo:lo + block] = np.where(ok, score, math.inf)
    return out


def _fit_misses(x, y, inv, w, r) -> RateCurve | None:
    """x_c on every midpoint between distinct x, then refined between the neighbours of the
    best (near the break the miss ratio changes fast: a window just past it misses little)."""
    xs = np.unique(x)
    mids = (xs[1:] + xs[:-1]) / 2
    scores = list(_misses_scores(mids, x, y, inv, w, r))
    if not mids.size or not np.isfinite(min(scores)):
        return None
    j = int(np.argmin(scores))
    lo, hi = xs[j], xs[min(j + 1, len(xs) - 1)]
    if j > 0:
        lo = xs[j - 1] if scores[j - 1] < math.inf else lo
    best = minimize_scalar(lambda v: _misses_at(v, x, y, inv, w, r)[0], bounds=(lo, hi), method="bounded",
                           options={"xatol": 1e-4 * hi})
    cand = [_misses_at(mids[j], x, y, inv, w, r), _misses_at(float(best.x), x, y, inv, w, r)]
    return min(cand, key=lambda t: t[0])[1]


def cumulative_seconds(curve: RateCurve, rows: float, bytes_per_row: float, pool: float,
                       points: int = 4000) -> tuple[np.ndarray, np.ndarray]:
    """(n, t): seconds t to load the first n rows, t = ∫ seconds_per_row(x(n)) dn, x(n) = n ×
    bytes_per_row ÷ pool. Exact for steady; trapezoids on a geometric grid (with the break)
    otherwise."""
    rows = float(rows)
    if rows <= 0:
        return np.array([0.0]), np.array([0.0])
    if curve.form == "steady" and not curve.depth_s and curve.floor_s <= curve.a:
        n = np.linspace(0.0, rows, 2)
        return n, n * curve.a
    n = np.geomspace(rows * 1e-9, rows, points)
    if curve.form == "misses":
        for n_c in (curve.x_c * pool / bytes_per_row, curve.x_c / curve.rho * pool / bytes_per_row):
            if 0 < n_c < rows:
                n = np.union1d(n, [n_c])
    n = np.concatenate([[0.0], n])
    return n, cumulative_trapezoid(curve.seconds_per_row(n * bytes_per_row / pool, n), n, initial=0.0)


def load_seconds(curve: RateCurve, rows: float, bytes_per_row: float, pool: float) -> float:
    """Seconds to load ``rows`` rows into an empty table."""
    return float(cumulative_seconds(curve, rows, bytes_per_row, pool)[1][-1])


def rows_by(curve: RateCurve, seconds: float, rows: float, bytes_per_row: float, pool: float) -> float:
    """Rows loaded after ``seconds`` (at most ``rows``)."""
    n, t = cumulative_seconds(curve, rows, bytes_per_row, pool)
    return float(rows if seconds >= t[-1] else np.interp(seconds, t, n))


def rows_until_rate(curve: RateCurve, rate: float, bytes_per_row: float, pool: float) -> float | None:
    """Rows at which the rate first falls below ``rate`` (None: never, by this curve)."""
    extra = 1.0 / rate - curve.a
    if extra <= 0:
        return 0.0
    if curve.form == "misses" and curve.rho < 1:     # two cache levels: on a grid of table ÷ pool
        x = np.geomspace(curve.x_c, curve.x_c / curve.rho * 1e6, 20000)
        past = np.nonzero(curve.seconds_per_row(x) > 1.0 / rate)[0]
        return float(x[past[0]] * pool / bytes_per_row) if past.size else None
    if curve.form == "misses" and curve.miss_s > extra:
        return curve.x_c / (1.0 - extra / curve.miss_s) ** (1.0 / curve.p) * pool / bytes_per_row
    return None
