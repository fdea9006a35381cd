"""The report's first section: how long the user's catalog takes to load by each method at the
rows a ladder's prediction was made for (``predict/prediction.json``; without one, how to get it;
its plot ``plots/at_scale.py``). Then each restart kind's total and dominant phase at the node's
size (its "restarts": predict/restarts/model.md; ``tables/restart_at_scale.csv``, a far check's
measured figures beside). Then each query class on the user's nodes and catalog per target and engine
(``findings/queries_at_scale.py``).

Before it, ``your_catalog``: the user's catalog as this run made it (files, rows, footprint, density,
copies, chunks, bytes a row) from what the stages wrote: catalog/patch/files.json, the catalog's shape
beside the partition's figures (metrics/partition.json "catalog", core/sky/chunking.py ``facts``), chunks.tsv."""

from __future__ import annotations

import json
import math
from pathlib import Path

from ..core.index.table import ENGINES
from ..core.infra.sizes import duration, human
from .findings import ONE_FILE_AT_A_TIME, PREDICTION_BAND
from .findings.queries_at_scale import query_section
from .spec import MetricsError, ReportSpec

HOW_TO = ("**No prediction at your scale in this run.** `make ladder` runs a ladder of smaller runs of this "
          "study and predicts it at `predict.target_rows`; for your own study, `catbench predict --config C "
          "--results <rung> … --rows N --pool SIZE --out results/<run>/predict/prediction.json`, then "
          "`snakemake report --forcerun report_html` (workflow/catbench/predict/model.md).")


def method(r: dict) -> str:
    return "/".join(str(r.get(k)) for k in ("variant", "engine", "strategy", "id_layout"))


def dur(s) -> str:
    """'3,600 s (1.0 h)'."""
    if not isinstance(s, (int, float)) or not math.isfinite(s):
        return "–"
    return f"{s:,.0f} s" + (f" ({s / 3600:.1f} h)" if s >= 3600 else f" ({s / 60:.1f} min)" if s >= 60 else "")


def short(s) -> str:
    """A duration as a person reads it at a glance: 45 s, 12 min, 9.2 h, 8.8 days."""
    if not isinstance(s, (int, float)) or not math.isfinite(s):
        return "–"
    for div, unit, cut in ((86400, "days", 2 * 86400), (3600, "h", 2 * 3600), (60, "min", 120)):
        if s >= cut:
            return f"{s / div:,.1f} {unit}"
    return f"{s:,.0f} s"


def _all_rows(r: dict) -> tuple[float | None, float | None, float | None]:
    """Seconds to load every row with its interval (past a time limit for a load it stops)."""
    if r.get("stopped"):
        return r.get("all_rows_seconds"), r.get("all_rows_seconds_ci_low"), r.get("all_rows_seconds_ci_high")
    return r.get("seconds"), r.get("seconds_ci_low"), r.get("seconds_ci_high")


def _row(r: dict) -> list:
    if r.get("refused"):
        return [method(r), "no answer", "–", "–", "–", f"refused: {r['refused']}"]
    s, lo, hi = _all_rows(r)
    table = r.get("table_bytes")
    note = "–"
    if r.get("stopped"):    # the table of every row, not of the rows by the limit
        table = r["bytes_per_row"] * r["target_rows"] if r.get("bytes_per_row") and r.get("target_rows") else None
        note = f"its {r['seconds']:,.0f} s limit stops it at {r['rows']:,.0f} rows"
    x = r.get("later_half_x") or [None, None]
    if r.get("later_half_rate") and r.get("strategy") == ONE_FILE_AT_A_TIME and None not in x:
        half = f"{r['later_half_rate']:,.0f} rows/s, table ÷ pool {x[0]:.1f}–{x[1]:.1f}"
        note = f"{note} (the later half of them at {half})" if r.get("stopped") else f"later half at {half}"
    table = "–" if table is None else f"{table / 1e9:,.1f} GB"
    return [method(r), short(s), f"{short(lo)} – {short(hi)}", r.get("regime") or "–", table, note]


ENGINE_NAMES = {name: e.label for name, e in ENGINES.items()}


def _protocol(r: dict) -> str:
    """'on InnoDB with random ids': the engine and the key order of a one-file-at-a-time load."""
    engine = r["engine"]
    layout = r.get("id_layout")
    name, _, order = (layout or "").partition(" (")    # "spatial (chunk order)": ids, then their order
    ids = "" if not layout else " with your own ids" if name == "source" else f" with {name} ids"
    ids += f" ({order}" if order else ""
    return f"on {ENGINE_NAMES.get(engine, engine)}{ids}"


