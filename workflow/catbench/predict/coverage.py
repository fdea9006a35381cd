"""The record of every sealed check (resources/predict/coverage.csv: one row per predicted figure,
predicted ÷ measured, its interval and whether the measurement fell inside), the coverage per
form it gives, and the model's measured error that widens a prediction's interval
(predict/model.md, "Interval"); the rungs' own interval it widens (a ladder run again).

A figure marked in-sample (its model changed after it was seen, or a development run) is
kept in the record and left out of every count here."""

from __future__ import annotations

import csv
import dataclasses
import functools
import io
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.index.table import ENGINES
from ..core.infra.config.yamlfile import read_bytes
from ..core.infra.jobs.repeat import z_ppf
from ..core.infra.metrics import PREDICTION_BAND
from ..core.infra.resources import resources_dir
from .runs import LoadRepetition

FORMS = ("btree-misses", "lsm-misses", "sort-bound", "key-build", "restart")
MIN_FORM = 5        # figures a form needs for its own spread; fewer take every form's


def record_path() -> Path:
    return resources_dir() / "predict" / "coverage.csv"


@dataclass(frozen=True)
class Check:
    """One sealed figure of the record."""
    check: str
    form: str
    ratio: float                 # predicted ÷ measured
    inside: bool | None          # inside its printed interval (None: no interval printed)
    log_sides: tuple | None      # the printed interval's reach below and above the prediction, log scale
    past: float | None = None    # how far past its rungs the figure was (past_rungs)


def _float(text: str) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


RECORD_BYTES = 16 * 2**20    # the record is a few hundred rows


@functools.cache
def read(path: Path | None = None) -> list[Check]:
    """The out-of-sample figures of the record that have a predicted ÷ measured."""
    out = []
    path = path or record_path()
    text = read_bytes(path, "the record of sealed checks", RECORD_BYTES, "a coverage record (CSV)").decode(
        "utf-8", errors="replace")
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    missing = sorted({"check", "form", "pred_over_meas", "in_sample", "inside", "predicted", "low", "high"} - set(rows[0] if rows else ()))
    if rows and missing:
        raise ValueError(f"the record of sealed checks: {path} has no column {', '.join(missing)}")
    for line, row in enumerate(rows, start=2):
        for key in ("pred_over_meas", "predicted", "low", "high"):
            cell = (row[key] or "").strip()
            if cell and (_float(cell) is None or not math.isfinite(_float(cell))):
                raise ValueError(f"the record of sealed checks: {path} line {line}: {key} is {cell!r}, not a "
                                 f"finite number")
        ratio = _float(row["pred_over_meas"])
        if row["in_sample"] == "true" or row["form"] not in FORMS or not ratio or ratio <= 0:
            continue
        pred, lo, hi = _float(row["predicted"]), _float(row["low"]), _float(row["high"])
        sides = (_sides(pred, lo, hi) if pred and lo and hi and 0 < lo <= pred <= hi else None)
        inside = {"true": True, "false": False}.get(row["inside"])
        past = _float(row.get("past_rungs"))
        out.append(Check(row["check"], row["form"], ratio, inside, sides, past if past and past >= 1 else None))
    return out


def error(checks: list[Check], form: str, leave_out: str | None = None) -> float:
    """The model's measured error for ``form``: the root mean square of log(predicted ÷
    measured) over its sealed figures (bias counts as error), without ``leave_out``'s check;
    every form's where the form has fewer than MIN_FORM figures."""
    def rms(xs):
        return math.sqrt(sum(math.log(c.ratio) ** 2 for c in xs) / len(xs)) if xs else 0.0
    kept = [c for c in checks if c.check != leave_out]
    own = [c for c in kept if c.form == form]
    return rms(own if len(own) >= MIN_FORM else kept)


def _log_past(xs: list[Check]) -> float | None:
    """The mean log distance past the rungs of ``xs`` (None: none said how far)."""
    logs = [math.log(c.past) for c in xs if c.past and c.past > 1]
    return sum(logs) / len(logs) if logs else None


def error_at(checks: list[Check], form: str, past: float | None, leave_out: str | None = None) -> float:
    """The form's measured error at ``past`` × its rungs: the record's log error² grows about
    linearly with the log distance (restarts/model.md, "Intervals"), so σ grows as sqrt(log
    distance ÷ the form's mean log distance on record); never below the form's own σ."""
    sigma = error(checks, form, leave_out)
    kept = [c for c in checks if c.check != leave_out]
    ref = _log_past([c for c in kept if c.form == form]) or _log_past(kept)
    if not past or past <= 1 or not ref:
        return sigma
    return sigma * math.sqrt(max(1.0, math.log(past) / ref))


def reach_limit(checks: list[Check]) -> float | None:
    """The farthest past the rungs a figure is answered: the record's error growth is extrapolated
    no further past its farthest figure than the record itself spans (farthest × farthest ÷
    nearest, over every out-of-sample figure that says its distance); None: no figure says."""
    pasts = [c.past for c in checks if c.past]
    return max(pasts) ** 2 / min(pasts) if pasts else None


def load_form(engine: str, strategy: str) -> str:
    """A load's form in the record: what its rungs' curve extrapolates."""
    if strategy == "one-file-at-a-time":
        return "lsm-misses" if engine in ENGINES and ENGINES[engine].lsm else "btree-misses"
    return "key-build" if strategy == "deferred-pk" else "sort-bound"


# a load prediction's figures that the model's measured error widens (their _ci_low/_ci_high)
WIDENED = ("seconds", "rows", "all_rows_seconds", "later_half_rate")


