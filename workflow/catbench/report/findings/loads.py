"""The findings on loading the index: the fastest way, where the one-file-at-a-time protocol
collapses (and whether the prediction made before the load held), other engines, table bytes."""

from __future__ import annotations

from ...core.index.table import ENGINES
from ..stats import Figure, verdict

from ..wording import fmt, interval_text, versus
from .common import (ONE_FILE_AT_A_TIME, _input_rows, _label, _mb, _order, _rate, _runner_up,
                     _secs, _speedup_text, _stopped, _stopped_text, _server_bound, _is_one_file_at_a_time,
                     lead)

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
    out, best, told, misses = [], {}, 0, 0
    for r in sorted((r for r in loads if r.get("seconds")), key=lambda r: r["seconds"]):
        best.setdefault((r["target"], r["variant"], r["engine"]), r["strategy"])
    for r in rows:
        if r["strategy"] != ONE_FILE_AT_A_TIME:
            continue
        key = (r["target"], r["variant"], r["engine"])
        half = Figure.from_row(r, "half_table_over_pool")
        pool = next((x.get("buffer_pool_bytes") for x in loads if (x["target"], x["variant"], x["engine"]) == key
                     and x["strategy"] == ONE_FILE_AT_A_TIME), None)
        cache = ENGINES[r['engine']].cache_words if r['engine'] in ENGINES else f"{r['engine']} cache"
        head = f"{r['target']} ({r['variant']} table): " + (
            f"the `{ONE_FILE_AT_A_TIME}` protocol" if r['engine'] == "innodb"
            else f"`{ONE_FILE_AT_A_TIME}` on {r['engine']}")
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
        other = next((x for x in rows if (x["target"], x["variant"], x["engine"]) == key
                      and x["strategy"] == best.get(key) and x["strategy"] != ONE_FILE_AT_A_TIME), None)
        if other is not None:
            text += f" (`{other['strategy']}` ended at {fmt(other.get('final_rows_per_s'), 'rows/s')})"
        said, missed = _prediction(r, bool(r.get("n_halved")) and (final is None or final < 0.5))
        told += said != ""
        misses += missed
        out.append(text + said + ".")
    if misses:
        out.append(f"**{misses} of {told} predictions made before a load missed** whether it collapsed "
                   f"(prepare/working_set.md).")
    return out


def _prediction(r: dict, collapsed: bool) -> tuple[str, bool]:
    """What index/working_set.json predicted for the input (prepare/working_set.md), and whether
    the load contradicted it (a miss, named)."""
    ratio = r.get("predicted_working_set_over_pool")
    if ratio in (None, "") or r["engine"] != "innodb":
        return "", False
    expected = float(ratio) > 1
    miss = expected != collapsed
    said = (f"; predicted before the load from its {r.get('id_layout') or '?'} ids in "
            f"{r.get('arrival_order') or '?'} order: an insert working set of {fmt(ratio, 'x')} the pool, "
            f"collapse {'expected' if expected else 'not expected'}")
    if miss:
        said += f" — **a miss: it {'did not collapse' if expected else 'collapsed'}**"
    return said, miss


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
        if r["engine"] == "innodb" or not r.get("seconds"):
            continue
        key = (r["target"], r["variant"], r["strategy"])
        inno = next((x for x in loads if (x["target"], x["variant"], x["strategy"]) == key
                     and x["engine"] == "innodb" and x.get("seconds")), None)
        if inno is None:
            continue
        head = f"{r['target']} ({r['variant']} table), `{r['strategy']}`: {r['engine']} "
        if _stopped(r) or _stopped(inno):   # seconds of a stopped load are its limit: compare rates
            v = verdict(_rate(r), _rate(inno), higher_is_better=True, **thr)
            cut = " and ".join(f"{x['engine']} after {fmt(x['rows'] / 1e6, 'M')} rows"
                               for x in (r, inno) if _stopped(x))
            text = (f"{head}{interval_text(_rate(r), 'rows/s')} is {versus('InnoDB', v, unit='rows/s')} "
                    f"(stopped at the time limit: {cut})")
        else:
            v = verdict(_secs(r), _secs(inno), **thr)
            text = f"{head}{interval_text(_secs(r), 's')} is {versus('InnoDB', v, unit='s')}"
        kept = {e: next((c.get("final_over_initial") for c in rows if (c["target"], c["variant"], c["strategy"])
                         == key and c["engine"] == e), None) for e in (r["engine"], "innodb")}
        if all(x is not None for x in kept.values()):
            text += (f"; at the end it loaded at {fmt(100 * kept[r['engine']], '%')} of its initial rate, "
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
