"""summary.md's content: the findings first (``findings``: the study's answers, each with
its interval), the checks, then side-by-side tables as in the 2017 storage study.

Each section is one small function in :data:`SECTIONS`, called with a :class:`Tables` view of
the final tables and the report's :class:`~.spec.ReportSpec`, and returning blocks: ``("h2", text) |
("h3", text) | ("p", text) | ("ul", [text]) | ("table", caption, header, rows)``;
``to_markdown`` (below) and ``html`` render them.
"""

from __future__ import annotations

import math
import statistics

from .at_scale import answer, dur, method, your_catalog
from .findings import PREDICTION_BAND, acked_lost
from .findings.checks import checks, index_only
from .findings import findings as _findings
from .spec import ReportSpec
from .stats import Figure, verdict
from .wording import num, unbounded_once


# Tables' attribute -> the final table it holds
TABLE_OF = {"storage": "storage", "loads": "load_time", "rate": "load_rate", "queries": "queries",
            "restart": "restart", "chunks": "chunks", "stages": "stages", "collapse": "load_collapse",
            "query_runs": "query_runs", "restart_runs": "restart_runs", "not_run": "load_not_run",
            "cluster": "cluster_restart", "cluster_load": "cluster_load", "isolation": "isolation",
            "chunk_load_chunks": "chunk_load_chunks", "query_chunks": "query_chunks",
            "layouts": "layouts",
            "prediction": "prediction",   # predict/prediction.json, a row per load
            "prediction_validation": "prediction_validation", "load_io": "load_io", "curve": "load_curve",
            "restart_at_scale": "restart_at_scale",   # predict/prediction.json "restarts"
            "queries_at_scale": "queries_at_scale", "queries_by_nodes": "queries_by_nodes"}   # its "queries"


class Tables:
    """The final tables as lists of row dicts (a missing table is empty; the attributes are
    :data:`TABLE_OF`'s keys), plus the targets (name -> targets/<name>.json) and the user's
    files read (inputs.RunInputs.own)."""

    def __init__(self, targets: dict | None = None, own: dict | None = None, **tables):
        unknown = set(tables) - set(TABLE_OF)
        if unknown:
            raise TypeError(f"Tables: no table {sorted(unknown)}")
        for name in TABLE_OF:
            setattr(self, name, list(tables.get(name) or []))
        self.targets, self.own = targets or {}, own or {}

    @classmethod
    def of(cls, t: dict, targets: dict | None = None, own: dict | None = None) -> Tables:
        return cls(targets, own, **{name: t.get(table, []) for name, table in TABLE_OF.items()})


# ---------------------------------------------------------------- formatting
def _column(r: dict) -> str:
    """A load's column in the side-by-side tables: its strategy, with its engine when not InnoDB."""
    e = r["engine"]
    return r["strategy"] if e == "innodb" else f"{r['strategy']} ({e})"


def _order(values) -> list:
    return list(dict.fromkeys(values))


# ---------------------------------------------------------------- findings
def findings(t: Tables, report: ReportSpec) -> list:
    return [("h2", "Findings")] + _findings(t, report)


# ---------------------------------------------------------------- prediction
def _predicted(r: dict) -> tuple[str, str]:
    """(the predicted figure, its interval) of one load: seconds, or rows by the time limit."""
    if r.get("refused"):
        return f"no prediction: {r['refused']}", "–"
    if r.get("stopped"):
        return (f"{num(r.get('rows'))} rows by the {num(r.get('seconds'))} s limit",
                f"[{num(r.get('rows_ci_low'))}, {num(r.get('rows_ci_high'))}] rows")
    return dur(r.get("seconds")), f"[{num(r.get('seconds_ci_low'))}, {num(r.get('seconds_ci_high'))}] s"


def _later(r: dict) -> str:
    """The later half's rate, its interval and the table ÷ pool it spans; and, for a load its
    limit stops, the time to load every row."""
    if r.get("refused") or not r.get("later_half_rate"):
        return "–"
    x = r.get("later_half_x") or [None, None]
    text = (f"{num(r['later_half_rate'])} rows/s [{num(r.get('later_half_rate_ci_low'))}, "
            f"{num(r.get('later_half_rate_ci_high'))}] at table ÷ pool {num(x[0])}–{num(x[1])}")
    if r.get("stopped") and r.get("all_rows_seconds"):
        text += f"; all rows in {dur(r['all_rows_seconds'])}"
    return text


