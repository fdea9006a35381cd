"""The headline findings: the study's questions answered in one sentence each, with the
figure and its interval, from the final tables. Every "faster / better than" here is the
verdict of ``stats.verdict`` (the product's one comparison rule): a difference its test cannot
tell from noise is "within noise", a single run is "not a finding"; the findings end by saying
how many comparisons they tested (and so how many false findings to expect at ``report.alpha``)
and mark the findings that hold under Holm's correction for them all. "X is fastest" only when
the rule says X beats the runner-up; otherwise "X has the lowest median", then the runner-up.

``findings(t, report)`` returns summary blocks (see ``summary``): an ``h3`` per question
followed by a ``ul`` of sentences.
"""

from __future__ import annotations

import re

from .spec import ReportSpec
from .stats import Figure, fmt, holm, holm_cutoff, interval_text, p_text, sentence, tally, verdict, versus
from .row_costs import answers, row_costs

# the 2017 storage study's protocol, every other strategy's yardstick
ONE_FILE_AT_A_TIME = "one-file-at-a-time"
# predicted ÷ measured within this band: the scale model held on this machine (predict/)
PREDICTION_BAND = (0.67, 1.5)


def _order(values) -> list:
    return list(dict.fromkeys(values))


def _mb(b) -> str:
    return "–" if b is None else fmt(b / 1e6, "MB")


def _secs(r: dict) -> Figure:
    return Figure.from_row(r, "seconds")


def _engine(r: dict) -> str:
    return r.get("engine") or "innodb"


def _label(r: dict) -> str:
    """A load's name in a sentence: its strategy, and its engine when not InnoDB (the 2017 study's)."""
    return f"`{r['strategy']}`" + ("" if _engine(r) == "innodb" else f" on {_engine(r)}")


def _is_one_file_at_a_time(r: dict) -> bool:
    return r["strategy"] == ONE_FILE_AT_A_TIME and _engine(r) == "innodb"


def _stopped(r: dict) -> bool:
    """A load stopped at load.time_limit_s: its seconds are the limit, not a finish."""
    return bool(r.get("stopped"))   # typed by the table's schema, as in summary.py


def _rate(r: dict) -> Figure:
    """rows/s of each repetition (the same rows over each one's seconds)."""
    return _secs(r).scaled(r["rows"]) if r.get("rows") else Figure.from_row(r, "rows_per_s")


def _stopped_text(r: dict, total: int | None) -> str:
    """'was stopped at its 600 s limit after 68.7 M of 101 M rows (68%), 114,239 rows/s until then'."""
    part = f" of {fmt(total / 1e6, 'M')} rows ({fmt(100 * r['rows'] / total, '%')})" if total else " rows"
    return (f"was stopped at its {fmt(r.get('time_limit_s'), 's')} time limit after {fmt(r['rows'] / 1e6, 'M')}"
            f"{part}, {interval_text(_rate(r), 'rows/s')} until then")


def _input_rows(loads: list, tg: str, var: str) -> int | None:
    """The input's rows: what a finished load of the same target and variant loaded."""
    return max((r["rows"] for r in loads if (r["target"], r["variant"]) == (tg, var) and r.get("rows")
                and not _stopped(r)), default=None)


# ---------------------------------------------------------------- loading
def _speedup_text(best: dict, seq: dict, thr: dict) -> str:
    """The speed-up clause: the ratio with its own interval when the rule calls it real."""
    v = verdict(_secs(best), _secs(seq), **thr)
    name = f"the `{ONE_FILE_AT_A_TIME}` protocol"
    if v.kind != "better":
        return versus(name, v, unit="s")
    ci = f" [{fmt(v.lo)}–{fmt(v.hi)}]" if v.lo is not None and v.hi is not None else ""
    return f"**{fmt(v.ratio, 'x')}**{ci} faster than {name} ({p_text(v)}), {interval_text(_secs(seq), 's')}"


