"""Point lookups as the measure of "warm": the warm p50 before a restart (after flushing
the load's dirty pages, so the baseline is not taken against the page cleaner), and the
batches after it until the p50 is within ``warm_factor`` of that baseline (and the
buffer-pool load finished when it runs). Every answer is checked against the input.
"""

from __future__ import annotations

import random
import time

from . import errorlog
from .errors import RestartError
from .phases import p50
from .probe import global_status


def lookup_batch(run, conn, rng: random.Random, n: int, limit_s: float) -> list[float]:
    """Latencies of up to ``n`` random lookups (stopping after ``limit_s``)."""
    cur = conn.cursor()
    lat = []
    end = time.monotonic() + limit_s
    for _ in range(n):
        k, c, s = run.keys[rng.randrange(len(run.keys))]
        t = time.perf_counter()
        cur.execute(run.lookup_sql, (k,))
        got = cur.fetchall()
        lat.append(time.perf_counter() - t)
        if got != [(c, s)]:
            raise RestartError(f"target {run.target}: lookup of key {k!r} returned {got}, expected {[(c, s)]}")
        if time.monotonic() > end:
            break
    return lat


def settle(run, timeout: float = 120) -> dict:
    """Flush dirty pages (innodb_max_dirty_pages_pct=0 for a while) so the warm baseline
    is not measured against the page cleaner working off the load."""
    conn = run.conn_()
    cur = conn.cursor()
    cur.execute("SELECT @@GLOBAL.innodb_max_dirty_pages_pct")
    old = cur.fetchone()[0]
    total = int(global_status(conn, "Innodb_buffer_pool_pages_data") or 0)
    dirty0 = dirty = int(global_status(conn, "Innodb_buffer_pool_pages_dirty") or 0)
    t0 = time.time()
    cur.execute("SET GLOBAL innodb_max_dirty_pages_pct = 0")
    try:
        while dirty > max(16, total // 1000) and time.time() - t0 < timeout:
            time.sleep(0.05)
            dirty = int(global_status(conn, "Innodb_buffer_pool_pages_dirty") or 0)
    finally:
        cur.execute(f"SET GLOBAL innodb_max_dirty_pages_pct = {float(old)}")
    return {"seconds": time.time() - t0, "dirty_pages_before": dirty0, "dirty_pages_after": dirty,
            "data_pages": total}


def warm_p50(run, rng: random.Random) -> float:
    """p50 of warm lookups: every key of the pool once (unmeasured, at most 30 s), then
    five measured batches."""
    conn = run.conn_()
    cur = conn.cursor()
    end = time.monotonic() + 30
    for k, _, _ in run.keys:
        cur.execute(run.lookup_sql, (k,))
        cur.fetchall()
        if time.monotonic() > end:
            break
    lat = []
    for _ in range(5):
        lat += lookup_batch(run, conn, rng, run.spec.warm.batch, 5)
    return p50(lat)


def _bp_loaded(conn, watcher_events: list, t_warm) -> tuple[float | None, str | None]:
    """When the buffer-pool load finished (log line, else the status variable), or None."""
    status = global_status(conn, "Innodb_buffer_pool_load_status")
    ev = errorlog.first(list(watcher_events), "buffer_pool_load_done")
    if ev is not None:
        return ev.seen, status
    if status and "load completed" in status.lower():
        return time.time(), status
    if t_warm is not None:
        time.sleep(0.01)
    return None, status


def wait_warm(run, rng: random.Random, warm: float, t_from: float, want_bp_load: bool,
              watcher_events: list) -> dict:
    """Batches of random lookups until a batch p50 <= warm_factor x warm p50 (and the
    buffer-pool load finished when it runs), within warm_timeout_s."""
    conn = run.conn_()
    limit = run.spec.warm.factor * warm
    deadline = time.monotonic() + run.spec.warm.timeout_s
    batches, t_warm, t_bp = [], None, None
    bp_status = None
    while time.monotonic() < deadline and (t_warm is None or (want_bp_load and t_bp is None)):
        if want_bp_load and t_bp is None:
            ev = errorlog.first(list(watcher_events), "buffer_pool_load_done")
            t_bp = ev.seen if ev else None
        if t_warm is None:
            lat = lookup_batch(run, conn, rng, run.spec.warm.batch, 2.0)
            p = p50(lat)
            now = time.time()
            batches.append({"t_rel_s": round(now - t_from, 4), "lookups": len(lat), "p50_s": p})
            if p is not None and p <= limit:
                t_warm = now
        if want_bp_load and t_bp is None:
            t_bp, bp_status = _bp_loaded(conn, watcher_events, t_warm)
    return {"t_warm": t_warm, "t_bp_loaded": t_bp, "warm_limit_s": limit, "batches": batches,
            "buffer_pool_load_status": bp_status,
            "timed_out": t_warm is None or (want_bp_load and t_bp is None)}
