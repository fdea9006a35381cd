"""The findings of the other stages: queries, crash recovery and restarts, a Galera node's
restart, storage (fio), and what the density skew costs."""

from __future__ import annotations

import re

from ..stats import Figure, verdict

from ..wording import fmt, interval_text, sentence, versus
from ..row_costs import answers
from .common import _mb, _order, _secs, lead

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
        for cache in ("cold", "warm", "evicted"):
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