def _server_bound(r: dict) -> str:
    """Whether the server's own CPU bounds the load: then a faster disk or client cannot
    speed it up on this host, only more (or faster) cores for the server."""
    bound, us = r.get("server_bound_rows_per_s"), r.get("server_cpu_us_per_row")
    if not bound or not us or not r.get("rows_per_s"):
        return ""
    share = r["rows_per_s"] / bound
    what = "bound by the server's CPU" if share >= 0.5 else "not bound by the server's CPU"
    return (f" Its server spent {fmt(us, 'µs')} of CPU a row, which alone allows {fmt(bound, 'rows/s')} on "
            f"this host's cores: at {fmt(100 * share, '%')} of that, the load is {what}.")


def _runner_up(rs: list, v) -> str:
    if v is None:
        return ""
    if v.kind == "better":
        return f" Next: {_label(rs[1])}, {interval_text(v.b, 's')}, {fmt(v.ratio, 'x')} slower."
    return f" It is {versus(_label(rs[1]), v, unit='s')}."


def lead(name: str, v, bold: bool = False, only: str = "the only one measured") -> str:
    """'X is fastest' only when the rule says X beats the runner-up (verdict ``v``); 'X has
    the lowest median' otherwise, and 'X (the only one measured)' without a runner-up."""
    if v is None:
        return f"{name} ({only})"
    if v.kind == "better":
        return f"**{name} is fastest**" if bold else f"{name} is fastest"
    return f"{name} has the lowest median"


def loading(loads: list, thr: dict) -> list:
    out = []
    for tg, var in _order((r["target"], r["variant"]) for r in loads):
        mine = [r for r in loads if r["target"] == tg and r["variant"] == var and r.get("seconds")]
        rs = sorted((r for r in mine if not _stopped(r) and not r.get("resumed")), key=lambda r: r["seconds"])
        stopped = [r for r in mine if _stopped(r)]
        total = _input_rows(loads, tg, var)
        if rs:
            best = rs[0]
            seq = next((r for r in rs if _is_one_file_at_a_time(r)), None)
            v = verdict(_secs(rs[0]), _secs(rs[1]), **thr) if len(rs) > 1 else None
            first = lead(_label(best), v, bold=True, only="the only one that finished")
            text = f"{tg} ({var} table): {first}, {interval_text(_secs(best), 's')}"
            if seq is not None and seq is not best:
                text += " — " + _speedup_text(best, seq, thr)
            elif seq is best and len(rs) > 1:
                text += f" — the `{ONE_FILE_AT_A_TIME}` protocol itself"
            out.append(text + "." + _runner_up(rs, v) + _server_bound(best))
        for r in mine:
            if r.get("resumed") and not _stopped(r):
                out.append(f"{tg} ({var} table): {_label(r)} was interrupted and resumed after its committed "
                           f"files; its {fmt(r['seconds'], 's')} leave out the downtime but not the restart, so it "
                           f"is not ranked (load_runs.csv resumed_at_file): run it again to compare it.")
        for r in stopped:   # never ranked by its seconds: those are the limit's
            text = f"{tg} ({var} table): {_label(r)} {_stopped_text(r, total)}"
            if rs:
                v = verdict(_rate(rs[0]), _rate(r), higher_is_better=True, **thr)
                text += (f"; {_label(rs[0])} loaded every row at {interval_text(v.a, 'rows/s')}, "
                         + versus(_label(r), v, unit="rows/s"))
            out.append(text + ".")
    return out