def _trust(rows: list) -> str:
    """How far to trust the predictions: the validation's worst predicted ÷ measured."""
    lo, hi = PREDICTION_BAND
    done = [r for r in rows if isinstance(r.get("predicted_over_measured"), (int, float))
            and 0 < r["predicted_over_measured"] < math.inf]
    if not done:
        return ("**How far to trust it: unknown.** No load had two rungs to predict its largest from (or "
                "the model refused each), so nothing checked the model on this machine.")
    worst = max(done, key=lambda r: max(r["predicted_over_measured"], 1 / r["predicted_over_measured"]))
    inside = sum(lo <= r["predicted_over_measured"] <= hi for r in done)
    ratio = worst["predicted_over_measured"]
    off = max(ratio, 1 / ratio)
    verdict = (f"within [{lo}, {hi}]: expect a prediction to be off by up to about {off:.2f}× either way"
               if lo <= ratio <= hi else f"outside [{lo}, {hi}]: the model did not hold here; do not trust a "
               f"prediction to better than {off:.2f}× either way")
    return (f"**How far to trust it**: each ladder's largest rung predicted from its smaller ones came out at "
            f"{num(min(r['predicted_over_measured'] for r in done))}–"
            f"{num(max(r['predicted_over_measured'] for r in done))}× its measured figure, {inside} of "
            f"{len(done)} loads within [{lo}, {hi}]; the worst, {ratio:.2f}× ({worst['target']}/{method(worst)}), "
            f"is {verdict}, and less where the target is further beyond the rungs than the validation was.")


def prediction(t: Tables, report: ReportSpec) -> list:
    """This run's load times predicted from a ladder's smaller runs (predict/prediction.json):
    how far to trust them, the fastest per target, a table per target and the validation."""
    if not t.prediction and not t.prediction_validation:
        return []
    n = next((r.get("target_rows") for r in t.prediction if r.get("target_rows")), None)
    out = [("h2", f"Prediction at {num(n)} rows (from a ladder of smaller runs)"),
           ("p", _trust(t.prediction_validation))]
    targets = _order(r["target"] for r in t.prediction)
    for tg in targets:
        rows = [[method(r), *_predicted(r), "–" if r.get("refused") or r.get("table_bytes") is None
                 else f"{num(r['table_bytes'] / 1e9)} GB", r.get("regime") or "–", _later(r)]
                for r in t.prediction if r["target"] == tg]
        out.append(("table", f"{tg}: predicted load (variant/engine/strategy/id layout), its interval (where "
                             "the same ladder run again would put it, a rung's between-run noise included), "
                             "the table's bytes, what bounds it, and the rate over the later half of the rows "
                             "(past a collapse, what a large load is made of).",
                    ["method", "predicted", "interval", "table", "regime", "later half"], rows))
    lo, hi = PREDICTION_BAND
    rows = []
    for r in t.prediction_validation:
        head = [f"{r['target']}/{method(r)}", num(r.get("rung_rows")),
                ", ".join(num(x) for x in r.get("from_rungs") or []), num(r.get("n_measured"))]
        if r.get("refused"):
            rows.append(head + [f"not predicted: {r['refused']}", "–", "–", "–", "–"])
            continue
        unit = r.get("compared") or "seconds"
        ratio = r.get("predicted_over_measured")
        rows.append(head + [unit, num(r.get(f"predicted_{unit}")), num(r.get(f"measured_{unit}")),
                            num(ratio), "yes" if ratio is not None and lo <= ratio <= hi else "NO"])
    if rows:
        out.append(("table", f"Validation: each ladder's largest rung predicted from its smaller ones against "
                             f"the median of its n repetitions (seconds, or rows for a load its time limit "
                             f"stopped); the model holds where predicted ÷ measured is within [{lo}, {hi}].",
                    ["load", "rung rows", "from rungs", "n", "compared", "predicted", "measured",
                     "predicted ÷ measured", f"within [{lo}, {hi}]"], rows))
    return out


