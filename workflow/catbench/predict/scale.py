"""A load's time and table bytes at N rows from the rungs of one load (target × variant ×
engine × strategy × id layout), with an interval, its regime, or a refusal (model.md)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from .rate import RateCurve, bic, fit_rate, load_seconds, rows_by, rows_until_rate
from .runs import Rep

SORT_BOUND = 0.5      # the phases before/after the rows at least this share of the time
MAX_SCALE_EXP = 1.0   # |s| of rate ∝ N^-s at a given table ÷ pool, at most


class Refusal(ValueError):
    """The model does not support this prediction; the message says why."""


@dataclass
class Target:
    rows: float
    pool: float                    # the engine's cache, bytes
    sort_memory: float | None = None
    time_limit_s: float | None = None
    below_rate: float | None = None
    files: int = 0                 # input files (partition.index_files): each has a fixed cost


@dataclass
class Fit:
    curve: RateCurve
    bpr_slope: float               # table bytes per row (over the rungs' sizes)
    bpr_intercept: float
    pre_coef: float                # seconds ÷ (N log2 N) before the first row
    post_coef: float               # … after the last row
    cpu_share: float | None        # server CPU-s per second of load (cores busy)
    scale_exp: float = 0.0         # s: at a given x the rate goes as (N / n_ref)^-s
    n_ref: float = 1.0             # the largest rung's rows (the curve's own scale)
    file_cost: float = 0.0         # seconds every input file costs whatever its rows
    pool_overhead: float = 0.0     # bytes of the cache the table cannot use (_pool_overhead)

    def pool(self, pool: float) -> float:
        """The cache's bytes the table can use: x of the curve is table ÷ this."""
        return pool - self.pool_overhead

    def curve_at(self, rows: float, files: int = 0) -> RateCurve:
        """The rate curve of a load of ``rows`` rows in ``files`` input files."""
        c = (rows / self.n_ref) ** -self.scale_exp
        return dataclasses.replace(self.curve, r0=self.curve.r0 * c,
                                   r1=None if self.curve.r1 is None else self.curve.r1 * c,
                                   per_row_s=self.file_cost * files / rows if files and rows > 0 else 0.0)

    def table_bytes(self, rows: float) -> float:
        return self.bpr_intercept + self.bpr_slope * rows

    def phase_s(self, rows: float) -> tuple[float, float]:
        nl = rows * math.log2(max(rows, 2))
        return self.pre_coef * nl, self.post_coef * nl


def _nlogn(rows: float) -> float:
    return rows * math.log2(max(rows, 2))


def _rung_residuals(reps: list[Rep], curve_of) -> list[tuple[float, float, float]]:
    """(N, mean log-residual, √rows) per rung: the rows-weighted mean of log(rate) less log of
    ``curve_of(N, files)``'s rate at the same x."""
    out = []
    for n in sorted({r.rung_rows for r in reps}):
        same = [r for r in reps if r.rung_rows == n]
        x, rate = np.concatenate([r.x for r in same]), np.concatenate([r.rate for r in same])
        w = np.concatenate([r.weight for r in same])
        ok = (x > 0) & (rate > 0) & np.isfinite(x) & np.isfinite(rate)
        if ok.any():
            model = curve_of(n, same[0].files).rate(x[ok])
            out.append((float(n), float(np.average(np.log(rate[ok]) - np.log(model), weights=w[ok])),
                        float(np.sqrt(w[ok].sum()))))
    return out


def _scale_exp(reps: list[Rep], curve: RateCurve) -> float:
    """s of rate ∝ N^-s at a given x (N the rung's rows): each rung's rows-weighted mean
    log-residual against the common curve, regressed on log N (0 with one rung): what changes
    with the scale at a given table ÷ cache besides the pool's hit ratio (an LSM's levels and
    compactions where the config does not write out their sizes for the ladder to scale)."""
    res = _rung_residuals(reps, lambda n, files: curve)
    if len(res) < 2:
        return 0.0
    ln, mean, wt = zip(*((math.log(n), m, w) for n, m, w in res))
    return float(np.clip(-np.polyfit(ln, mean, 1, w=wt)[0], -MAX_SCALE_EXP, MAX_SCALE_EXP))