def collapse(rows: list, loads: list) -> list:
    """The one-file-at-a-time protocol (on every engine: the same files in the
    same order, so only the engine differs) against table size / cache."""
    out = []
    best = {}
    for r in sorted((r for r in loads if r.get("seconds")), key=lambda r: r["seconds"]):
        best.setdefault((r["target"], r["variant"], _engine(r)), r["strategy"])
    for r in rows:
        if r["strategy"] != ONE_FILE_AT_A_TIME:
            continue
        key = (r["target"], r["variant"], _engine(r))
        half = Figure.from_row(r, "half_table_over_pool")
        pool = next((x.get("buffer_pool_bytes") for x in loads if (x["target"], x["variant"], _engine(x)) == key
                     and x["strategy"] == ONE_FILE_AT_A_TIME), None)
        cache = {"innodb": "buffer pool", "myisam": "MyISAM key cache"}.get(_engine(r), f"{_engine(r)} block cache")
        head = f"{r['target']} ({r['variant']} table): " + (
            f"the `{ONE_FILE_AT_A_TIME}` protocol" if _engine(r) == "innodb"
            else f"`{ONE_FILE_AT_A_TIME}` on {_engine(r)}")
        final = r.get("final_over_initial")
        if r.get("n_halved") and final is not None and final >= 0.5:
            # a dip on a load too short or small to collapse: its rate came back
            text = (f"{head} did not collapse: its rate dipped below half its initial "
                    f"{fmt(r.get('initial_rows_per_s'), 'rows/s')} for a while ({r['n_halved']} of {r['n']} "
                    f"repetitions, the table at {interval_text(half, 'x')} the {_mb(pool)} {cache}) and came back")
        elif r.get("n_halved"):
            text = (f"{head} fell below half its initial {fmt(r.get('initial_rows_per_s'), 'rows/s')} once the "
                    f"table reached {interval_text(half, 'x', bold=True)} the {_mb(pool)} {cache} "
                    f"({_mb(r.get('half_table_bytes'))}; {r['n_halved']} of {r['n']} repetitions)")
        else:
            text = (f"{head} never fell below half its initial {fmt(r.get('initial_rows_per_s'), 'rows/s')} "
                    f"(the table grew to {fmt(r.get('final_table_over_pool'), 'x')} the {_mb(pool)} {cache}; "
                    f"n={r['n']})")
        text += (f"; it ended at {fmt(r.get('final_rows_per_s'), 'rows/s')}, "
                 f"{fmt(100 * (r.get('final_over_initial') or 0), '%')} of its initial rate")
        other = next((x for x in rows if (x["target"], x["variant"], _engine(x)) == key
                      and x["strategy"] == best.get(key) and x["strategy"] != ONE_FILE_AT_A_TIME), None)
        if other is not None:
            text += f" (`{other['strategy']}` ended at {fmt(other.get('final_rows_per_s'), 'rows/s')})"
        text += _prediction(r)
        out.append(text + ".")
    return out


def _prediction(r: dict) -> str:
    """What index/working_set.json predicted for the input (prepare/working_set.md)."""
    ratio = r.get("predicted_working_set_over_pool")
    if ratio in (None, "") or _engine(r) != "innodb":
        return ""
    return (f"; predicted before the load from its {r.get('id_layout') or '?'} ids in "
            f"{r.get('arrival_order') or '?'} order: an insert working set of {fmt(ratio, 'x')} the pool, "
            f"collapse {'expected' if float(ratio) > 1 else 'not expected'}")


def table_size(loads: list) -> list:
    out = []
    for tg, var in _order((r["target"], r["variant"]) for r in loads):
        rs = sorted((r for r in loads if (r["target"], r["variant"]) == (tg, var) and r.get("table_bytes")),
                    key=lambda r: r["table_bytes"])
        if not rs:
            continue

        def size(r):
            lo, hi = r.get("table_bytes_min"), r.get("table_bytes_max")
            spread = f" [{_mb(lo)}–{_mb(hi)}]" if lo is not None and hi is not None and lo != hi else ""
            per_row = f", {fmt(r['table_bytes'] / r['rows'], 'B')}/row" if r.get("rows") else ""
            cut = f" (stopped after {fmt(r['rows'] / 1e6, 'M')} rows)" if _stopped(r) else ""
            return f"{_label(r)} {_mb(r['table_bytes'])}{spread}{per_row}{cut}"
        n = "/".join(map(str, sorted({r.get("n") or 0 for r in rs})))
        text = f"{tg} ({var} table), bytes on disk after the load (n={n}): " + ", ".join(size(r) for r in rs)
        done = [r for r in rs if not _stopped(r)]   # a stopped load's table holds fewer rows
        if len(done) > 1:
            text += (f" — of the finished loads the largest is "
                     f"{fmt(done[-1]['table_bytes'] / done[0]['table_bytes'], 'x')} the smallest")
        out.append(text + ".")
    return out