# ---------------------------------------------------------------- side-by-side tables
def storage_load(t: Tables, report: ReportSpec) -> list:
    """The 2017 storage study's "storage | load time" table: fio on each target next to the median load
    time of every strategy on it (one row per target and variant)."""
    storage, loads = t.storage, t.loads
    tests = _order(r["test"] for r in storage)
    fio = {(r["target"], r["test"]): r for r in storage}
    strategies = _order(_column(r) for r in loads)
    lt = {(r["target"], r["variant"], _column(r)): r for r in loads}
    header = ["target", "variant", "filesystem"]
    header += [f"{x} MB/s" if x.startswith("seq") else f"{x} IOPS" for x in tests]
    header += [f"{s} s" for s in strategies]
    rows = []
    for tg, v in _order([(r["target"], r["variant"]) for r in loads]
                        or [(r["target"], "–") for r in storage]):
        row = [tg, v, str(t.targets.get(tg, {}).get("fstype") or "–")]
        for x in tests:
            r = fio.get((tg, x))
            row.append(num(None if r is None else (r["MBps"] if x.startswith("seq") else r["iops"])))
        for s in strategies:
            r = lt.get((tg, v, s), {})
            row.append(("stopped at " if r.get("stopped") else "") + num(r.get("seconds"))
                       + (f" (n={r['n']})" if r.get("n") else ""))
        rows.append(row)
    return [("h2", "Storage | load time"),
            ("table", "fio on each target (medians over its repetitions) next to the median load time "
                      "of the secondary index with each strategy (intervals in load_time.csv).", header, rows)]


def _load_of(r: dict) -> tuple:
    return r["target"], r["variant"], _column(r)


def _rep(r: dict) -> int:
    return r.get("repetition") or 0


def load_rate(t: Tables, report: ReportSpec) -> list:
    """Load rate per interval, targets side by side."""
    out, lowest = [], {}   # the first repetition each load kept (an adaptive load's pilot is not kept)
    for r in t.rate:
        lowest[_load_of(r)] = min(lowest.get(_load_of(r), _rep(r)), _rep(r))
    first = [r for r in t.rate if _rep(r) == lowest[_load_of(r)]]
    for variant, strategy in _order((r["variant"], _column(r)) for r in first):
        rs = [r for r in first if r["variant"] == variant and _column(r) == strategy]
        tgs = _order(r["target"] for r in rs)
        by = {(r["target"], r["interval"]): r for r in rs}
        header = ["interval"] + [h for tg in tgs for h in (f"{tg} end s", f"{tg} rows/s",
                                                           f"{tg} write MB/s", f"{tg} table MiB")]
        rows = []
        for i in sorted({r["interval"] for r in rs}):
            row = [str(i)]
            for tg in tgs:
                r = by.get((tg, i), {})
                tb = r.get("table_bytes_end")
                row += [num(r.get("end_s")), num(r.get("rows_per_s")), num(r.get("target_write_MBps")),
                        num(None if tb is None else tb / 2**20)]
            rows.append(row)
        out.append(("h2", f"Load rate per interval ({variant}/{strategy})"))
        out.append(("table", "Rows loaded per second and bytes written to the target in each "
                             "interval since the start of the load (its first repetition kept; every "
                             "repetition kept is in load_rate.csv).", header, rows))
    return out


def queries(t: Tables, report: ReportSpec) -> list:
    if not t.queries:
        return []
    qs = t.queries
    cols = _order((r["target"], r["query_engine"]) for r in qs)
    by = {(r["query"], r["cache"], r["target"], r["query_engine"]): r for r in qs}
    header = ["query", "cache"] + [f"{tg}/{e} p50 s" for tg, e in cols] + ["answer rows", "agrees"]
    rows = []
    for q, cache in _order((r["query"], r["cache"]) for r in qs):
        ag = all(r.get("agrees") is not False for r in qs if r["query"] == q)
        counts = sorted({r.get("result_rows") for r in qs if r["query"] == q} - {None})
        empty = ag and counts == [0]     # agreeing on no rows checks nothing: said so
        rows.append([q, cache] + [num(by.get((q, cache, tg, e), {}).get("p50_s")) for tg, e in cols]
                    + [" / ".join(num(c) for c in counts) or "–",
                       f"yes ({'both' if len(cols) == 2 else 'all'} empty)" if empty else "yes" if ag else "NO"])
    return [("h2", "Query latency"),
            ("table", "Median seconds per query, target and query engine.", header, rows)] + _bounds(t, report) \
        + _layouts(t)