GRID = 24   # the per-file cost's and the pool overhead's grids (and 0)
MAX_OVERHEAD = 0.6   # the pool overhead at most this share of the smallest rung's pool


def _without_file_cost(reps: list[Rep], cost: float) -> list[Rep]:
    """The rates with ``cost`` seconds per input file taken out (a rung's files hold
    rung_rows ÷ files rows each, so the cost per row is cost × files ÷ rung_rows)."""
    if cost <= 0:
        return reps
    return [dataclasses.replace(r, rate=1.0 / (1.0 / r.rate - cost * r.files / r.rung_rows)) for r in reps]


def _without_overhead(reps: list[Rep], overhead: float) -> list[Rep]:
    """x as table ÷ (pool − ``overhead``): the cache's bytes the table can use."""
    if overhead <= 0:
        return reps
    return [dataclasses.replace(r, x=r.x * r.pool / (r.pool - overhead)) for r in reps]


def _by_bic(reps: list[Rep], grid, take_out) -> float:
    """The value of ``grid`` (0 first) whose ``take_out(reps, value)`` the rungs' common
    curve fits best by the BIC, a value other than 0 paying for one more parameter."""
    x, w = np.concatenate([r.x for r in reps]), np.concatenate([r.weight for r in reps])
    n = int(np.sum((x > 0) & np.isfinite(x)))
    best, best_bic = 0.0, None
    for v in [0.0, *grid]:
        adj = take_out(reps, v)
        try:
            rss = fit_rate(np.concatenate([r.x for r in adj]), np.concatenate([r.rate for r in adj]), w).rss
        except ValueError:
            continue
        score = bic(rss, n, 1 if v else 0)
        if best_bic is None or score < best_bic:
            best, best_bic = float(v), score
    return best


def _file_cost(reps: list[Rep]) -> float:
    """Seconds of fixed cost per input file (a statement, a commit's log flush), fitted across
    the rungs: where files keep their count (``predict.scale_files`` false), a small rung's
    files are small and that cost is a larger share of its rows' time. The cost on a grid
    below the least observed time per file; 0 with one rung."""
    if len({r.rung_rows for r in reps}) < 2 or not all(r.files for r in reps):
        return 0.0
    most = 0.9 * min(float(np.min(r.rung_rows / (r.files * r.rate))) for r in reps)
    return _by_bic(reps, np.geomspace(most * 1e-3, most, GRID), _without_file_cost)


def _pool_overhead(reps: list[Rep]) -> float:
    """Bytes of the cache the table cannot use, fitted across the rungs: the running
    transaction's undo pages and the pool's own fixed parts are the same in every rung (a
    file, one transaction, holds the target's rows in each), so they are a larger share of a
    small rung's pool, which then collapses harder at one table ÷ pool (the scale term
    would read that as a rate rising with N, and carry it to the target, where it fades).
    On a grid up to ``MAX_OVERHEAD`` × the smallest rung's pool; 0 with one rung."""
    if len({r.rung_rows for r in reps}) < 2:
        return 0.0
    least = min(r.pool for r in reps)
    return _by_bic(reps, np.linspace(MAX_OVERHEAD / GRID, MAX_OVERHEAD, GRID) * least, _without_overhead)