def engines(loads: list, rows: list, thr: dict) -> list:
    """Each non-InnoDB load against the same strategy on InnoDB (same target and variant):
    the verdict on seconds, and how much of its initial rate each kept to the end."""
    out = []
    for r in loads:
        if _engine(r) == "innodb" or not r.get("seconds"):
            continue
        key = (r["target"], r["variant"], r["strategy"])
        inno = next((x for x in loads if (x["target"], x["variant"], x["strategy"]) == key
                     and _engine(x) == "innodb" and x.get("seconds")), None)
        if inno is None:
            continue
        head = f"{r['target']} ({r['variant']} table), `{r['strategy']}`: {_engine(r)} "
        if _stopped(r) or _stopped(inno):   # seconds of a stopped load are its limit: compare rates
            v = verdict(_rate(r), _rate(inno), higher_is_better=True, **thr)
            cut = " and ".join(f"{_engine(x)} after {fmt(x['rows'] / 1e6, 'M')} rows"
                               for x in (r, inno) if _stopped(x))
            text = (f"{head}{interval_text(_rate(r), 'rows/s')} is {versus('InnoDB', v, unit='rows/s')} "
                    f"(stopped at the time limit: {cut})")
        else:
            v = verdict(_secs(r), _secs(inno), **thr)
            text = f"{head}{interval_text(_secs(r), 's')} is {versus('InnoDB', v, unit='s')}"
        kept = {e: next((c.get("final_over_initial") for c in rows if (c["target"], c["variant"], c["strategy"])
                         == key and _engine(c) == e), None) for e in (_engine(r), "innodb")}
        if all(x is not None for x in kept.values()):
            text += (f"; at the end it loaded at {fmt(100 * kept[_engine(r)], '%')} of its initial rate, "
                     f"InnoDB at {fmt(100 * kept['innodb'], '%')}")
        if r.get("table_bytes") and inno.get("table_bytes") and r.get("rows") and inno.get("rows"):
            ratio = (r["table_bytes"] / r["rows"]) / (inno["table_bytes"] / inno["rows"])
            text += f"; its table is {fmt(ratio, 'x')} InnoDB's bytes per row"
        if r.get("lookup_p50_ms") is not None and inno.get("lookup_p50_ms") is not None:
            text += (f"; lookup p50 {fmt(r['lookup_p50_ms'], 'ms')} against "
                     f"{fmt(inno['lookup_p50_ms'], 'ms')}")
        out.append(text + ".")
    return out


# ---------------------------------------------------------------- queries
def query_class(q: str) -> str:
    m = re.match(r"[A-Za-z]+", q)
    return m.group(0).upper() if m else q


def _class_runs(runs: list, cls: str, cache: str) -> dict:
    """{target/query engine: [seconds of the whole class in each run]} (runs with every query)."""
    qs = _order(r["query"] for r in runs if query_class(r["query"]) == cls)
    acc: dict = {}
    for r in runs:
        if query_class(r["query"]) == cls and r["cache"] == cache and r.get("seconds") is not None:
            acc.setdefault(f"{r['target']}/{r['query_engine']}", {}).setdefault(r["run"], {})[r["query"]] = r["seconds"]
    return {k: [sum(q.values()) for q in by_run.values() if len(q) == len(qs)] for k, by_run in acc.items()}


