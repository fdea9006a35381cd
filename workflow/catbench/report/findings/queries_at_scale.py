"""The report's "At your scale" for queries: each query class on the user's nodes and catalog
per target and engine (a prediction's "queries": Qserv's plan from its chunk queries,
predict/queries/model.md; the engines that read a layout, DuckDB and LSDB, from their whole
queries, predict/queries/scan.py): time, interval and n, cache, bound, or the refusal with the run
that would lift it (``tables/queries_at_scale.csv``); the engines side by side per class where
more than one was priced; at a few node counts ``queries_by_nodes`` (Qserv's plan), drawn by
``plots/queries_at_scale.py``."""

from __future__ import annotations

import math
from pathlib import Path

from ...core.infra.sizes import human
from ..spec import MetricsError

QUERY_HOW_TO = ("No query answer at your scale in this run: with stage `queries` in `stages` the predict stage "
                "answers each query class on `predict.queries.nodes` nodes from the run's own chunk queries "
                "(`make query-ladder` for rungs at a node's scale; workflow/catbench/predict/queries/model.md).")
QUERY_AGAIN = ("No query answer at your scale in this run's prediction, though the run measured queries: make it "
               "again (`snakemake --forcerun predict_loads`, stage `predict`), or "
               "`catbench predict … --nodes N --objects X --out results/<run>/predict/prediction.json`.")
# the CSV's columns, units in their names; a class the model refused has its figures empty
QUERY_COLUMNS = ("target", "engine", "query", "nodes", "workers", "objects", "chunks", "node_data_bytes", "ram_bytes",
                 "cache", "seconds", "ci_low_s", "ci_high_s", "n_fitted", "bound", "tail_chunk_s", "chunk_s", "czar_s",
                 "refused", "run")