def _lead(rows: list, n, pool) -> str:
    done = sorted((r for r in rows if not r.get("refused") and _all_rows(r)[0]), key=lambda r: _all_rows(r)[0])
    cache = f" with a {human(pool)} cache" if isinstance(pool, (int, float)) and pool else ""
    if not done:
        return f"**At {n:,.0f} rows**{cache}: no method could be predicted (each row below says why)."
    best = done[0]
    s, lo, hi = _all_rows(best)
    text = (f"**At {n:,.0f} rows**{cache}: fastest `{method(best)}` **{short(s)}** [{short(lo)} – {short(hi)}], "
            f"{best.get('regime')}")
    # the protocol as the 2017 study loaded it: on InnoDB when one was predicted, else the fastest
    slow = sorted((r for r in done if r.get("strategy") == ONE_FILE_AT_A_TIME and r is not best),
                  key=lambda r: r["engine"] != "innodb")
    if slow:
        t = _all_rows(slow[0])[0]
        text += f"; the one-file-at-a-time protocol {_protocol(slow[0])} **{short(t)}**, {t / s:,.0f}× as long"
    return text + "."


def answer(t, report: ReportSpec) -> list:
    """The answer first: per target, each method's time to load all N rows with its interval
    (where a second run of the same ladder would put it), its regime, the table's size."""
    if not t.prediction:    # the loads' how-to where the run loaded, or has no restart answer either
        how = [("p", HOW_TO)] if t.loads or not t.restart_at_scale else []
        return [("h2", "At your scale"), *how, *restart_section(t), *query_section(t), ("plot", "queries_at_scale")]
    n = next((r.get("target_rows") for r in t.prediction if r.get("target_rows")), None)
    pools = {r.get("pool_bytes") for r in t.prediction if r.get("pool_bytes")}
    pool = pools.pop() if len(pools) == 1 else None    # one cache for every engine, or none named
    out = [("h2", f"At your scale: {n:,.0f} rows" if n else "At your scale")]
    for tg in dict.fromkeys(r["target"] for r in t.prediction):
        mine = [r for r in t.prediction if r["target"] == tg]
        mine.sort(key=lambda r: (bool(r.get("refused")), _all_rows(r)[0] or math.inf))
        out.append(("p", f"{tg}: " + _lead(mine, n or 0, pool)))
        out.append(("table", f"{tg}: the time to load every row by each method, with the interval a second run "
                             "of the same ladder would fall in, what bounds it and the table's size "
                             "(workflow/catbench/predict/model.md).",
                    ["method", "all rows in", "interval", "regime", "table", "note"], [_row(r) for r in mine]))
    # ("plot", name): where the report draws that plot, each beside the table it plots
    return out + [("plot", "at_scale")] + restart_section(t) + query_section(t) + [("plot", "queries_at_scale")]


# ---------------------------------------------------------------- restarts
RESTART_HOW_TO = ("No restart at your scale in this run: `make restart-ladder` runs a restart study's rungs and predicts "
          "its node; for yours, `catbench predict --config C --results <rung> … --data 600G --pool 128G --redo 8G "
          "--out results/<run>/predict/prediction.json` (workflow/catbench/predict/restarts/model.md).")


def restart_rows(doc) -> list[dict]:
    """One row per (target, kind) of a prediction's "restarts" (none: []), with a far check's
    measured figures beside it where ``catbench predict --measured`` scored it."""
    out, at = [], (doc or {}).get("at") or {}
    seen = {json.dumps(m["key"], sort_keys=True): m for m in (doc or {}).get("measured") or []
            if isinstance(m, dict) and isinstance(m.get("key"), dict)}
    for p in (doc or {}).get("predictions") or []:
        if not isinstance(p, dict) or not isinstance(p.get("key"), dict):
            continue
        dom = next((x for x in p.get("phases") or [] if x.get("phase") == p.get("dominant")), {})
        m = seen.get(json.dumps(p["key"], sort_keys=True), {})
        out.append({"target": p["key"].get("target"), "kind": p["key"].get("kind"), **{k: p.get(k) for k in (
                        "total_s", "total_ci_low", "total_ci_high", "plan_s", "at_most_s", "confidence", "dominant")},
                    "dominant_s": dom.get("seconds"), "dominant_bound": dom.get("bound"),
                    **{k: dom.get(k) for k in ("driver", "quantity_bytes", "quantity_in_bytes", "past_rungs")},
                    "regime": "; ".join(p.get("regime") or []) or None, "refused": p.get("refused"),
                    **{k: at.get(k) for k in ("data_bytes", "pool_bytes", "redo_log_bytes")},
                    **{("n_measured" if k == "n" else k): m.get(k) for k in MEASURED}})
    return out