def queries(runs: list, thr: dict) -> list:
    out = []
    for cls in _order(query_class(r["query"]) for r in runs):
        for cache in ("cold", "warm"):
            figs = {k: Figure.of(v) for k, v in _class_runs(runs, cls, cache).items() if v}
            if not figs:
                continue
            ranked = sorted(figs, key=lambda k: figs[k].median)
            qs = "+".join(_order(r["query"] for r in runs if query_class(r["query"]) == cls))
            v = verdict(figs[ranked[0]], figs[ranked[1]], **thr) if len(ranked) > 1 else None
            text = f"{cls}, {cache}: {lead(ranked[0], v)}, {interval_text(figs[ranked[0]], 's')} for {qs}"
            if v is not None:
                text += " — " + versus(ranked[1], v, unit="s")
            out.append(text + ".")
        said = answers(runs, cls, query_class)
        if said:
            out.append(said)
    return out



# ---------------------------------------------------------------- restarts and fio
def _phase(rows: list, tg: str, kind: str, phase: str) -> dict | None:
    return next((r for r in rows if (r["target"], r["kind"], r["phase"]) == (tg, kind, phase)), None)


def restarts(rows: list, thr: dict) -> list:
    out, rec = [], {}
    for tg in _order(r["target"] for r in rows):
        r = _phase(rows, tg, "crash-during-load", "crash_recovery")
        if r is None:
            continue
        rec[tg] = Figure.from_row(r, "seconds")
        mbps = Figure.from_row(r, "recovery_MBps", names=("", "", "recovery_MBps_ci_low", "recovery_MBps_ci_high",
                                                          "recovery_MBps_values"))
        text = (f"{tg}: crash recovery {interval_text(rec[tg], 's')}, {_mb(r.get('redo_bytes'))} of redo at "
                f"{interval_text(mbps, 'MB/s')}")
        clean = next((x for x in rows if (x["target"], x["kind"], x["phase"]) ==
                      (tg, "clean", "process_start_to_first_answer") and x.get("buffer_pool_load") in (False, None)),
                     None)
        if clean is not None:
            text += f"; clean restart to first answer {interval_text(_secs(clean), 's')}"
        out.append(text + ".")
    ranked = sorted(rec, key=lambda k: rec[k].median)
    if len(ranked) > 1:
        v = verdict(rec[ranked[0]], rec[ranked[1]], **thr)
        out.append("Crash recovery: " + sentence(ranked[0], ranked[1], v, unit="s"))
    return out


# ---------------------------------------------------------------- cluster restarts
def _cluster(rows: list, tg: str, kind: str, phase: str) -> dict | None:
    return next((r for r in rows if (r["target"], r["kind"], r["phase"]) == (tg, kind, phase)), None)


def acked_lost(rows: list, tg: str, kind: str) -> int:
    """Acknowledged inserts a kind's restarts lost on some node (must be 0)."""
    return max((int(r.get("acked_lost") or 0) for r in rows if (r["target"], r["kind"]) == (tg, kind)), default=0)


def _inserts(load: list, tg: str, kind: str, window: str) -> Figure | None:
    r = next((x for x in load if (x["target"], x["kind"], x["window"]) == (tg, kind, window)
              and "insert" in str(x.get("role") or "").split("+")), None)
    return None if r is None or r.get("inserts_per_s") is None else Figure.from_row(r, "inserts_per_s")


def _back_text(rows: list, tg: str, kind: str) -> tuple[str, Figure | None]:
    """'`node-crash` (IST) **4.10 s** [single run] (6.2 s after it went down)'."""
    xfer = (_cluster(rows, tg, kind, "state_transfer") or {}).get("transfer")
    ans, down = (_cluster(rows, tg, kind, p) for p in ("process_start_to_first_answer", "down_to_first_answer"))
    head = f"`{kind}`" + (f" ({xfer})" if xfer else "")
    if ans is None or ans.get("seconds") is None:
        return f"{head} never answered", None
    fig = _secs(ans)
    text = f"{head} {interval_text(fig, 's', bold=True)}"
    if down is not None and down.get("seconds") is not None:
        text += f" ({interval_text(_secs(down), 's')} after it went down)"
    return text, fig


