"""A load's predicted time to load every row at each N of a grid (the report's plot of time
against rows, 10^7…10^11): the fit of ``scale.predict`` done once per bootstrap resample and
evaluated at every N, each N with its own interval and regime, or its own refusal."""

from __future__ import annotations

import numpy as np

from .runs import LoadRepetition
from .coverage import interval, load_form, resample, widen_prediction
from .scale import (Refusal, PredictTarget, _leave_one_rung_out, _own_check, _widen, check, fit, form_of, point, regime,
                    run_noise)
from .spec import Fitting

# 10^7 … 10^11 rows, every half decade: where users' catalogs lie (Gaia DR3 ~1.8 × 10^9,
# Rubin's final release ~4 × 10^10)
GRID = tuple(float(round(10 ** (7 + k / 2))) for k in range(9))


def curve(reps: list[LoadRepetition], targets: list[PredictTarget], fitting: Fitting) -> list[dict]:
    """Per target (its ``time_limit_s`` ignored: every row): rows, pool, the seconds to load
    them with an interval as ``scale.predict`` gives it, table bytes and regime; or
    ``refused``."""
    targets = [PredictTarget(t.rows, t.pool, t.sort_memory, None, None, t.files, sst_file=t.sst_file)
               for t in targets]
    form = form_of(reps[0].key, reps)
    try:
        f = fit(reps, form)
    except ValueError as exc:
        return [{"rows": t.rows, "pool_bytes": t.pool, "refused": str(exc)} for t in targets]
    answered, out = [], {}
    for t in targets:
        try:
            check(reps, t, f, fitting)
            answered.append(t)
        except (Refusal, ValueError) as exc:
            out[t.rows] = {"rows": t.rows, "pool_bytes": t.pool, "refused": str(exc)}
    points = {t.rows: point(f, t) for t in answered}
    boot = {t.rows: [] for t in answered}
    rng = np.random.default_rng(fitting.seed)
    sigma = run_noise(reps, f, fitting.run_noise)
    for _ in range(fitting.bootstrap if answered else 0):
        try:
            g = fit(resample(reps, rng, sigma), form)
        except ValueError:
            continue
        for t in answered:
            boot[t.rows].append(point(g, t)["seconds"])
    a = (1 - fitting.confidence) / 2
    own = _own_check(reps, fitting) if answered else {}
    for t in answered:
        p = points[t.rows]
        lo = hi = None
        if len(boot[t.rows]) >= 2:
            lo, hi = interval(p["seconds"], boot[t.rows], [v["seconds"] for v in _leave_one_rung_out(reps, t, form)], a)
        q = {"seconds": p["seconds"], "seconds_ci_low": lo, "seconds_ci_high": hi}
        _widen(q, own)
        widen_prediction(q, load_form(reps[0].key[2], reps[0].key[3]), fitting.confidence)
        q = {k: v for k, v in q.items() if k.startswith("seconds")}
        out[t.rows] = {"rows": t.rows, "pool_bytes": t.pool, **q, "table_bytes": p["table_bytes"],
                       "regime": regime(f, p, t, reps)}
    return [out[t.rows] for t in targets]


def measured_points(reps: list[LoadRepetition]) -> list[dict]:
    """What the runs measured of one load, a point per run: its input's rows, the median
    seconds and rows loaded over its n repetitions, its cache, and whether a time limit
    stopped it (then the point is the rows it loaded by then)."""
    out = []
    for run in sorted({r.run for r in reps}):
        same = [r for r in reps if r.run == run]
        stopped = any(r.stopped for r in same)
        out.append({"run": run, "input_rows": same[0].rung_rows, "n": len(same), "stopped": stopped,
                    "rows": float(np.median([r.rows_by_limit if r.rows_by_limit is not None else r.rows
                                             for r in same])),
                    "seconds": float(np.median([r.seconds for r in same])),
                    "seconds_min": float(min(r.seconds for r in same)),
                    "seconds_max": float(max(r.seconds for r in same)),
                    "pool_bytes": float(np.median([r.pool for r in same]))})
    return out