def _told(a: list, b: list, report: ReportSpec) -> float | None:
    """How many times b's runs take a's, where the rule tells b slower; None otherwise."""
    v = verdict(Figure.of(a), Figure.of(b), threshold=report.practical_threshold, alpha=report.alpha)
    return v.ratio if v.kind == "better" else None


def _bound(secs: dict, report: ReportSpec) -> str:
    """What a query's time is bound by, read from its cache states' runs (``secs``: state -> s)."""
    warm, past = secs.get("warm"), secs.get("evicted") or secs.get("cold")
    if not warm or not past:
        return "–"
    name = "evicted" if secs.get("evicted") else "cold (a restart too)"
    read = _told(warm, past, report)
    start = _told(secs["evicted"], secs["cold"], report) if secs.get("evicted") and secs.get("cold") else None
    said = ([f"reading its data ({name} {read:.2g}× warm)"] if read else []) + \
        ([f"the engine's start (cold {start:.2g}× evicted)"] if start else [])
    return "; ".join(said) or f"its own work (CPU, tasks): {name} not told from warm"


def _bounds(t: Tables, report: ReportSpec) -> list:
    """Per query, target and engine, what bounds it: the data read (a past-the-cache state the rule
    tells slower than warm), the engine's start (cold slower than evicted), or neither."""
    runs: dict = {}
    for r in t.query_runs or []:
        if r.get("seconds") is not None:
            runs.setdefault((r["query"], r["target"], r["query_engine"]), {}).setdefault(r["cache"], []) \
                .append(r["seconds"])
    rows = [[q, f"{tg}/{e}", _bound(secs, report)] for (q, tg, e), secs in runs.items()
            if "warm" in secs and len(secs) > 1]
    if not rows:
        return []
    return [("table", "What bounds each query, read from its cache states with the comparison rule (not a "
                      "profile): evicted — the layout's page cache dropped, the engine kept (queries.evicted) — "
                      "or cold against warm for its reads, cold against evicted for its start.",
             ["query", "target/engine", "bound"], rows)]


def _layouts(t: Tables) -> list:
    """Each engine's layout beside the others: its build (n = 1) and the bytes it keeps."""
    if not t.layouts:
        return []
    rows = [[r["target"], r["query_engine"], r["layout"], num(r.get("rows")),
             "– (the partition's files)" if r.get("build_s") is None else f"{num(r['build_s'])} s"
             + (f" + index {num(r['index_s'])} s" if r.get("index_s") is not None else ""),
             num(r.get("MiB")), num(r.get("bytes_per_row"))] for r in t.layouts]
    return [("table", "What each engine reads on each target: its build (one run, n = 1) and the bytes it keeps.",
             ["target", "engine", "layout", "rows", "build", "MiB", "bytes/row"], rows)]


def restart(t: Tables, report: ReportSpec) -> list:
    if not t.restart:
        return []
    phases = _order(r["phase"] for r in t.restart)
    header = ["target", "kind", "buffer pool dump", "n"] + [f"{p} s" for p in phases] + ["rows lost"]
    rows = []
    for tg, kind, bp in _order((r["target"], r["kind"], r.get("buffer_pool_load")) for r in t.restart):
        rs = {r["phase"]: r for r in t.restart if (r["target"], r["kind"], r.get("buffer_pool_load")) == (tg, kind, bp)}
        n = max((r.get("n") or 0) for r in rs.values())
        rows.append([tg, kind, "–" if bp is None else ("on" if bp else "off"), num(n)]
                    + [num(rs[p]["seconds"]) if p in rs else "–" for p in phases]
                    + [num(sum(r.get("rows_lost") or 0 for r in rs.values()))])
    return [("h2", "Restart"),
            ("table", "Median seconds per phase over the repetitions (intervals in restart.csv); "
                      "phases named A_to_B are cumulative from A.", header, rows)]


CLUSTER_PHASES = ("node_down", "state_transfer", "process_start_to_synced", "process_start_to_first_answer",
                  "down_to_first_answer")