def fit(reps: list[Rep]) -> Fit:
    """One fit from the repetitions of every rung (each rung's windows over its own x): x
    over the cache the table can use (``_pool_overhead``), the per-file cost taken out
    (``_file_cost``), the rates brought to the largest rung's scale (``_scale_exp``)."""
    overhead = _pool_overhead(reps)
    reps = _without_overhead(reps, overhead)
    cost = _file_cost(reps)
    reps = _without_file_cost(reps, cost)
    x, w = np.concatenate([r.x for r in reps]), np.concatenate([r.weight for r in reps])
    rate = np.concatenate([r.rate for r in reps])
    curve = fit_rate(x, rate, w)
    n_ref, s = float(max(r.rung_rows for r in reps)), 0.0
    for _ in range(2):    # s from the curve, the curve from the rates at n_ref's scale
        s += _scale_exp([dataclasses.replace(r, rate=r.rate * (r.rung_rows / n_ref) ** s) for r in reps], curve)
        s = float(np.clip(s, -MAX_SCALE_EXP, MAX_SCALE_EXP))
        curve = fit_rate(x, np.concatenate([r.rate * (r.rung_rows / n_ref) ** s for r in reps]), w)
    rows = np.array([r.rows for r in reps], float)
    tb = np.array([r.table_bytes for r in reps], float)
    if len(np.unique(rows)) >= 2:
        slope, icpt = np.polyfit(rows, tb, 1)
        if slope <= 0:
            slope, icpt = float(np.median(tb / rows)), 0.0
    else:
        slope, icpt = float(np.median(tb / rows)), 0.0
    cpu = [r.server_cpu_s / r.seconds for r in reps if r.server_cpu_s and r.seconds > 0]
    return Fit(curve, float(slope), float(icpt),
               float(np.median([r.pre_s / _nlogn(r.rung_rows) for r in reps])),
               float(np.median([r.post_s / _nlogn(r.rows) for r in reps])),
               float(np.median(cpu)) if cpu else None, s, n_ref, cost, overhead)


def _rows_at_limit(f: Fit, t: Target, bpr: float) -> float | None:
    if not t.time_limit_s:
        return None
    pre, _ = f.phase_s(t.rows)
    return rows_by(f.curve_at(t.rows, t.files), max(0.0, t.time_limit_s - pre), t.rows, bpr, f.pool(t.pool))


def point(f: Fit, t: Target) -> dict:
    """The figures of one fit at the target: seconds (to all rows, or the limit), rows
    loaded, table bytes, the phases and the rows where the rate falls below ``below_rate``."""
    bpr = f.table_bytes(t.rows) / t.rows
    pre, post = f.phase_s(t.rows)
    curve = f.curve_at(t.rows, t.files)
    load = load_seconds(curve, t.rows, bpr, f.pool(t.pool))
    out = {"load_s": load, "pre_s": pre, "post_s": post, "seconds": pre + load + post, "rows": t.rows,
           "table_bytes": f.table_bytes(t.rows), "bytes_per_row": bpr, "stopped": False}
    limited = _rows_at_limit(f, t, bpr)
    if limited is not None and limited < t.rows:
        out.update(rows=limited, seconds=t.time_limit_s, stopped=True, table_bytes=limited * bpr,
                   load_s=t.time_limit_s - pre, post_s=0.0)
    if t.below_rate:
        n = rows_until_rate(curve, t.below_rate, bpr, f.pool(t.pool))
        out["rows_until_below_rate"] = n
        out["seconds_until_below_rate"] = None if n is None else pre + load_seconds(curve, n, bpr, f.pool(t.pool))
    return out


def regime(f: Fit, p: dict, t: Target, reps: list[Rep]) -> str:
    """server-CPU bound (steady), I/O bound (after the collapse), sort / index-build bound."""
    if p["pre_s"] + p["post_s"] >= SORT_BOUND * p["seconds"]:
        return "sort bound" if any(r.sorts for r in reps) else "index-build bound"
    x_end = p["rows"] * p["bytes_per_row"] / f.pool(t.pool)
    if f.curve.form != "steady" and x_end >= f.curve.x_c:
        return "I/O bound (random reads)"
    return "server-CPU bound" if (f.cpu_share or 0) >= 0.5 else "steady (client or input bound)"


