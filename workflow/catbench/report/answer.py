"""The report's first section: how long the user's catalog takes to load by each method, at
the rows a ladder's prediction was made for (``predict/prediction.json``); without one, how
to get it. Its plot (time against rows) is ``plots/at_scale.py``."""

from __future__ import annotations

import math

from ..core.infra.targets import human
from .findings import ONE_FILE_AT_A_TIME
from .stats import ReportSpec

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


ENGINE_NAMES = {"innodb": "InnoDB", "rocksdb": "MyRocks", "myisam": "MyISAM"}


def _protocol(r: dict) -> str:
    """'on InnoDB with random ids': the engine and the key order of a one-file-at-a-time load."""
    engine = r.get("engine") or "innodb"
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
                  key=lambda r: (r.get("engine") or "innodb") != "innodb")
    if slow:
        t = _all_rows(slow[0])[0]
        text += f"; the one-file-at-a-time protocol {_protocol(slow[0])} **{short(t)}**, {t / s:,.0f}× as long"
    return text + "."


def answer(t, report: ReportSpec) -> list:
    """The answer first: per target, each method's time to load all N rows with its interval
    (where a second run of the same ladder would put it), its regime, the table's size."""
    if not t.prediction:
        return [("h2", "At your scale"), ("p", HOW_TO)]
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
    return out