def cluster(rows: list, load: list, thr: dict) -> list:
    """Per target: how long a restarted node takes from its new process to its first correct
    answer (per kind), the insert rate while it is down, and the acknowledged inserts lost."""
    out = []
    for tg in _order(r["target"] for r in rows):
        kinds = _order(r["kind"] for r in rows if r["target"] == tg)
        backs = {k: _back_text(rows, tg, k) for k in kinds}
        text = (f"{tg}: a restarted node answered correctly after its new process started — "
                + "; ".join(b[0] for b in backs.values()) + ".")
        rates = []
        for k in kinds:
            during, before = _inserts(load, tg, k, "during"), _inserts(load, tg, k, "before")
            if during is not None:
                rates.append(f"`{k}` {interval_text(during, 'rows/s')}"
                             + (f" (before: {fmt(before.median, 'rows/s')})" if before is not None else ""))
        if rates:
            text += " Inserts while the node was down: " + "; ".join(rates) + "."
        lost = {k: acked_lost(rows, tg, k) for k in kinds}
        acked = max((int(r.get("acked_inserts") or 0) for r in rows if r["target"] == tg), default=0)
        if any(lost.values()):
            text += (" **FAILED: acknowledged inserts lost** — " + ", ".join(
                f"`{k}` {n:,}" for k, n in lost.items() if n) + f" (of {acked:,} acknowledged).")
        else:
            text += f" Acknowledged inserts lost: 0 of {acked:,}, checked on every node after every restart."
        out.append(text)
        figs = {k: b[1] for k, b in backs.items() if b[1] is not None and b[1].median is not None}
        ranked = sorted(figs, key=lambda k: figs[k].median)
        if len(ranked) > 1:
            v = verdict(figs[ranked[0]], figs[ranked[1]], **thr)
            out.append(f"{tg}, node back to its first answer: "
                       + sentence(f"`{ranked[0]}`", f"`{ranked[1]}`", v, unit="s"))
    return out


_FIO = (("seq-write", "MBps", "MB/s", "sequential write"), ("seq-read", "MBps", "MB/s", "sequential read"),
        ("rand-read", "iops", "IOPS", "random 4 KiB read"), ("rand-write", "iops", "IOPS", "random 4 KiB write"))


def fio(rows: list, thr: dict) -> list:
    out = []
    by = {(r["target"], r["test"]): r for r in rows}
    for tg in _order(r["target"] for r in rows):
        parts = [f"{words} {interval_text(Figure.from_row(by[(tg, test)], col), unit)}"
                 for test, col, unit, words in _FIO if (tg, test) in by]
        out.append(f"{tg}: " + "; ".join(parts) + ".")
    for test, col, unit, words in _FIO[2:3] + _FIO[0:1]:
        figs = {tg: Figure.from_row(by[(tg, test)], col) for tg in _order(r["target"] for r in rows)
                if (tg, test) in by}
        ranked = sorted(figs, key=lambda k: -(figs[k].median or 0))
        if len(ranked) > 1:
            v = verdict(figs[ranked[0]], figs[ranked[1]], higher_is_better=True, **thr)
            out.append(f"{words[0].upper()}{words[1:]}: " + sentence(ranked[0], ranked[1], v, unit=unit))
    return out


def findings(t, report: ReportSpec) -> list:
    """Blocks of the findings: one h3 per question, then its sentences. Made twice: the first
    pass collects the verdicts for Holm's correction, the second marks the findings it keeps."""
    thr = {"threshold": report.practical_threshold, "alpha": report.alpha}
    with tally() as judged:
        _parts(t, thr)
    with holm(holm_cutoff(judged, thr["alpha"])):
        parts = _parts(t, thr)
    out = []
    for title, sentences in parts:
        if sentences:
            out += [("h3", title), ("ul", sentences)]
    if not out:
        out.append(("p", "No measurements in this run."))
    elif any(v.tested for v in judged):
        out.append(("p", _multiplicity(judged, thr["alpha"])))
    return out