def check(reps: list[Rep], t: Target, f: Fit, opts: dict) -> None:
    """Raise Refusal when the target is beyond what the rungs support."""
    rungs = sorted({r.rung_rows for r in reps})
    if len(rungs) < opts["min_rungs"]:
        raise Refusal(f"{len(rungs)} rung(s) ({', '.join(f'{n:,}' for n in rungs)} rows); the model needs "
                      f"{opts['min_rungs']} to see that the rate at a given table ÷ pool holds across scales")
    if t.rows > opts["max_extrapolation"] * rungs[-1]:
        raise Refusal(f"{t.rows:,.0f} rows is {t.rows / rungs[-1]:,.0f}× the largest rung ({rungs[-1]:,}); "
                      f"the model extrapolates at most {opts['max_extrapolation']:g}×")
    if f.pool(t.pool) <= 0:
        raise Refusal(f"the target's cache ({t.pool / 2**20:,.0f} MiB) is no larger than the "
                      f"{f.pool_overhead / 2**20:,.1f} MiB of it the rungs' tables could not use")
    p = point(f, t)
    x_end, x_seen = p["rows"] * p["bytes_per_row"] / t.pool, max(r.x_final for r in reps)
    if x_end > opts["x_margin"] * x_seen:
        raise Refusal(f"table ÷ pool would reach {x_end:.1f}; no rung went past {x_seen:.1f} (a regime not "
                      f"seen: scale the rungs' pool with their rows)")
    ws = [r.ws_over_pool for r in reps if r.ws_over_pool is not None]
    if ws and not any(r.collapse_expected for r in reps):
        ws_t = float(np.median(ws)) * x_end / float(np.median([r.x_final for r in reps]))
        if ws_t > 1:
            raise Refusal(f"the insert working set would be {ws_t:.1f}× the pool; in every rung it fit "
                          f"({max(ws):.2f}×): the collapse it predicts was not measured")
    sorts = [r.input_bytes / r.sort_memory for r in reps if r.sorts and r.sort_memory]
    if sorts and t.sort_memory:
        spill = p["rows"] * float(np.median([r.input_bytes / r.rung_rows for r in reps])) / t.sort_memory
        # an external sort is one regime (spill, merge) whatever the ratio; one not seen is not
        if spill > 1 and max(sorts) <= 1:
            raise Refusal(f"the input would be {spill:.1f}× load.sort_memory (an external sort); every rung "
                          f"sorted in memory ({max(sorts):.2f}× at most): scale load.sort_memory with the rungs' rows")


def run_noise(reps: list[Rep], f: Fit, floor: float) -> float:
    """σ of a rung's log rate between runs: the rungs' scatter about the fit (rungs − 2
    degrees of freedom: the level and s) or ``floor`` (``predict.run_noise``), the larger.
    Repetitions within one run share the server, disk and hour; they do not show it."""
    res = [m for _, m, _ in _rung_residuals(_without_overhead(reps, f.pool_overhead), f.curve_at)]
    if len(res) < 3:
        return floor
    return max(floor, math.sqrt(sum(v * v for v in res) / (len(res) - 2)))


def _resample(reps: list[Rep], rng, sigma: float = 0.0) -> list[Rep]:
    """The repetitions resampled with replacement within each rung (every rung stays), and
    each rung as a whole made faster or slower by exp(N(0, sigma)): a rung run again."""
    out = []
    for n in sorted({r.rung_rows for r in reps}):
        same = [r for r in reps if r.rung_rows == n]
        c = math.exp(rng.normal(0.0, sigma)) if sigma > 0 else 1.0
        out += [same[i] if c == 1.0 else
                dataclasses.replace(same[i], rate=same[i].rate * c, pre_s=same[i].pre_s / c, post_s=same[i].post_s / c)
                for i in rng.integers(0, len(same), len(same))]
    return out


def _leave_one_rung_out(reps: list[Rep], t: Target) -> list[dict]:
    """The point from every set of rungs but one (three rungs or more): how much the
    extrapolation leans on any one rung, which the repetitions' bootstrap cannot show (the
    same ladder run twice differed by more than its bootstrap interval)."""
    sizes = sorted({r.rung_rows for r in reps})
    out = []
    for n in sizes if len(sizes) >= 3 else []:
        try:
            out.append(point(fit([r for r in reps if r.rung_rows != n]), t))
        except ValueError:
            continue
    return out