def widen_prediction(p: dict, form: str, confidence: float, figures: dict | None = None,
                     past: float | None = None) -> None:
    """``p``'s intervals widened by the form's measured error (``widen``; at ``past`` × the rungs
    where given, ``error_at``): the rungs' own kept as ``<figure>_rungs_ci_low``/``_high``, the
    form, its error and the level stated. ``figures``: interval prefix -> the key of its value
    (default a load's :data:`WIDENED`, each its own key)."""
    sigma = error_at(read(), form, past)
    p.update(form=form, model_error=sigma, level=confidence)
    for k, value in (figures or {k: k for k in WIDENED}).items():
        lo, hi = p.get(f"{k}_ci_low"), p.get(f"{k}_ci_high")
        p[f"{k}_rungs_ci_low"], p[f"{k}_rungs_ci_high"] = lo, hi
        if p.get(value) and lo is not None and hi is not None:
            p[f"{k}_ci_low"], p[f"{k}_ci_high"] = widen(p[value], lo, hi, sigma, confidence)


def widen_restart(p: dict, confidence: float) -> None:
    """A restart kind's total interval widened by the restart form's measured error at its
    farthest phase's distance past the rungs; refused past :func:`reach_limit` (the phases kept,
    their quantities and distances said, no seconds); a refused kind is left."""
    if "refused" in p:
        return
    far = max((ph for ph in p["phases"] if ph.get("past_rungs")), key=lambda ph: ph["past_rungs"], default=None)
    past = far["past_rungs"] if far else None
    limit = reach_limit(read())
    if past and limit and past > limit:
        p["refused"] = (f"phase {far['phase']} is {past:,.0f}x past the largest rung's {far['driver']}; the record "
                        f"of sealed checks tells the error no further than {limit:,.0f}x: run rungs "
                        f"{past / limit:,.1f}x larger")
        for k in ("total_s", "total_ci_low", "total_ci_high", "plan_s", "at_most_s", "dominant", "dominant_bound"):
            p.pop(k, None)
        p["phases"] = [{k: ph.get(k) for k in ("phase", "driver", "quantity_bytes", "quantity_in_bytes", "past_rungs")}
                       for ph in p["phases"]]
        return
    widen_prediction(p, "restart", confidence, {"total": "total_s"}, past)


def _sides(value: float, low: float | None, high: float | None) -> tuple[float, float]:
    """How far an interval reaches below and above ``value``, log scale (0 where it does not)."""
    return (math.log(value / low) if low and 0 < low < value else 0.0,
            math.log(high / value) if high and high > value else 0.0)


def widen(value: float, low: float | None, high: float | None, sigma: float,
          confidence: float = 0.95) -> tuple[float | None, float | None]:
    """(low, high) of ``value``'s interval with the model's measured error added in quadrature
    on the log scale, each side on its own: reach = sqrt(rungs' reach² + (z·σ)²), never less
    than the rungs' own."""
    if not value or value <= 0:
        return low, high
    z = float(z_ppf(0.5 + confidence / 2))
    down, up = _sides(value, low, high)
    wide_low, wide_high = value * math.exp(-math.hypot(down, z * sigma)), value * math.exp(math.hypot(up, z * sigma))
    # a side the rungs left at 0 or past the value (no log reach) is kept, never narrowed
    return (wide_low if low is None else min(wide_low, low)), (wide_high if high is None else max(wide_high, high))


def coverage(checks: list[Check], confidence: float = 0.95) -> dict[str, dict]:
    """Per form and in all: the figures, how many lay inside their printed interval, how many
    inside that interval widened by the form's error measured on the OTHER checks (leave one
    check out: a figure never widens its own interval), and how many within [0.67, 1.5]."""
    z = float(z_ppf(0.5 + confidence / 2))
    out: dict[str, dict] = {}
    for form in (*FORMS, "all"):
        xs = [c for c in checks if form in ("all", c.form)]
        printed = [c for c in xs if c.inside is not None]
        widened = [c for c in xs if c.log_sides is not None]
        # measured = predicted ÷ ratio: below the prediction (ratio > 1) the lower side holds it, else the upper
        held = sum(math.hypot(c.log_sides[c.ratio <= 1], z * _sigma(checks, c)) >= abs(math.log(c.ratio))
                   for c in widened)
        out[form] = {"figures": len(xs), "printed": len(printed), "inside": sum(c.inside for c in printed),
                     "widened": len(widened), "inside_widened": held,
                     "within_band": sum(PREDICTION_BAND[0] <= c.ratio <= PREDICTION_BAND[1] for c in xs),
                     "error": error(checks, form) if form != "all" else None}
    return out


def _sigma(checks: list[Check], c: Check) -> float:
    """The error a figure's interval is widened by, measured on the other checks: at its distance
    for a restart (as ``widen_restart`` widens it), the form's own for a load."""
    return error_at(checks, c.form, c.past, c.check) if c.form == "restart" else error(checks, c.form, c.check)


# ---------------------------------------------------------------- the rungs' own interval
def resample(reps: list[LoadRepetition], rng, sigma: float = 0.0) -> list[LoadRepetition]:
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


def _rerun_range(point: float, q) -> tuple[float, float]:
    """Where a second run of the ladder would put its point: the bootstrap quantiles' distance
    from the point (in log, errors being multiplicative) × √2, the difference of two runs'
    independent errors."""
    if point <= 0 or min(q) <= 0:
        return float(q[0]), float(q[1])
    lo, hi = (point * (v / point) ** math.sqrt(2) for v in q)
    return float(lo), float(hi)


def interval(point: float, boot: list, ends: list, a: float) -> tuple[float, float]:
    """A figure's interval: the re-run range of its bootstrap values' ``a`` quantiles, widened to
    hold the point and every leave-one-rung-out point (``ends``)."""
    lo, hi = _rerun_range(point, np.quantile(boot, [a, 1 - a]))
    return float(min([lo, point, *ends])), float(max([hi, point, *ends]))
