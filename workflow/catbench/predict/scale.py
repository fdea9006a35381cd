"""A load's time and table bytes at N rows from the rungs of one load (target × variant ×
engine × strategy × id layout), with an interval, its regime, or a refusal (model.md)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy.integrate import trapezoid
from scipy.optimize import least_squares

from .coverage import interval, load_form, resample, widen_prediction
from .fitted import LoadFit, PredictTarget, build_per_row, cache_share, pre_line
from .rate import RateCurve, cumulative_seconds, fit_rate, load_seconds, miss_ratio, rows_by, rows_until_rate
from .ladder import page_cache_left
from .lsm import index_block_refusal, index_ratio, lsm_fit
from .page_cache import fit_share
from .runs import LoadRepetition
from .spec import Fitting
from .writes import fit_writes

SORT_BOUND = 0.5      # the phases before/after the rows at least this share of the time
DROP = 0.8            # a collapse: the fitted rate at the largest x seen at most this × the cached rate
WELL_PAST = 2.0       # the miss cost is fitted only where the rungs' windows reach this × x_c (m ≥ 0.5)
MAX_OVERHEAD = 0.6    # the pool overhead at most this share of the smallest rung's pool


class Refusal(ValueError):
    """The model does not support this prediction; the message says why."""


def form_of(key: tuple, reps: list[LoadRepetition]) -> str:
    """The form a load's rate follows over the rungs: ``misses`` (filled in input order: a B-tree's inserts miss
    its pool, an LSM's key checks its block cache), ``steady`` (a load that sorts first or
    builds its key after the rows: each row appended)."""
    if not all(r.in_file_order for r in reps) or any(r.sorts for r in reps):
        return "steady"
    return "misses"


def _median(values, default=None):
    v = [x for x in values if x is not None]
    return float(np.median(v)) if v else default


def _device(reps: list[LoadRepetition]) -> dict:
    keys = sorted({k for r in reps for k in r.device})   # in order: the JSON's bytes whatever the hash seed
    return {k: _median(r.device.get(k) for r in reps) for k in keys}


def _measured(reps: list[LoadRepetition]) -> bool:
    return all(r.misses is not None and len(r.misses) == len(r.x) for r in reps)


def _miss_fit(reps: list[LoadRepetition], with_overhead: bool) -> tuple[float, float]:
    """(u, rung-level residual sum of squares) of m(x) through the measured misses per row,
    x = table ÷ (pool − u): u fitted (``with_overhead``) or 0. The residual is each rung's
    rows-weighted mean miss residual, squared and summed: the rungs are the independent units."""
    x = np.concatenate([r.x for r in reps])
    pool = np.concatenate([np.full(len(r.x), float(r.pool)) for r in reps])
    m, w = np.concatenate([r.misses for r in reps]), np.concatenate([r.weight for r in reps])
    ok = np.isfinite(m) & (x > 0)
    x, pool, m, w = x[ok], pool[ok], m[ok], w[ok] / w[ok].mean()
    most = MAX_OVERHEAD * float(np.min(pool))

    def resid(v):
        u = v[2] if with_overhead else 0.0
        return np.sqrt(w) * (m - miss_ratio(x * pool / (pool - u), v[0], v[1]))
    start = float(np.min(x[m > 0.05])) if np.any(m > 0.05) else 1.0
    sol = least_squares(resid, x0=[start, 1.0, most / 4 if with_overhead else 0.0],
                        bounds=([1e-3, 0.25, 0.0], [float(np.max(x)) * 2, 8.0, most if with_overhead else 1e-9]))
    u = float(sol.x[2]) if with_overhead else 0.0
    res = resid(sol.x) / np.sqrt(w)
    rung = np.concatenate([np.full(len(r.x), r.rung_rows) for r in reps])[ok]
    per = [np.average(res[rung == n], weights=w[rung == n]) for n in np.unique(rung)]
    return u, float(np.sum(np.square(per)))


def pool_overhead(reps: list[LoadRepetition]) -> float:
    """Bytes of the cache the table cannot use (a transaction's undo pages, the pool's own
    parts): the same in every rung, so a larger share of a small rung's pool, where the
    server counts more misses per row at one table ÷ pool. Fitted through the measured misses
    of every rung together, and kept where it pays for itself by the BIC over the rungs (the
    rungs, not the windows, are the independent points): the one cross-rung term."""
    n = len({r.rung_rows for r in reps})
    if n < 2 or not _measured(reps) or not any(np.nanmax(r.misses) > 0.05 for r in reps if len(r.misses)):
        return 0.0
    (_, rss0), (u, rss1) = _miss_fit(reps, False), _miss_fit(reps, True)
    bic0 = n * math.log(max(rss0, 1e-12) / n)
    bic1 = n * math.log(max(rss1, 1e-12) / n) + math.log(n)
    return u if bic1 < bic0 else 0.0


def fit(reps: list[LoadRepetition], form: str) -> LoadFit:
    """One fit from the repetitions of every rung (each rung's windows over its own x): x
    over the cache the table can use (``pool_overhead``), the curve of ``form`` through every
    window; a misses curve whose fall is not seen (the fitted rate at the largest x seen above
    DROP × the cached rate) is steady."""
    lsm = reps[0].lsm
    u = pool_overhead(reps) if form == "misses" and not lsm else 0.0
    if u:
        reps = [dataclasses.replace(r, x=r.x * r.pool / (r.pool - u)) for r in reps]
    x, w = np.concatenate([r.x for r in reps]), np.concatenate([r.weight for r in reps])
    rate = np.concatenate([r.rate for r in reps])
    misses = (np.concatenate([r.misses for r in reps])
              if form == "misses" and all(r.misses is not None for r in reps) else None)
    dev = (np.concatenate([r.device_reads for r in reps])
           if misses is not None and all(r.device_reads is not None and len(r.device_reads) == len(r.x)
                                         for r in reps) else None)
    device = _device(reps)
    depth = (np.log2(np.maximum(np.concatenate([r.n_mid for r in reps]), 1.0))
             if all(r.n_mid is not None and len(r.n_mid) == len(r.x) for r in reps) else None)
    share = None
    if lsm:
        curve, share = lsm_fit(x, rate, w, form, misses, dev, device, depth)
    else:
        curve = fit_rate(x, rate, w, form, misses, (dev, cache_share(device)), depth)
    x_seen = float(np.max(x[np.isfinite(x)])) if len(x) else 0.0
    if curve.form == "misses" and curve.seconds_per_row(x_seen) * DROP < curve.a:
        curve = fit_rate(x, rate, w, "steady", depth=depth)
    rows = np.array([r.rows for r in reps], float)
    tb = np.array([r.table_bytes for r in reps], float)
    slope, icpt = float(np.median(tb / rows)), 0.0
    if len(np.unique(rows)) >= 2:
        s, i = np.polyfit(rows, tb, 1)
        if s > 0:
            slope, icpt = float(s), float(i)
    cpu = [r.server_cpu_s / r.seconds for r in reps if r.server_cpu_s and r.seconds > 0]
    per_row = [r.server_cpu_s / r.rows for r in reps if r.server_cpu_s and r.rows > 0]
    return LoadFit(curve, slope, icpt,
               pre_line(reps),
               build_per_row(reps),
               _median(cpu), device,
               any(r.sorts and r.sort_memory and r.input_bytes > r.sort_memory for r in reps),
               float(np.median([r.input_bytes / r.rung_rows for r in reps])), x_seen, u, _median(per_row),
               fit_writes(reps), any(r.sorts for r in reps), share, fit_share(curve, reps, u))



def _curve(f: LoadFit, t: PredictTarget) -> RateCurve:
    """The fitted curve at the target's cache: the page cache beside the pool (ρ = the pool the
    table can use ÷ that and η × the page cache)."""
    c = f.curve
    if t.page_cache > 0:
        page = t.page_cache * (1.0 if f.page_cache_share is None else f.page_cache_share)
        c = c.with_page_cache(f.pool(t.pool) / (f.pool(t.pool) + page), f.cache_share)
    return c if f.writes is None else dataclasses.replace(c, floor_s=f.writes.floor_s(f.device))


def _per_row_average(curve: RateCurve, rows: float, bpr: float, pool: float) -> tuple[float, float]:
    """(pool misses, device reads) per row over the whole load: m and its device share averaged
    over the rows (a geometric grid's trapezoids)."""
    if curve.form != "misses" or rows <= 0:
        return 0.0, 0.0
    n = np.concatenate([[0.0], np.geomspace(rows * 1e-6, rows, 2000)])
    x = n * bpr / pool
    m, d = curve.miss_ratio(x), curve.device_ratio(x)
    return float(trapezoid(m, n) / rows), float(trapezoid(d, n) / rows)


def _rows_at_limit(f: LoadFit, t: PredictTarget, bpr: float) -> float | None:
    if not t.time_limit_s:
        return None
    pre, _ = f.phase_s(t)
    return rows_by(_curve(f, t), max(0.0, t.time_limit_s - pre), t.rows, bpr, f.pool(t.pool))


def _later_half(curve: RateCurve, rows: float, bpr: float, pool: float, shown: float) -> dict:
    """The rate over the later half of ``rows`` (x over the cache the table can use, ``pool``)
    and the table ÷ cache it spans (``shown``, the whole cache, as the measurement gives it):
    past a collapse, what a large load of the one-file-at-a-time protocol is made of."""
    n, t = cumulative_seconds(curve, rows, bpr, pool)
    t1, t2 = np.interp([rows / 2, rows], n, t)
    return {"later_half_rate": float(rows / 2 / (t2 - t1)) if t2 > t1 else None,
            "later_half_x": [rows / 2 * bpr / shown, rows * bpr / shown]}


def point(f: LoadFit, t: PredictTarget) -> dict:
    """The figures of one fit at the target: seconds (to all rows, or the limit), rows
    loaded, table bytes, the phases, the rate over the later half of the rows, and the rows
    where the rate falls below ``below_rate``."""
    bpr = f.table_bytes(t.rows) / t.rows
    pre, post = f.phase_s(t)
    curve = _curve(f, t)
    load = load_seconds(curve, t.rows, bpr, f.pool(t.pool))
    out = {"load_s": load, "pre_s": pre, "post_s": post, "seconds": pre + load + post, "rows": t.rows,
           "table_bytes": f.table_bytes(t.rows), "bytes_per_row": bpr, "stopped": False,
           "all_rows_seconds": pre + load + post}
    limited = _rows_at_limit(f, t, bpr)
    if limited is not None and limited < t.rows:
        out.update(rows=limited, seconds=t.time_limit_s, stopped=True, table_bytes=limited * bpr,
                   load_s=t.time_limit_s - pre, post_s=0.0)
    out.update(_later_half(curve, out["rows"], bpr, f.pool(t.pool), t.pool))
    out["pool_misses_per_row"], out["device_reads_per_row"] = _per_row_average(curve, out["rows"], bpr,
                                                                               f.pool(t.pool))
    out["server_cpu_us_per_row"] = None if f.cpu_per_row is None else f.cpu_per_row * 1e6
    if f.writes is not None:
        out["writes"] = f.writes.at(out["pool_misses_per_row"], out["load_s"], out["rows"])
    if t.below_rate:
        n = rows_until_rate(curve, t.below_rate, bpr, f.pool(t.pool))
        out["rows_until_below_rate"] = n
        out["seconds_until_below_rate"] = None if n is None else pre + load_seconds(curve, n, bpr, f.pool(t.pool))
    return out


def regime(f: LoadFit, p: dict, t: PredictTarget, reps: list[LoadRepetition]) -> str:
    """The prediction's regime at ``t`` (what bounds it there, not its form over the rungs):
    sort / index-build bound, I/O bound (page misses, or an LSM's compactions), else
    server-CPU bound or steady."""
    if p["pre_s"] + p["post_s"] >= SORT_BOUND * p["all_rows_seconds"]:
        return "sort bound" if any(r.sorts for r in reps) else "index-build bound"
    c = _curve(f, t)
    x_end = t.rows * p["bytes_per_row"] / f.pool(t.pool)
    if c.form == "misses" and x_end * c.rho > c.x_c:
        return "I/O bound (random page reads)"
    if c.form == "misses" and x_end > c.x_c:
        return "page-cache bound (pool misses read back from RAM)"
    if c.floor_s and c.floor_s >= float(dataclasses.replace(c, floor_s=0.0).seconds_per_row(x_end, t.rows)):
        return "write bound (redo log and page cleaners)"
    return "server-CPU bound" if (f.cpu_share or 0) >= 0.5 else "steady (client or input bound)"


def _rung_needed(f: LoadFit, reps: list[LoadRepetition], x_goal: float) -> str:
    """The rung that would let the model answer: the largest rung's rows with a pool its table
    outgrows ``x_goal`` times, and a time limit long enough to get there."""
    top = max(reps, key=lambda r: r.rung_rows)
    pool = f.table_bytes(top.rung_rows) / x_goal + f.overhead
    return (f"a rung of {top.rung_rows:,} rows whose cache is at most {pool / 2**20:,.0f} MiB (its table "
            f"{x_goal:.1f}× the cache at its end: predict.pool_per_row_bytes ≤ {pool / top.rung_rows:.1f}), "
            f"with a time limit that lets it get there")


def check(reps: list[LoadRepetition], t: PredictTarget, f: LoadFit, fitting: Fitting) -> None:
    """Raise Refusal when the target is beyond what the rungs support, naming the rung that
    would let the model answer."""
    rungs = sorted({r.rung_rows for r in reps})
    if len(rungs) < fitting.min_rungs:
        raise Refusal(f"{len(rungs)} rung(s) ({', '.join(f'{n:,}' for n in rungs)} rows); the model needs "
                      f"{fitting.min_rungs} to see that the rate at a given table ÷ pool holds across scales")
    p = point(f, t)
    if f.pool(t.pool) <= 0:
        raise Refusal(f"the target's cache ({t.pool / 2**20:,.0f} MiB) is no larger than the "
                      f"{f.overhead / 2**20:,.1f} MiB of it the rungs' tables could not use")
    x_end = p["rows"] * p["bytes_per_row"] / f.pool(t.pool)
    c = f.curve
    if reps[0].lsm and form_of(reps[0].key, reps) != "steady":   # each insert checks its key
        why = index_block_refusal(index_ratio([r.table_files for r in reps]), t.sst_file, t.pool)
        if why:
            raise Refusal(why)
    if c.form == "misses" and x_end > c.x_c:
        if not f.device.get("page_read_s"):
            raise Refusal(f"no fio page-read figure for target {reps[0].key[0]} in the rungs' results: the "
                          f"cost of a page miss is measured there (add fio to the rungs' stages)")
        if f.x_seen < WELL_PAST * c.x_c:
            raise Refusal(f"the rungs' tables reached {f.x_seen:.2f}× their pool, past the collapse at "
                          f"{c.x_c:.2f} but not {WELL_PAST:g}× it, where half the inserts miss; the miss cost "
                          f"needs {_rung_needed(f, reps, 3 * c.x_c)}")
    if c.form == "steady" and form_of(reps[0].key, reps) == "misses":
        ws = [r.ws_over_pool for r in reps if r.ws_over_pool is not None]
        if ws and not any(r.collapse_expected for r in reps):
            ws_t = float(np.median(ws)) * x_end / float(np.median([r.x_final for r in reps]))
            if ws_t > 1:
                raise Refusal(f"the insert working set would be {ws_t:.1f}× the pool; in every rung it fit "
                              f"({max(ws):.2f}×): the collapse it predicts was not measured; it needs "
                              f"{_rung_needed(f, reps, 3 * x_end / ws_t)}")
        if not ws and x_end > fitting.x_margin * f.x_seen:
            raise Refusal(f"table ÷ pool would reach {x_end:.1f}; no rung went past {f.x_seen:.1f} and no "
                          f"working set says whether it collapses there: it needs "
                          f"{_rung_needed(f, reps, x_end)}")


def run_noise(reps: list[LoadRepetition], f: LoadFit, floor: float) -> float:
    """σ of a rung's log rate between runs: the rungs' scatter about the fit (rungs − 1
    degrees of freedom) or ``floor`` (``predict.run_noise``), the larger. Repetitions
    within one run share the server, disk and hour; they do not show it."""
    res = []
    for n in sorted({r.rung_rows for r in reps}):
        same = [r for r in reps if r.rung_rows == n]
        x = np.concatenate([r.x * r.pool / (r.pool - f.overhead) for r in same])
        rate, w = np.concatenate([r.rate for r in same]), np.concatenate([r.weight for r in same])
        ok = (x > 0) & (rate > 0) & np.isfinite(x) & np.isfinite(rate)
        if ok.any():
            model = f.curve.a + f.curve.miss_s * _miss_cost(f, same, x)[ok]
            if f.curve.depth_s:
                n = np.concatenate([r.n_mid for r in same])[ok]
                model = model + f.curve.depth_s * np.maximum(np.log2(np.maximum(n, 1)) - f.curve.depth_ref, 0)
            res.append(float(np.average(np.log(rate[ok]) + np.log(model), weights=w[ok])))
    if len(res) < 2:
        return floor
    return max(floor, math.sqrt(sum(v * v for v in res) / (len(res) - 1)))


def _miss_cost(f: LoadFit, reps: list[LoadRepetition], x) -> np.ndarray:
    """Per window, the misses a row paid in units of a device miss: the counted ones, those the
    page cache served at its share of the cost, where the rungs counted both; else m(x)."""
    share = f.cache_share
    if (f.curve.form != "misses" or share is None
            or any(r.misses is None or r.device_reads is None for r in reps)):
        return f.curve.miss_ratio(x)
    m = np.concatenate([r.misses for r in reps])
    d = np.clip(np.nan_to_num(np.concatenate([r.device_reads for r in reps])), 0.0, m)
    return (m - d) * share + d


def _leave_one_rung_out(reps: list[LoadRepetition], t: PredictTarget, form: str) -> list[dict]:
    """The point from every set of rungs but one (three rungs or more): how much the
    prediction leans on any one rung, which the repetitions' bootstrap cannot show."""
    sizes = sorted({r.rung_rows for r in reps})
    out = []
    for n in sizes if len(sizes) >= 3 else []:
        try:
            out.append(point(fit([r for r in reps if r.rung_rows != n], form), t))
        except ValueError:
            continue
    return out


INTERVALS = ("seconds", "rows", "table_bytes", "all_rows_seconds", "later_half_rate")


def predict(reps: list[LoadRepetition], t: PredictTarget, fitting: Fitting) -> dict:
    """The prediction for one load at ``t``: the point, its interval (where a second run of the
    ladder would put it: bootstrap over the repetitions and each rung's between-run noise, the
    fit redone each time, widened to every leave-one-rung-out point), the regime and the fit;
    or the refusal."""
    out = {"target_rows": t.rows, "pool_bytes": t.pool, "page_cache_bytes": t.page_cache,
           "rungs": sorted({r.rung_rows for r in reps}), "repetitions": len(reps)}
    form = form_of(reps[0].key, reps)
    try:
        f = fit(reps, form)
        check(reps, t, f, fitting)
    except (Refusal, ValueError) as exc:
        return {**out, "refused": str(exc)}
    p = point(f, t)
    rng = np.random.default_rng(fitting.seed)
    sigma = run_noise(reps, f, fitting.run_noise)
    boot = {k: [] for k in INTERVALS}
    for _ in range(fitting.bootstrap):
        try:
            q = point(fit(resample(reps, rng, sigma), form), t)
        except ValueError:
            continue
        for k in boot:
            if q.get(k) is not None:
                boot[k].append(q[k])
    a = (1 - fitting.confidence) / 2
    loo = _leave_one_rung_out(reps, t, form)
    for k, vals in boot.items():
        if p.get(k) is None or len(vals) < 2:
            p[f"{k}_ci_low"] = p[f"{k}_ci_high"] = None
            continue
        p[f"{k}_ci_low"], p[f"{k}_ci_high"] = interval(p[k], vals, [v[k] for v in loo if v.get(k) is not None], a)
    own = _own_check(reps, fitting)
    _widen(p, own)
    widen_prediction(p, load_form(reps[0].key[2], reps[0].key[3]), fitting.confidence)
    if p["rows_ci_high"] is not None:   # a load loads at most its input's rows
        p["rows_ci_high"] = min(p["rows_ci_high"], t.rows)
    fitted = {**f.curve.as_dict(), "calibration_k": f.calibration, "device": f.device, "run_noise": sigma,
              "x_seen": f.x_seen, "parameters": _parameters(f), "own_check": own,
              "pool_overhead_bytes": f.overhead, "page_cache_share": f.page_cache_share,
              "write_floor_s_per_row": 0.0 if f.writes is None else f.writes.floor_s(f.device)}
    return {**out, **p, "regime": regime(f, p, t, reps), "fit": fitted,
            "bytes_per_row_slope": f.bpr_slope, "server_cpu_share": f.cpu_share}


def _own_check(reps: list[LoadRepetition], fitting: Fitting) -> dict:
    """The ladder's own miss: its largest rung predicted from the smaller ones (three rungs or
    more, so that two are behind it), predicted ÷ measured for the total and the later half's
    rate. A re-run interval does not hold the model's own error; this is a measure of it."""
    if not fitting.own_check or len({r.rung_rows for r in reps}) < 3:
        return {}
    v = validate(reps, fitting.replace(own_check=False))
    return {k: v.get(k) for k in ("predicted_over_measured", "later_half_rate_predicted_over_measured")
            if v and v.get(k)}


def _widen(p: dict, own: dict) -> None:
    """Each interval widened by the ladder's own miss, both ways (exp |log(predicted ÷
    measured)|): the totals' by the total's, the later half's by the later half's."""
    for keys, ratio in ((("seconds", "rows", "all_rows_seconds", "table_bytes"), own.get("predicted_over_measured")),
                        (("later_half_rate",), own.get("later_half_rate_predicted_over_measured"))):
        if not ratio or ratio <= 0:
            continue
        f = math.exp(abs(math.log(ratio)))
        for k in keys:
            if p.get(f"{k}_ci_low") is not None:
                p[f"{k}_ci_low"] /= f
                p[f"{k}_ci_high"] *= f


def _parameters(f: LoadFit) -> int:
    """Continuous parameters fitted for this load (model.md's table): the cached cost, the
    form's (misses: x_c, p and K), the sort's coefficient, the
    build's two (its intercept where fitted), the table's bytes per row (slope and intercept),
    the pool overhead, the depth term and the page cache's share η where kept."""
    return (1 + {"steady": 0, "misses": 3}[f.curve.form] + 1 + 1 + (f.post[0] != 0.0) + 2
            + (f.overhead > 0) + (f.curve.depth_s > 0) + (f.page_cache_share is not None))


def _measured_later(reps: list[LoadRepetition]) -> float | None:
    return _median(r.later[0] if r.later else None for r in reps)


def compare(p: dict, measured: list[LoadRepetition]) -> dict:
    """A prediction against a measured run of the same load: the totals (seconds, or the rows
    of a load its limit stopped) and the rate over the later half of the rows, predicted ÷
    measured (medians of the repetitions), and whether each fell in its interval."""
    stopped = any(r.stopped for r in measured)
    rows = _median(r.rows if r.rows_by_limit is None else r.rows_by_limit for r in measured)
    secs = _median(r.seconds for r in measured)
    later = _measured_later(measured)
    out = {"n_measured": len(measured), "measured_seconds": secs, "measured_rows": rows, "stopped": stopped,
           "measured_later_half_rate": later,
           "measured_later_half_x": [_median(r.later[1] for r in measured if r.later),
                                     _median(r.later[2] for r in measured if r.later)]}
    if "refused" in p:
        return {**out, "refused": p["refused"]}
    k = "rows" if stopped else "seconds"
    got = rows if stopped else secs
    lo, hi = p.get(f"{k}_ci_low"), p.get(f"{k}_ci_high")
    out.update(compared=k, predicted=p[k], predicted_over_measured=p[k] / got,
               inside=None if lo is None else bool(lo <= got <= hi), regime=p["regime"],
               predicted_seconds=p["seconds"], predicted_rows=p["rows"])
    if later and p.get("later_half_rate"):
        lo, hi = p.get("later_half_rate_ci_low"), p.get("later_half_rate_ci_high")
        out.update(later_half_rate_predicted_over_measured=p["later_half_rate"] / later,
                   later_half_rate_inside=None if lo is None else bool(lo <= later <= hi))
    return out


def validate(reps: list[LoadRepetition], fitting: Fitting) -> dict | None:
    """The largest rung predicted from the smaller ones, against its measured median."""
    rungs = sorted({r.rung_rows for r in reps})
    if len(rungs) < 2:
        return None
    top = [r for r in reps if r.rung_rows == rungs[-1]]
    pool = float(np.median([r.pool for r in top]))
    ram, seen = top[0].ram, _median(r.page_cache_seen for r in top)
    page = (0.0 if not top[0].buffered else seen if seen is not None
            else page_cache_left(ram, pool=pool, memtable_bytes=top[0].memtables, own=fitting.ram_own) if ram else 0.0)
    t = PredictTarget(rungs[-1], pool, float(np.median([r.sort_memory for r in top])), top[0].time_limit_s,
               files=top[0].files, sst_file=top[0].sst_file, page_cache=page)
    p = predict([r for r in reps if r.rung_rows < rungs[-1]], t, fitting.replace(min_rungs=1))
    return {"rung_rows": rungs[-1], "from_rungs": rungs[:-1], **compare(p, top)}
