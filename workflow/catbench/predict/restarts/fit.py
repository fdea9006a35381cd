"""A restart phase's seconds against the quantity that drives it (model.md, "Phases and what
drives them"): a + b·q by least squares over the rungs' repetitions, or, for a cost a byte measured
while the phase moved its bytes, that cost with the totals giving the fixed part; the
prediction interval at the user's quantity."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace

import numpy as np

from ...core.infra.jobs.repeat import t_ppf, z_ppf


@dataclass(frozen=True)
class PhaseFit:
    a: float
    b: float            # seconds a byte of the driver (0: fixed)
    s: float            # residual σ, seconds
    n: int
    q_mean: float
    sxx: float
    q_max: float        # the largest quantity a rung had
    b_high: float = 0.0  # a fixed cost's slope at the upper confidence bound (growth the rungs cannot exclude)
    note: str = ""
    b_point: float = 0.0  # a fixed cost's slope as fitted, when above zero but not told from noise
    b_low: float | None = None  # a measured rate's least cost a unit (the interval's low end past the rungs)
    left_out: int = 0   # repetitions whose quantity the server's log did not give

    @property
    def per_unit(self) -> float:
        """Seconds a unit of the quantity costs, as told or as fitted (what its bound is judged by)."""
        return self.b or self.b_point


SPAN = 1.2   # the least ratio of the rungs' largest quantity to their smallest that tells a slope


def fit(points: list[tuple[float | None, float]], confidence: float = 0.95) -> PhaseFit:
    """a + b·q by least squares over the rungs' repetitions; a fixed cost (their mean) where
    no quantity drives the phase, or where the slope is not above zero at the confidence
    (then ``b_high`` carries the growth the rungs cannot exclude into the interval). A driven
    phase whose rungs span less than :data:`SPAN` is refused (ValueError)."""
    y = np.array([p[1] for p in points], float)
    qs = [p[0] for p in points if p[0] is not None]
    fixed = PhaseFit(float(y.mean()), 0.0, float(y.std(ddof=1)) if len(y) > 1 else 0.0, len(y), 0.0, 0.0,
                max(qs, default=0.0))
    if not qs:
        return fixed
    if len(qs) != len(points):
        # a kill whose log gave no pages to recover (MariaDB prints the count only on some
        # recoveries): fitted on the others, and said, never counted as a quantity of nothing
        return replace(fit([p for p in points if p[0] is not None], confidence), left_out=len(points) - len(qs))
    if len(points) < 3 or max(qs) <= 0 or max(qs) < SPAN * min(qs):
        raise ValueError(f"its quantity spans {max(qs) / min(qs) if min(qs) > 0 else 0:.2f}x over "
                         f"{len(qs)} repetition(s); rungs {SPAN}x apart or more, 3 repetitions or more, tell its slope")
    q = np.array(qs, float)
    qm, sxx = float(q.mean()), float(((q - q.mean()) ** 2).sum())
    b = float(((q - qm) * (y - y.mean())).sum() / sxx)
    a = float(y.mean() - b * qm)
    s = float(math.sqrt(((y - a - b * q) ** 2).sum() / (len(y) - 2)))
    se = s / math.sqrt(sxx)
    t = float(t_ppf(0.5 + confidence / 2, len(y) - 2))
    if b <= t * se:
        return PhaseFit(fixed.a, 0.0, fixed.s, fixed.n, qm, sxx, float(q.max()), max(0.0, b + t * se),
                   "no growth with its quantity told from noise over the rungs: the figure at the slope as "
                   "fitted, the interval from none to the most they cannot exclude", max(0.0, b))
    return PhaseFit(a, b, s, len(y), qm, sxx, float(q.max()))


def interval(f: PhaseFit, q: float | None, confidence: float, floor: float) -> tuple[float, float, float]:
    """(seconds, low, high): the fit's prediction interval at ``q`` (its leverage grows past
    the rungs), with at least ``floor`` × the figure (a run's own noise at the target). A slope
    not told from noise: the figure at the slope as fitted (a quantity that must move still
    costs: treating it as none biased every such figure low), the low end the fixed cost's, the
    high end the growth the rungs cannot exclude."""
    t = float(t_ppf(0.5 + confidence / 2, max(1, f.n - (2 if f.b else 1))))
    y = f.a + f.b * (q or 0.0)
    lev = 1 + 1 / f.n + ((q - f.q_mean) ** 2 / f.sxx if f.b and f.sxx else 0.0)
    z = float(z_ppf(0.5 + confidence / 2))
    half = math.sqrt((t * f.s) ** 2 * lev + (z * floor * y) ** 2)
    past = max(0.0, (q or 0.0) - f.q_mean)
    low = y - half - ((f.b - f.b_low) * past if f.b_low is not None else 0.0)
    return max(0.0, y + f.b_point * past), max(0.0, low), y + half + f.b_high * past


def rate_fit(points: list[tuple[float, float]], per_byte: list[float]) -> PhaseFit:
    """A phase whose cost a byte was measured while it moved them (an SST's copy rate), not
    fitted over totals that a fixed part with steps of its own hides: b the median of those
    costs, a the mean of what each repetition took beyond its bytes at b; the interval's ends
    carry the least and most cost a byte past the rungs."""
    b = statistics.median(per_byte)
    rest = np.array([y - b * q for q, y in points], float)
    q = np.array([p[0] for p in points], float)
    return PhaseFit(float(rest.mean()), b, float(rest.std(ddof=1)) if len(rest) > 1 else 0.0, len(rest), float(q.mean()),
               0.0, float(q.max()), b_high=max(per_byte) - b, b_low=min(per_byte),
               note=f"its cost a byte measured while it copied ({1 / max(per_byte) / 1e6:.0f}–"
                    f"{1 / min(per_byte) / 1e6:.0f} MB/s over {len(per_byte)} repetition(s)), its fixed part "
                    f"{rest.mean():.2f} s")