# the columns a far check's score adds (predict/restarts/model.py score)
MEASURED = ("total_measured_s", "total_ratio", "total_inside", "plan_covers", "n", "dominant_ratio", "dominant_inside", "measured_dominant",
            "measured_dominant_measured_s", "measured_dominant_ratio", "measured_dominant_inside", "dominant_agrees")


def _restart_row(r: dict) -> list:
    if r.get("refused"):
        return [r["kind"], "no answer", "–", "–", f"refused: {r['refused']}"]
    dom = f"{r['dominant']} {duration(r['dominant_s'])}, {r['dominant_bound']}"
    if r.get("driver") and r.get("past_rungs"):
        size = f" {human(r['quantity_bytes'])}" if r.get("quantity_in_bytes") else ""
        dom += f" ({r['driver']}{size}, {r['past_rungs']:,.1f}× the largest rung's)"
    return [r["kind"], duration(r["total_s"]) + (f" (plan for {duration(r['plan_s'])})" if r.get("plan_s") else ""),
            f"{duration(r['total_ci_low'])} – {duration(r['total_ci_high'])}", dom, r.get("regime") or "–"]


def _measured_cell(r: dict) -> str:
    """A far check's measured total; a miss said (outside [0.67, 1.5], or another phase dominant)."""
    if r.get("total_measured_s") is None:
        return "–"
    miss = not (PREDICTION_BAND[0] <= r["total_ratio"] <= PREDICTION_BAND[1]) or not r.get("dominant_agrees")
    return (f"{duration(r['total_measured_s'])} (n = {r['n_measured']}): {r['total_ratio']:.2f}, "
            f"{'inside' if r['total_inside'] else 'outside'} the interval; dominant {r['measured_dominant']} "
            f"{duration(r['measured_dominant_measured_s'])}" + ("" if r.get("dominant_agrees") else ", not the predicted")
            + (" — MISS" if miss else ""))


def restart_section(t) -> list:
    """The blocks after the loads' answer: a table per target, or how to get one."""
    if not t.restart_at_scale:
        return [("p", RESTART_HOW_TO)]
    level = next((r["confidence"] for r in t.restart_at_scale if r.get("confidence")), None)
    first = t.restart_at_scale[0]
    node = (f"a node of {human(first['data_bytes'])} of data, a {human(first['pool_bytes'])} buffer pool and a "
            f"{human(first['redo_log_bytes'])} redo log" if first.get("data_bytes") and first.get("pool_bytes")
            and first.get("redo_log_bytes") else "your node")
    out = []
    for tg in dict.fromkeys(r["target"] for r in t.restart_at_scale):
        mine = [r for r in t.restart_at_scale if r["target"] == tg]
        checked = any(r.get("total_measured_s") is not None for r in mine)
        out.append(("table", f"{tg}: how long {node} is out, each restart kind's total with its "
                             f"{level or 0.95:.0%} interval and the phase that dominates it "
                             "(workflow/catbench/predict/restarts/model.md).",
                    ["restart", "total", "interval", "dominant phase", "regime"]
                    + (["measured (predicted ÷ measured)"] if checked else []),
                    [_restart_row(r) + ([_measured_cell(r)] if checked else []) for r in mine]))
    return out


PREDICT = ("`catbench predict --config C --results <rung> … --rows N --pool SIZE "
           "--out results/<run>/predict/prediction.json` (or `make ladder`)")


def _n(v, digits: int = 0) -> str:
    return "–" if not isinstance(v, (int, float)) else f"{v:,.{digits}f}"


def _files(t) -> str:
    doc = t.own.get("patch")
    if not doc:
        return "the synthetic patch (catalog.patch)"
    paths = [f["path"] for f in doc.get("files", [])]
    more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
    return f"{len(paths)} file(s): {', '.join(paths[:3])}{more} ({_n(doc.get('rows'))} rows)"


