"""From what a start left behind (client times and error-log events) to phase rows: the
start phases every restart has, the crash-recovery phases with redo volume and rate, and
the wait for the background rollback. Every row has the same keys (``ROW_KEYS``), the
columns of the report's restart table.
"""

from __future__ import annotations

import statistics
import time

from . import errorlog
from .probe import open_trx

ROW_KEYS = ("target", "kind", "repetition", "phase", "seconds", "rows_expected", "rows_found", "rows_lost",
            "redo_bytes", "recovery_MBps", "buffer_pool_load", "clock")
CLOCK_NOTE = ("process start = first client observation of the server pid (time.time(), ~2 ms); "
              "engine ready = 'InnoDB: log sequence number ...' line seen in the error log "
              "(polled every 2 ms); accepting = first successful connect + SELECT 1 (client); "
              "first answer = first correct LV1 point lookup (client); the log's own "
              "timestamps have whole-second resolution and are given as *_log_timestamp_s")
_REDO_BATCH_EVENTS = ("multi_batch", "redo_batch", "to_recover", "redo_read", "redo_apply_progress", "undo_ready")


def p50(xs) -> float | None:
    return float(statistics.median(xs)) if xs else None


def diff(a, b) -> float | None:
    return None if a is None or b is None else max(0.0, b - a)


def row(run, kind: str, rep: int, phase: str, seconds, clock: str, **kw) -> dict:
    out = {k: None for k in ROW_KEYS}
    out.update(target=run.target, kind=kind, repetition=rep, phase=phase,
               seconds=None if seconds is None else round(float(seconds), 6), clock=clock)
    out.update(kw)
    return out


def start_phases(obs: dict) -> tuple[list[tuple], dict]:
    """(phase, seconds, clock) of a start, and the event detail."""
    ev = obs["events"]
    t0 = obs["t_spawn"]
    ready_ev = errorlog.first(ev, "engine_ready")
    accept_ev = errorlog.first(ev, "ready")
    t_engine = ready_ev.seen if ready_ev else None
    if t_engine is not None and obs.get("t_connect") is not None:
        # the watcher polls the log: on a busy machine it sees the line after the client got in,
        # and a server that took a connection had its engine ready
        t_engine = min(t_engine, obs["t_connect"])
    phases = [
        ("process_start_to_engine_ready", diff(t0, t_engine), "log-observed"),
        ("engine_ready_to_accepting", diff(t_engine, obs["t_connect"]), "client"),
        ("accepting_to_first_answer", diff(obs["t_connect"], obs["t_answer"]), "client"),
        ("process_start_to_first_answer", diff(t0, obs["t_answer"]), "client"),
    ]
    ts = {e.name: e.log_time for e in reversed(ev)}  # first occurrence wins
    detail = {
        "clock_note": CLOCK_NOTE,
        "process_start": t0, "start_called": obs["t_call"], "engine_ready_seen": t_engine,
        "ready_for_connections_seen": accept_ev.seen if accept_ev else None,
        "first_connect": obs["t_connect"], "first_answer": obs["t_answer"],
        "log_timestamp_s": {
            "process_start_to_engine_ready": diff(ts.get("process_start"), ts.get("engine_ready")),
            "engine_ready_to_ready_for_connections": diff(ts.get("engine_ready"), ts.get("ready")),
            "process_start_to_ready_for_connections": diff(ts.get("process_start"), ts.get("ready")),
        },
        "engine_ready_to_ready_for_connections_seen": diff(t_engine, accept_ev.seen if accept_ev else None),
        "events": [e.as_dict(t0) for e in ev],
    }
    return phases, detail


def _redo_bytes(rs, eol, status_before: dict | None) -> tuple[int | None, str | None]:
    if rs and rs.numbers and eol and eol.numbers:
        return eol.numbers[0] - rs.numbers[0], "error log: End of log LSN - crash recovery checkpoint LSN"
    if status_before and status_before.get("lsn") is not None and status_before.get("checkpoint_lsn") is not None:
        return (status_before["lsn"] - status_before["checkpoint_lsn"],
                "SHOW ENGINE INNODB STATUS before the kill: Log sequence number - Last checkpoint at")
    return None, None


def recovery(obs: dict, status_before: dict | None) -> tuple[list[tuple], dict]:
    """Crash-recovery phases, redo volume and rate from the error log of a start."""
    ev = obs["events"]
    t0 = obs["t_spawn"]
    rs, eol = errorlog.first(ev, "recovery_start"), errorlog.last(ev, "end_of_log")
    ready = errorlog.first(ev, "engine_ready")
    batches = [e for e in ev if e.name in _REDO_BATCH_EVENTS]
    rb0, rb1 = errorlog.first(ev, "rollback_start"), errorlog.last(ev, "rollback_done")
    redo, source = _redo_bytes(rs, eol, status_before)
    rec_s = diff(rs.seen if rs else None, ready.seen if ready else None)
    rate = (redo / 1e6 / rec_s) if (redo is not None and rec_s) else None
    phases = [
        ("process_start_to_recovery_start", diff(t0, rs.seen if rs else None), "log-observed"),
        ("redo_scan", diff(rs.seen if rs else None, eol.seen if eol else None), "log-observed"),
        ("redo_apply", diff(eol.seen if eol else None, ready.seen if ready else None), "log-observed"),
        ("crash_recovery", rec_s, "log-observed"),
    ]
    detail = {"recovered": rs is not None, "redo_bytes": redo, "redo_source": source,
              "checkpoint_lsn": rs.numbers[0] if rs and rs.numbers else None,
              "end_lsn": eol.numbers[0] if eol and eol.numbers else None,
              "recovery_seconds": rec_s, "recovery_MBps": rate,
              "redo_batches": [e.as_dict(t0) for e in batches],
              "rollback_seen": [e.as_dict(t0) for e in (rb0, rb1) if e is not None],
              "status_before_kill": status_before}
    return phases, {**detail, "_rollback_events": (rb0, rb1)}


def wait_rollback(run, t_from: float, timeout: float, watcher=None) -> dict:
    """Background rollback of recovered transactions: until innodb_trx is empty or the error
    log says the rollback completed (``watcher``: a recovered transaction may stay listed in
    innodb_trx after the server's "Rollback of non-prepared transactions completed")."""
    conn = run.conn_()
    deadline = time.monotonic() + timeout
    n = open_trx(conn)
    had = n > 0
    logged = (lambda: watcher.first("rollback_done") is not None) if watcher is not None else (lambda: False)
    while n > 0 and not logged() and time.monotonic() < deadline:
        time.sleep(0.005)
        n = open_trx(conn)
    return {"open_trx_after_start": had, "t_done": time.time(), "done": n == 0 or logged(),
            "by": "innodb_trx empty" if n == 0 else "error log" if logged() else None,
            "client_s": time.time() - t_from}