def _query_number(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _query_answer(pp: Path, target: str, a) -> dict:
    if not isinstance(a, dict) or not isinstance(a.get("classes", {}), dict) \
            or not all(isinstance(p, dict) for p in a.get("classes", {}).values()):
        raise MetricsError(f"{pp}: queries.{target} is not an object with \"classes\" objects "
                           "(catbench predict --nodes)")
    return a


def _engine_rows(pp: Path, target: str, engine: str, a) -> list[dict]:
    a = _query_answer(pp, target, a)
    at = {"target": target, "engine": engine,
          **{k: _query_number(a.get(k)) for k in ("nodes", "workers", "objects", "chunks", "node_data_bytes",
                                                  "ram_bytes")}}
    out = [{**dict.fromkeys(QUERY_COLUMNS), **at, "refused": str(a["refused"])}] if a.get("refused") else []
    for q, p in (a.get("classes") or {}).items():
        out.append({**dict.fromkeys(QUERY_COLUMNS), **at, "query": q, "cache": p.get("cache"),
                    "seconds": _query_number(p.get("seconds")), "ci_low_s": _query_number(p.get("ci_low")),
                    "ci_high_s": _query_number(p.get("ci_high")), "n_fitted": _query_number(p.get("n")),
                    "bound": p.get("bound"), "tail_chunk_s": _query_number(p.get("tail_chunk_s")),
                    "chunk_s": _query_number(p.get("chunk_s")), "czar_s": _query_number(p.get("czar_s")),
                    "refused": p.get("refused"), "run": p.get("run")})
    return out


def query_rows(pp: Path, doc) -> list[dict]:
    """A row per (target, engine, class) of a prediction's "queries" (QUERY_COLUMNS): Qserv's plan
    (engine mysql) where the target has its classes, then each engine of its "engines"; a target
    or engine the model refused whole one row without a class; none: []."""
    if doc is None:
        return []
    if not isinstance(doc, dict):
        raise MetricsError(f"{pp}: \"queries\" is not an object of targets (catbench predict --nodes)")
    out = []
    for target, a in doc.items():
        a = _query_answer(pp, target, a)
        if a.get("refused") or a.get("classes"):
            out += _engine_rows(pp, target, "mysql", a)
        engines = a.get("engines") or {}
        if not isinstance(engines, dict):
            raise MetricsError(f"{pp}: queries.{target}.engines is not an object of engines (catbench predict --nodes)")
        for engine, e in engines.items():
            out += _engine_rows(pp, target, engine, e)
    return out


def query_tables(pp: Path, doc) -> dict:
    """A prediction's "queries" as the report's two tables: the answer and its node-count curve."""
    return {"queries_at_scale": query_rows(pp, doc), "queries_by_nodes": by_nodes_rows(doc)}


def by_nodes_rows(doc) -> list[dict]:
    """A row per (target, class, node count) of each answer's "by_nodes" (a refused class: left out)."""
    out = []
    for target, a in (doc or {}).items():
        for n, classes in ((a or {}).get("by_nodes") or {}).items():
            for q, s in (classes or {}).items():
                if _query_number(s) is not None and str(n).isdigit():
                    out.append({"target": target, "query": q, "nodes": int(n), "seconds": float(s),
                                "asked": int(n) == a.get("nodes")})
    return out


def qdur(s) -> str:
    """A query's time as a person reads it: 3.4 ms, 8.2 s, 3.7 min, 4.4 h."""
    if not isinstance(s, (int, float)) or not math.isfinite(s):
        return "–"
    if s < 1:
        return f"{s * 1e3:.3g} ms"
    for div, unit, cut in ((86400, "days", 2 * 86400), (3600, "h", 2 * 3600), (60, "min", 120)):
        if s >= cut:
            return f"{s / div:,.1f} {unit}"
    return f"{s:.3g} s"


def _query_reason(r: dict) -> str:
    """A refusal without its class's name (the model's sentence opens with it)."""
    text = r.get("refused") or ""
    return text.removeprefix(f"{r['query']}: ") if r.get("query") else text


def _query_row(r: dict) -> list:
    if r.get("refused"):
        return [r["query"], "no answer", "–", "–", "–", f"refused: {_query_reason(r)}", "–"]
    n = "–" if r.get("n_fitted") is None else f"{r['n_fitted']:,.0f}"
    return [r["query"], qdur(r.get("seconds")), f"{qdur(r.get('ci_low_s'))} – {qdur(r.get('ci_high_s'))}", n,
            r.get("cache") or "–", r.get("bound") or "–", qdur(r.get("tail_chunk_s"))]


def _query_where(first: dict) -> str:
    """'25 nodes, 10,000,000,000 Objects in 105 chunks' (', 8 workers' for a Dask cluster)."""
    objects = f", {first['objects']:,.0f} Objects" if first.get("objects") else ""
    chunks = f" in {first['chunks']:,.0f} chunks" if first.get("chunks") else ""
    nodes = f"{first['nodes']:,.0f}" if first.get("nodes") else "?"
    workers = f", {first['workers']:,.0f} Dask workers" if first.get("workers") else ""
    return f"{nodes} node{'s' if first.get('nodes') != 1 else ''}{workers}{objects}{chunks}"


def _query_memory(first: dict) -> str:
    """How a node's data stands to its memory: what decides warm or cold."""
    held, ram = first.get("node_data_bytes"), first.get("ram_bytes")
    if not held or not ram:
        return ""
    what = "chunk tables" if first.get("engine") in (None, "mysql") else "its layout"
    return (f"; a node holds {human(held)} of {what}, " +
            (f"within its {human(ram)} of memory: warm" if held <= ram else f"past its {human(ram)} of memory: cold"))


def _label(r: dict) -> str:
    return f"{r['target']} · {r.get('engine') or 'mysql'}"


def _query_lead(tg: str, rows: list) -> str:
    done = sorted((r for r in rows if r.get("seconds") is not None), key=lambda r: r["seconds"])
    head = f"{tg}: **Queries on {_query_where(rows[0])}**{_query_memory(rows[0])}"
    if not done:
        return head + "."
    fast, slow = done[0], done[-1]
    text = f"{head}. From {fast['query']} **{qdur(fast['seconds'])}** to {slow['query']} **{qdur(slow['seconds'])}**"
    return text + (f" ({slow['bound']})." if slow.get("bound") else ".")


def _side_by_side(rows: list, groups: list) -> list:
    """Each class's time per target and engine, one column each: the engines compared at the
    user's scale (empty with one)."""
    if len(groups) < 2:
        return []
    cell = {(_label(r), r["query"]): r for r in rows if r.get("query")}
    classes = list(dict.fromkeys(r["query"] for r in rows if r.get("query")))
    body = [[q, *(("–" if (r := cell.get((g, q))) is None or r.get("seconds") is None else
                   f"{qdur(r['seconds'])} [{qdur(r.get('ci_low_s'))}, {qdur(r.get('ci_high_s'))}]") for g in groups)]
            for q in classes]
    return [("table", "Each query class at your scale per target and engine, side by side (time and its "
                      "interval; each engine's own table below says its nodes, workers, cache and what bounds it). "
                      "The engines' intervals come from different fits: a difference inside them is not a finding.",
             ["class", *groups], body)]


def query_section(t) -> list:
    """Per target and engine: the lead, then its classes' table (or the one refusal shared by
    every class), after the engines side by side; where the prediction has no queries, the one
    sentence that would give them."""
    rows = t.queries_at_scale
    if not rows:
        return [("p", QUERY_AGAIN if t.queries else QUERY_HOW_TO)]
    groups = list(dict.fromkeys(_label(r) for r in rows))
    out = _side_by_side(rows, groups)
    for tg in groups:
        mine = [r for r in rows if _label(r) == tg]
        whole = next((r for r in mine if r.get("query") is None), None)
        classes = [r for r in mine if r.get("query") is not None]
        reasons = {(_query_reason(r), r.get("run")) for r in classes if r.get("refused")}
        if whole or (classes and len(reasons) == 1 and all(r.get("refused") for r in classes)):
            r = whole or classes[0]
            run = f" To answer it, {r['run']}." if r.get("run") else ""
            out.append(("p", f"{_query_lead(tg, mine)} No class could be answered: {_query_reason(r)}.{run}"))
            continue
        out.append(("p", _query_lead(tg, mine)))
        chunked = mine[0].get("engine") in (None, "mysql")
        how = ("its time with the interval of its chunk queries resampled, n the chunk queries it was fitted on, "
               "the cache it runs from, what bounds it and its largest chunk query; held on one node far past its "
               "rungs, not yet on more (workflow/catbench/predict/queries/model.md)." if chunked else
               "its time with the interval of the rungs' repetitions resampled, n the whole queries it was fitted "
               "on, the cache it runs from and what bounds it (workflow/catbench/predict/queries/scan.py).")
        head = ["class", "time", "interval", "n", "cache", "bound", *(["largest chunk"] if chunked else [])]
        out.append(("table", f"{tg}: each query class on {_query_where(mine[0])}: {how}", head,
                    [_query_row(r)[:len(head)] for r in classes]))
        runs = {r["run"] for r in classes if r.get("run")}
        out += [("p", f"To answer the refused classes, {run}.") for run in sorted(runs)]
    return out