def _multiplicity(judged: list, alpha: float) -> str:
    """How many comparisons the findings tested, and what that means for false findings."""
    tested = [v for v in judged if v.tested]
    n, real = len(tested), sum(v.real for v in tested)
    cut = holm_cutoff(tested, alpha)
    held = sum(v.real and v.p <= cut for v in tested)
    return (f"These findings tested {n} differences with the comparison rule (t-test on log values at "
            f"α = {alpha:g} and the practical threshold) and called {real} of them real. Were nothing "
            f"different, about {fmt(alpha * n)} of {n} would still be called real by chance; {held} of the "
            f"{real} hold under Holm's correction for the {n} tests (marked so).")


def _parts(t, thr: dict) -> tuple:
    return (
        ("Fastest way to load the index, and its speed-up over the one-file-at-a-time protocol",
         loading(t.loads, thr)),
        ("Where the one-file-at-a-time protocol collapses (load rate against table size / buffer pool)",
         collapse(t.collapse, t.loads)),
        ("Other engines against InnoDB's B-tree (MyRocks' LSM tree, MyISAM): the same strategy on each engine",
         engines(t.loads, t.collapse, thr)),
        ("Why: what a row cost on the device and the server's CPU (load_io.csv)",
         row_costs(t, ONE_FILE_AT_A_TIME)),
        ("Table bytes per strategy", table_size(t.loads)),
        ("Best target and query engine per query class (whole class per run: cold = after a restart)",
         queries(t.query_runs, thr)),
        ("Crash recovery and restart", restarts(t.restart, thr)),
        ("A Galera cluster node restarted under load (IST, SST, crash)", cluster(t.cluster, t.cluster_load, thr)),
        ("Storage (fio)", fio(t.storage, thr)),
        ("What the density skew costs (chunk sizes, chunk-table loads, per-chunk queries)",
         skew(t.chunks, t.chunk_load_chunks, t.query_chunks)),
    )


def skew(chunks: list, loads: list, queries: list) -> list:
    """The chunk-size skew, and what it costs the chunk-table loads and each HV/SHV query
    (single measurements per chunk: figures, not comparisons)."""
    out = []
    objects = sorted(r["object_rows"] or 0 for r in chunks if r.get("object_rows"))
    if objects:
        med = objects[(len(objects) - 1) // 2] if len(objects) % 2 else \
            (objects[len(objects) // 2 - 1] + objects[len(objects) // 2]) / 2
        out.append(f"objects per chunk: max ÷ median = {fmt(objects[-1] / med if med else None)} "
                   f"({fmt(objects[-1])} ÷ {fmt(med)} over {len(objects)} chunks), the largest chunk "
                   f"holds {fmt(100 * objects[-1] / sum(objects), '%')} of the rows")
    for target in _order(r["target"] for r in loads):
        rs = [r for r in loads if r["target"] == target and r.get("rows_per_s")]
        big = next((r for r in rs if r.get("largest")), None)
        if not rs or big is None:
            continue
        rates = sorted(r["rows_per_s"] for r in rs)
        out.append(f"chunk-table loads on `{target}`: {fmt(rates[0])}–{fmt(rates[-1])} rows/s per chunk "
                   f"(median {fmt(rates[len(rates) // 2])}); the largest chunk ({fmt(big['rows'])} rows, "
                   f"{fmt(big['rows_per_s'])} rows/s) took {fmt(100 * (big['time_share'] or 0), '%')} "
                   f"of the load time")
    for r in queries:
        if r.get("slowest_share") is None:
            continue
        which = "the largest chunk it reads" if r.get("slowest_is_largest") else \
            f"not the largest chunk it reads ({r.get('largest_chunk')})"
        out.append(f"{r['query']} on `{r['target']}`: the slowest chunk takes "
                   f"{fmt(100 * r['slowest_share'], '%')} of the query's chunk time (median of {r['n']} warm "
                   f"runs, {fmt(100 * r['slowest_share_min'], '%')}–{fmt(100 * r['slowest_share_max'], '%')}; "
                   f"an even share is {fmt(100 * r['even_share'], '%')} of {r['chunks']} chunks); "
                   f"most often chunk {r['slowest_chunk']}, {which}")
    return out