def cluster(t: Tables, report: ReportSpec) -> list:
    """Galera node restarts: the headline phases per target and kind, the insert rate while
    the node was down, acknowledged inserts lost."""
    if not t.cluster:
        return []
    header = ["target", "kind", "transfer", "n"] + [f"{p} s" for p in CLUSTER_PHASES] + [
        "inserts/s during", "acked lost"]
    rows = []
    for tg, kind in _order((r["target"], r["kind"]) for r in t.cluster):
        rs = {r["phase"]: r for r in t.cluster if (r["target"], r["kind"]) == (tg, kind)}
        ins = next((x.get("inserts_per_s") for x in t.cluster_load if (x["target"], x["kind"], x["window"])
                    == (tg, kind, "during") and "insert" in str(x.get("role") or "").split("+")), None)
        rows.append([tg, kind, str(rs.get("state_transfer", {}).get("transfer") or "–"),
                     num(max((r.get("n") or 0) for r in rs.values()))]
                    + [num(rs[p]["seconds"]) if p in rs else "–" for p in CLUSTER_PHASES]
                    + [num(ins), num(acked_lost(t.cluster, tg, kind))])
    return [("h2", "Cluster node restart"),
            ("table", "Median seconds per phase of a Galera node restarted under load (intervals in "
                      "cluster_restart.csv); inserts/s on the insert node while it was down "
                      "(cluster_load.csv).", header, rows)]


def chunks(t: Tables, report: ReportSpec) -> list:
    if index_only(t):
        return [("h2", "Chunks"), ("p", "None: this run is index-only (index.source: generate or file).")]
    if not t.chunks:
        return []
    rows_ = [(r["object_rows"] or 0) + (r["source_rows"] or 0) for r in t.chunks]
    sizes = [r["tsv_bytes"] for r in t.chunks if r.get("tsv_bytes") is not None]
    header = ["chunks", "rows min", "rows median", "rows max", "TSV MiB median", "TSV MiB max",
              "largest / median"]
    row = [num(len(t.chunks)), num(min(rows_)), num(float(statistics.median(rows_))), num(max(rows_))]
    if sizes:
        med = statistics.median(sizes)
        row += [num(med / 2**20), num(max(sizes) / 2**20), num(max(sizes) / med if med else None)]
    else:
        row += ["–"] * 3
    return [("h2", "Chunks"),
            ("table", "Object+Source rows and TSV bytes per chunk (size skew).", header, [row])]


def stages(t: Tables, report: ReportSpec) -> list:
    if not t.stages:
        return []
    return [("h2", "Data preparation stages"),
            ("table", "Wall time and throughput of each stage.",
             ["stage", "jobs", "rows", "wall s", "rows/s", "peak RSS MB"],
             [[r["stage"], num(r["jobs"]), num(r["rows"]), num(r["wall_seconds"]),
               num(r["rows_per_s"]), num(r["peak_rss_MB"])] for r in t.stages])]


# The sections of summary.md, in order: the answers first.
SECTIONS = (your_catalog, answer, findings, prediction, checks, storage_load, load_rate, queries, restart, cluster,
            chunks, stages)
# How many leading sections the report shows open (the rest go under <details>); the first
# screen (report/html.py) is the first two: the catalog, then the answer at its scale.
FIRST_SCREEN = 2
HEADLINE_SECTIONS = 5


def summary_sections(t: dict, targets: dict | None, report: ReportSpec, sections=SECTIONS, own=None) -> list:
    """Every section's blocks for the final tables ``t`` ({table: [row dicts]}); ``targets`` =
    {name: targets/<name>.json}; ``own``: the user's files read (inputs.RunInputs.own)."""
    view = Tables.of(t, targets, own)
    return unbounded_once([block for sec in sections for block in sec(view, report)])


# ---------------------------------------------------------------- summary.md
def _md_cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def to_markdown(sections: list, title: str = "catbench summary") -> str:
    lines = [f"# {title}", ""]
    for block in sections:
        kind = block[0]
        if kind == "h2":
            lines += [f"## {block[1]}", ""]
        elif kind == "h3":
            lines += [f"### {block[1]}", ""]
        elif kind == "p":
            lines += [block[1], ""]
        elif kind == "ul":
            lines += [f"- {item}" for item in block[1]] + [""]
        elif kind == "table":
            _, caption, header, rows = block
            lines += [caption, "", "| " + " | ".join(map(_md_cell, header)) + " |",
                      "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
            lines += ["| " + " | ".join(map(_md_cell, r)) + " |" for r in rows] + [""]
    return "\n".join(lines)