def _rerun_range(point: float, q) -> tuple[float, float]:
    """Where a second run of the ladder would put its point: the bootstrap quantiles' distance
    from the point (in log, errors being multiplicative) × √2, the difference of two runs'
    independent errors."""
    if point <= 0 or min(q) <= 0:
        return float(q[0]), float(q[1])
    lo, hi = (point * (v / point) ** math.sqrt(2) for v in q)
    return float(lo), float(hi)


def predict(reps: list[Rep], t: Target, opts: dict) -> dict:
    """The prediction for one load at ``t``: the point, its interval (where a second run of the
    ladder would put it: bootstrap over the repetitions and each rung's between-run noise, the
    fit redone each time, widened to every leave-one-rung-out point), the regime and the fit;
    or the refusal."""
    out = {"target_rows": t.rows, "pool_bytes": t.pool,
           "rungs": sorted({r.rung_rows for r in reps}), "repetitions": len(reps)}
    try:
        f = fit(reps)
        check(reps, t, f, opts)
    except (Refusal, ValueError) as exc:
        return {**out, "refused": str(exc)}
    p = point(f, t)
    rng = np.random.default_rng(opts.get("seed", 0))
    sigma = run_noise(reps, f, opts.get("run_noise", 0.0))
    boot = {"seconds": [], "rows": [], "table_bytes": []}
    for _ in range(opts["bootstrap"]):
        try:
            q = point(fit(_resample(reps, rng, sigma)), t)
        except ValueError:
            continue
        for k in boot:
            boot[k].append(q[k])
    a = (1 - opts["confidence"]) / 2
    loo = _leave_one_rung_out(reps, t)
    for k, vals in boot.items():
        lo, hi = (_rerun_range(p[k], np.quantile(vals, [a, 1 - a])) if len(vals) >= 2 else (None, None))
        ends = [v[k] for v in loo]
        p[f"{k}_ci_low"], p[f"{k}_ci_high"] = (None if lo is None else float(min([lo, p[k], *ends])),
                                               None if hi is None else float(max([hi, p[k], *ends])))
    if p["rows_ci_high"] is not None:   # a load loads at most its input's rows
        p["rows_ci_high"] = min(p["rows_ci_high"], t.rows)
    fitted = {**f.curve.as_dict(), "scale_exponent": f.scale_exp, "file_cost_s": f.file_cost,
              "pool_overhead_bytes": f.pool_overhead, "run_noise": sigma}
    return {**out, **p, "regime": regime(f, p, t, reps), "fit": fitted,
            "bytes_per_row_slope": f.bpr_slope, "server_cpu_share": f.cpu_share}


def validate(reps: list[Rep], opts: dict) -> dict | None:
    """The largest rung predicted from the smaller ones, against its measured median."""
    rungs = sorted({r.rung_rows for r in reps})
    if len(rungs) < 2:
        return None
    top = [r for r in reps if r.rung_rows == rungs[-1]]
    t = Target(rungs[-1], float(np.median([r.pool for r in top])),
               float(np.median([r.sort_memory for r in top])), top[0].time_limit_s, files=top[0].files)
    p = predict([r for r in reps if r.rung_rows < rungs[-1]], t, {**opts, "min_rungs": 1})
    stopped = any(r.stopped for r in top)
    measured_rows = float(np.median([r.rows if r.rows_by_limit is None else r.rows_by_limit for r in top]))
    measured_s = float(np.median([r.seconds for r in top]))
    out = {"rung_rows": rungs[-1], "from_rungs": rungs[:-1], "n_measured": len(top),
           "measured_seconds": measured_s, "measured_rows": measured_rows, "stopped": stopped}
    if "refused" in p:
        return {**out, "refused": p["refused"]}
    if stopped:   # a load stopped by its limit: compare the rows it reached
        ratio = p["rows"] / measured_rows
    else:
        ratio = p["seconds"] / measured_s
    return {**out, "predicted_seconds": p["seconds"], "predicted_rows": p["rows"],
            "predicted_over_measured": ratio, "compared": "rows" if stopped else "seconds",
            "regime": p["regime"]}
