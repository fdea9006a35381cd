"""summary.md's content: seed-style side-by-side tables, the fastest choices and failed checks.

Each section is one small function in :data:`SECTIONS`, called with a :class:`Tables` view of
the final tables and returning blocks: ``("h2", text) | ("p", text) | ("ul", [text]) |
("table", caption, header, rows)``; ``markdown`` and ``html`` render them.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field


@dataclass
class Tables:
    """The final tables as lists of row dicts (a missing table is empty), plus the targets."""
    storage: list = field(default_factory=list)
    loads: list = field(default_factory=list)       # load_time
    rate: list = field(default_factory=list)        # load_rate
    queries: list = field(default_factory=list)
    restart: list = field(default_factory=list)
    chunks: list = field(default_factory=list)
    stages: list = field(default_factory=list)
    targets: dict = field(default_factory=dict)     # name -> targets/<name>.json

    @classmethod
    def of(cls, t: dict, targets: dict | None = None) -> Tables:
        return cls(t.get("storage", []), t.get("load_time", []), t.get("load_rate", []),
                   t.get("queries", []), t.get("restart", []), t.get("chunks", []),
                   t.get("stages", []), targets or {})


# ---------------------------------------------------------------- formatting
def _num(v, digits=3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if v == 0:
            return "0"
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.{digits}g}" if abs(v) < 1 else f"{v:,.{max(digits - len(str(int(abs(v)))), 0)}f}"
    return str(v)


def _load_name(r: dict) -> str:
    return f"{r['target']}/{r['variant']}/{r['strategy']}"


def _order(values) -> list:
    return list(dict.fromkeys(values))


def _restart_totals(restart: list) -> dict:
    """{(target, kind): mean over repetitions of the summed phase seconds}."""
    acc = {}
    for r in restart:
        acc.setdefault((r["target"], r["kind"]), {}).setdefault(r["repetition"], 0.0)
        acc[(r["target"], r["kind"])][r["repetition"]] += r.get("seconds") or 0.0
    return {k: sum(v.values()) / len(v) for k, v in acc.items()}


# ---------------------------------------------------------------- checks
def _failed_loads(loads: list) -> list:
    failed = []
    for r in loads:
        if r.get("checksum_ok") is False:
            failed.append(f"Load {_load_name(r)}: the checksum of the loaded table does not match "
                          f"the input files ({_num(r['rows'])} rows loaded) - rows were lost or changed.")
        if r.get("optimize_stopped") is True:
            failed.append(f"Load {_load_name(r)}: OPTIMIZE TABLE was stopped at its time limit; "
                          f"optimize_seconds ({_num(r.get('optimize_seconds'))} s) is a lower bound.")
    for variant in _order(r["variant"] for r in loads):
        counts = {_load_name(r): r["rows"] for r in loads if r["variant"] == variant}
        if len(set(counts.values())) > 1:
            failed.append(f"Loads of variant {variant} did not all load the same number of rows: "
                          + ", ".join(f"{k} {_num(v)}" for k, v in counts.items()) + ".")
    return failed


def _failed_restarts_and_queries(t: Tables) -> list:
    failed = []
    for r in t.restart:
        if (r.get("rows_lost") or 0) > 0:
            failed.append(f"Restart {r['kind']} on {r['target']} (repetition {r['repetition']}, "
                          f"phase {r['phase']}): {_num(r['rows_lost'])} rows lost.")
    for q in _order(r["query"] for r in t.queries if r.get("agrees") is False):
        got = sorted({f"{r['target']}/{r['engine']}: {r.get('result_rows')} rows, digest "
                      f"{str(r.get('digest'))[:12]}" for r in t.queries if r["query"] == q})
        failed.append(f"Query {q} does not return the same result everywhere ({'; '.join(got)}).")
    return failed


def _notes(t: Tables) -> list:
    notes = []
    for r in t.storage:
        if r.get("direct") is False:
            notes.append(f"fio {r['test']} on {r['target']} ran buffered (the filesystem refused "
                         "O_DIRECT), so it measures the page cache too.")
    for stage, present in (("storage (fio)", t.storage), ("load", t.loads), ("query", t.queries),
                           ("restart", t.restart)):
        if not present:
            notes.append(f"No {stage} results in this run.")
    return notes


def checks(t: Tables) -> list:
    failed = _failed_loads(t.loads) + _failed_restarts_and_queries(t)
    notes = _notes(t)
    out = [("h2", "Checks")]
    if failed:
        out += [("p", f"{len(failed)} check(s) FAILED:"), ("ul", failed)]
    else:
        out.append(("p", "All checks passed (load checksums, row counts, OPTIMIZE within its time "
                         "limit, no rows lost on restart, queries agree across targets)."))
    if notes:
        out.append(("ul", notes))
    return out


# ---------------------------------------------------------------- fastest choices
def _fastest_loads(loads: list) -> list:
    best = []
    for variant in _order(r["variant"] for r in loads):
        rs = [r for r in loads if r["variant"] == variant and r.get("seconds")]
        if rs:
            b = min(rs, key=lambda r: r["seconds"])
            best.append(f"Fastest load of variant {variant}: {b['target']} with strategy {b['strategy']}, "
                        f"{_num(b['seconds'])} s ({_num(b['rows_per_s'])} rows/s).")
    for variant in _order(r["variant"] for r in loads):
        for strategy in _order(r["strategy"] for r in loads if r["variant"] == variant):
            rs = [r for r in loads if r["variant"] == variant and r["strategy"] == strategy and r.get("seconds")]
            if len(rs) > 1:
                b = min(rs, key=lambda r: r["seconds"])
                others = ", ".join(f"{r['target']} {_num(r['seconds'])} s" for r in rs if r is not b)
                best.append(f"Fastest target for {variant}/{strategy}: {b['target']} "
                            f"({_num(b['seconds'])} s; {others}).")
    for target in _order(r["target"] for r in loads):
        for variant in _order(r["variant"] for r in loads):
            rs = [r for r in loads if r["target"] == target and r["variant"] == variant and r.get("seconds")]
            if len(rs) > 1:
                b = min(rs, key=lambda r: r["seconds"])
                best.append(f"Fastest strategy on {target} for {variant}: {b['strategy']} "
                            f"({_num(b['seconds'])} s, speed-up {_num(b.get('speedup_vs_sequential'))}x).")
    return best


def _best_lookups_and_sizes(loads: list) -> list:
    best = []
    for variant in _order(r["variant"] for r in loads):
        rs = [r for r in loads if r["variant"] == variant and r.get("lookup_p99_ms") is not None]
        if rs:
            b = min(rs, key=lambda r: r["lookup_p99_ms"])
            best.append(f"Fastest point lookups (p99) of variant {variant}: {_load_name(b)}, "
                        f"{_num(b['lookup_p99_ms'])} ms.")
        rs = [r for r in loads if r["variant"] == variant and r.get("table_bytes")]
        if len(rs) > 1 and len({r["table_bytes"] for r in rs}) > 1:
            b = min(rs, key=lambda r: r["table_bytes"])
            best.append(f"Smallest table of variant {variant}: {_load_name(b)}, {_num(b['table_bytes'] / 2**20)} MiB.")
    return best


def _fastest_elsewhere(t: Tables) -> list:
    best = []
    for test in _order(r["test"] for r in t.storage):
        rs = [r for r in t.storage if r["test"] == test and r.get("MBps") is not None]
        if len(rs) > 1:
            b = max(rs, key=lambda r: r["MBps"])
            best.append(f"Fastest target for fio {test}: {b['target']} ({_num(b['MBps'])} MB/s, "
                        f"{_num(b['iops'])} IOPS).")
    for q in _order(r["query"] for r in t.queries):
        for cache in _order(r["cache"] for r in t.queries if r["query"] == q):
            rs = [r for r in t.queries if r["query"] == q and r["cache"] == cache and r.get("p50_s") is not None]
            if len(rs) > 1:
                b = min(rs, key=lambda r: r["p50_s"])
                best.append(f"Fastest for query {q} ({cache}): {b['target']}/{b['engine']}, "
                            f"median {_num(b['p50_s'])} s.")
    rtot = _restart_totals(t.restart)
    for kind in _order(k for _, k in rtot):
        rs = {tg: v for (tg, k), v in rtot.items() if k == kind}
        if len(rs) > 1:
            tg = min(rs, key=rs.get)
            best.append(f"Fastest restart ({kind}): {tg}, {_num(rs[tg])} s on average over repetitions.")
    return best


def fastest(t: Tables) -> list:
    best = _fastest_loads(t.loads) + _best_lookups_and_sizes(t.loads) + _fastest_elsewhere(t)
    return [("h2", "Fastest choices"),
            ("ul", best) if best else ("p", "Only one choice per question in this run.")]


# ---------------------------------------------------------------- side-by-side tables
def storage_load(t: Tables) -> list:
    """Storage | load time, one table per strategy."""
    storage, loads = t.storage, t.loads
    tests = _order(r["test"] for r in storage)
    fio = {(r["target"], r["test"]): r for r in storage}
    all_targets = _order([r["target"] for r in storage] + [r["target"] for r in loads])
    out = []
    for strategy in _order(r["strategy"] for r in loads) or [None]:
        variants = _order(r["variant"] for r in loads if r["strategy"] == strategy)
        lt = {(r["target"], r["variant"]): r for r in loads if r["strategy"] == strategy}
        header = ["target", "filesystem"]
        header += [f"{x} MB/s" if x.startswith("seq") else f"{x} IOPS" for x in tests]
        header += [h for v in variants for h in (f"{v} load s", f"{v} rows/s", f"{v} lookup p99 ms")]
        rows = []
        for tg in all_targets:
            row = [tg, str(t.targets.get(tg, {}).get("fstype") or "–")]
            for x in tests:
                r = fio.get((tg, x))
                row.append(_num(None if r is None else (r["MBps"] if x.startswith("seq") else r["iops"])))
            for v in variants:
                r = lt.get((tg, v), {})
                row += [_num(r.get("seconds")), _num(r.get("rows_per_s")), _num(r.get("lookup_p99_ms"))]
            rows.append(row)
        title = "Storage | load time" + (f" (strategy {strategy})" if strategy else "")
        out.append(("h2", title))
        out.append(("table", "fio on each target next to the secondary-index load on it.", header, rows))
    return out


def load_rate(t: Tables) -> list:
    """Load rate per interval, targets side by side."""
    out = []
    for variant, strategy in _order((r["variant"], r["strategy"]) for r in t.rate):
        rs = [r for r in t.rate if r["variant"] == variant and r["strategy"] == strategy]
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
                row += [_num(r.get("end_s")), _num(r.get("rows_per_s")), _num(r.get("target_write_MBps")),
                        _num(None if tb is None else tb / 2**20)]
            rows.append(row)
        out.append(("h2", f"Load rate per interval ({variant}/{strategy})"))
        out.append(("table", "Rows loaded per second and bytes written to the target in each "
                             "interval since the start of the load.", header, rows))
    return out


def queries(t: Tables) -> list:
    if not t.queries:
        return []
    qs = t.queries
    cols = _order((r["target"], r["engine"]) for r in qs)
    by = {(r["query"], r["cache"], r["target"], r["engine"]): r for r in qs}
    header = ["query", "cache"] + [f"{tg}/{e} p50 s" for tg, e in cols] + ["agrees"]
    rows = []
    for q, cache in _order((r["query"], r["cache"]) for r in qs):
        ag = all(r.get("agrees") is not False for r in qs if r["query"] == q)
        rows.append([q, cache] + [_num(by.get((q, cache, tg, e), {}).get("p50_s")) for tg, e in cols]
                    + ["yes" if ag else "NO"])
    return [("h2", "Query latency"),
            ("table", "Median seconds per query, target and engine.", header, rows)]


def restart(t: Tables) -> list:
    if not t.restart:
        return []
    phases = _order(r["phase"] for r in t.restart)
    header = ["target", "kind"] + [f"{p} s" for p in phases] + ["total s", "rows lost"]
    rows = []
    for tg, kind in _order((r["target"], r["kind"]) for r in t.restart):
        rs = [r for r in t.restart if r["target"] == tg and r["kind"] == kind]
        reps = len({r["repetition"] for r in rs}) or 1
        per = [sum(r["seconds"] or 0 for r in rs if r["phase"] == p) / reps for p in phases]
        rows.append([tg, kind] + [_num(v) for v in per] + [_num(sum(per)),
                                                            _num(sum(r.get("rows_lost") or 0 for r in rs))])
    return [("h2", "Restart"), ("table", "Mean seconds per phase over repetitions.", header, rows)]


def chunks(t: Tables) -> list:
    if not t.chunks:
        return []
    rows_ = [(r["object_rows"] or 0) + (r["source_rows"] or 0) for r in t.chunks]
    sizes = [r["tsv_bytes"] for r in t.chunks if r.get("tsv_bytes") is not None]
    header = ["chunks", "rows min", "rows median", "rows max", "TSV MiB median", "TSV MiB max",
              "largest / median"]
    row = [_num(len(t.chunks)), _num(min(rows_)), _num(float(statistics.median(rows_))), _num(max(rows_))]
    if sizes:
        med = statistics.median(sizes)
        row += [_num(med / 2**20), _num(max(sizes) / 2**20), _num(max(sizes) / med if med else None)]
    else:
        row += ["–"] * 3
    return [("h2", "Chunks"),
            ("table", "Object+Source rows and TSV bytes per chunk (size skew).", header, [row])]


def stages(t: Tables) -> list:
    if not t.stages:
        return []
    return [("h2", "Data preparation stages"),
            ("table", "Wall time and throughput of each stage.",
             ["stage", "jobs", "rows", "wall s", "rows/s", "peak RSS MB"],
             [[r["stage"], _num(r["jobs"]), _num(r["rows"]), _num(r["wall_seconds"]),
               _num(r["rows_per_s"]), _num(r["peak_rss_MB"])] for r in t.stages])]


# The sections of summary.md, in order.
SECTIONS = (checks, fastest, storage_load, load_rate, queries, restart, chunks, stages)


def summary_sections(t: dict, targets: dict | None = None) -> list:
    """Every section's blocks for the final tables ``t`` ({table: [row dicts]}); ``targets`` =
    {name: targets/<name>.json}."""
    view = Tables.of(t, targets)
    return [block for section in SECTIONS for block in section(view)]