def facts(t) -> list[list[str]]:
    """[what, figure] rows of the user's catalog; a figure no file gives is '–'."""
    cat = (t.own.get("stages_partition") or {}).get("catalog") or {}
    fp = (t.own.get("patch") or {}).get("footprint") or {}
    width, height = fp.get("width", cat.get("ra_width_deg")), fp.get("height", cat.get("dec_height_deg"))
    objects = sum(r.get("object_rows") or 0 for r in t.chunks) or cat.get("objects")
    sources = sum(r.get("source_rows") or 0 for r in t.chunks)
    rows = sum((r.get("object_rows") or 0) + (r.get("source_rows") or 0) + (r.get("overlap_rows") or 0)
               for r in t.chunks)
    text = sum(r.get("tsv_bytes") or 0 for r in t.chunks)
    per = [r.get("object_rows") or 0 for r in t.chunks]
    densest = f", densest place {_n(cat['densest'])}" if cat.get("densest", 0) > cat.get("density", 0) * 1.01 else ""
    grid = (f" at {cat['num_stripes']} x {cat['num_sub_stripes_per_stripe']} stripes"
            if cat.get("num_stripes") else "")
    return [
        ["files", _files(t)],
        ["patch rows", _n((t.own.get("patch") or {}).get("rows") or cat.get("patch_objects"))],
        ["footprint", f"{_n(width, 3)} x {_n(height, 3)} deg" if width and height else "–"],
        ["density", f"{_n(cat.get('density'))} objects/deg²{densest}" if cat.get("density") else "–"],
        ["copies", _n(cat.get("copies"))],
        ["catalog", f"{_n(objects)} objects + {_n(sources)} sources" if objects else "–"],
        ["chunks", f"{len(t.chunks):,}{grid}, largest {_n(max(per))} objects" if per else "–"],
        ["bytes a row", f"{_n(text / rows)} (TSV)" if rows and text else "–"],
    ]


def your_catalog(t, report) -> list:
    """The first section: the catalog, then where its prediction is (the next section) or
    the one command that makes it."""
    if not t.chunks and not t.own.get("patch") and not t.own.get("stages_partition"):
        return []       # an index study alone: no catalog
    # one paragraph, not a table: the answer's plot stays on the first screen below it
    said = "**Your catalog:** " + "; ".join(f"**{k}** {v}" for k, v in facts(t) if v != "–") + "."
    if not t.prediction:    # else the prediction follows
        said += f" The one command that predicts its load time at your scale: {PREDICT}."
    return [("h2", "Your catalog"), ("p", said)]


# What the report reads of a prediction row: the load's key as names, these as numbers (or null).
PREDICTION_KEY = ("target", "engine", "strategy")
PREDICTION_NUMBERS = ("seconds", "seconds_ci_low", "seconds_ci_high", "rows", "rows_ci_low", "rows_ci_high",
                      "table_bytes", "target_rows", "all_rows_seconds", "later_half_rate",
                      "later_half_rate_ci_low", "later_half_rate_ci_high", "rung_rows", "n_measured",
                      "predicted_over_measured", "predicted_seconds", "measured_seconds", "predicted_rows",
                      "measured_rows", "bytes_per_row")


def prediction_row(pp: Path, where: str, r: dict, numbers=PREDICTION_NUMBERS):
    """MetricsError unless ``r`` (a prediction's row at ``where`` in ``pp``) has its key's names
    and numbers (or null) where the report reads them."""
    key = r["key"]
    bad = [k for k in PREDICTION_KEY if not isinstance(key.get(k), str) or not key[k]]
    if bad:
        raise MetricsError(f"{pp}: {where}.key lacks {', '.join(bad)} as names (catbench predict --out writes them)")
    for k in numbers:
        v = r.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise MetricsError(f"{pp}: {where}.{k} is {v!r}, not a number (catbench predict --out writes one)")


# What the report reads of a prediction's curve (time against rows): numbers (or null).
CURVE_NUMBERS = ("rows", "pool_bytes", "seconds", "seconds_ci_low", "seconds_ci_high", "table_bytes",
                 "input_rows", "n", "seconds_min", "seconds_max", "target_rows")


def curve_rows(pp: Path, curve) -> list:
    """A row per predicted N (``kind`` predicted) and per measured run (``kind`` measured) of
    each load's curve, its key's names in every row."""
    if not isinstance(curve, list) or not all(isinstance(c, dict) and isinstance(c.get("key"), dict)
                                              for c in curve):
        raise MetricsError(f"{pp}: \"curve\" is not a list of objects with a \"key\" (catbench predict --out)")
    out = []
    for i, c in enumerate(curve):
        for kind in ("predicted", "measured"):
            points = c.get(kind) or []
            if not isinstance(points, list) or not all(isinstance(q, dict) for q in points):
                raise MetricsError(f"{pp}: curve[{i}].{kind} is not a list of objects (catbench predict --out)")
            for j, q in enumerate(points):
                row = {**q, "target_rows": c.get("target_rows")}
                prediction_row(pp, f"curve[{i}].{kind}[{j}]", {**row, "key": c["key"]}, CURVE_NUMBERS)
                out.append({**c["key"], **row, "kind": kind})
    return out
