"""What is measured around a load: OPTIMIZE TABLE under a time limit (the 2017 storage study
killed it after 3 h), the point-lookup benchmark (QPS, p50, p99, every answer checked), and
that study's load-rate table (per interval: files and rows loaded, input read and target write
MB/s, table size) built from the trace and the sampler's rows."""

from __future__ import annotations

import concurrent.futures as cf
import logging
import random
import threading
import time

import mysql.connector
import numpy as np

from ..core.index.table import DATABASE, Variant
from ..core.server.loaddata import LoadError
from ..core.server.process import Server
from ..core.server.session import execute_alone

log = logging.getLogger(__name__)


def optimize_table(server: Server, conn, table: str, limit_s: float) -> dict:
    """OPTIMIZE TABLE, killed via ``KILL QUERY`` from a second connection after ``limit_s``."""
    fired = threading.Event()
    cid = conn.connection_id

    def kill():
        execute_alone(server, f"KILL QUERY {cid}")
        fired.set()

    timer = threading.Timer(limit_s, kill)
    cur = conn.cursor()
    t0 = time.monotonic()
    timer.start()
    error = None
    try:
        cur.execute(f"OPTIMIZE TABLE `{DATABASE}`.`{table}`")
        result = cur.fetchall()
        error = next((r[3] for r in result if str(r[2]).lower() == "error"), None)
    except mysql.connector.Error as exc:
        error = str(exc)
    finally:
        timer.cancel()
        timer.join()
    seconds = time.monotonic() - t0
    if fired.is_set():
        try:  # a KILL that lands just after completion must not hit the next statement
            cur.execute("SELECT 1")
            cur.fetchall()
        except mysql.connector.Error:
            pass
    if error and not fired.is_set():
        raise LoadError(f"OPTIMIZE TABLE {table} failed: {error}")
    stopped = bool(error) and fired.is_set()
    log.info("OPTIMIZE TABLE %s: %s after %.2f s", table, "stopped" if stopped else "done", seconds)
    return {"optimize_seconds": None if stopped else seconds, "optimize_stopped": stopped,
            "optimize_elapsed_s": seconds}


def lookup_benchmark(server: Server, table: str, variant: Variant, keys: list[tuple], threads: int, count: int,
                     seconds: float | None) -> dict:
    """Point lookups by key, ``threads`` connections; stops at ``count`` lookups or ``seconds``."""
    if not keys or count <= 0:
        return {"lookups": 0, "lookup_qps": None, "lookup_p50_s": None, "lookup_p99_s": None,
                "lookup_threads": threads}
    sql = variant.lookup_sql(table)
    lock = threading.Lock()
    issued = [0]
    lat: list[list[float]] = [[] for _ in range(threads)]
    wrong: list[str] = []
    start = threading.Barrier(threads + 1)
    deadline = [0.0]

    def worker(w: int):
        try:
            conn = server.connect()
        except BaseException:
            start.abort()  # the others and the main thread wait at the barrier: release them
            raise
        cur = conn.cursor()
        rng = random.Random(w)
        mine = lat[w]
        try:
            start.wait()
            while True:
                with lock:
                    if issued[0] >= count or (seconds and time.monotonic() > deadline[0]):
                        return
                    issued[0] += 1
                key, c, s = keys[rng.randrange(len(keys))]
                t = time.perf_counter()
                cur.execute(sql, (key,))
                got = cur.fetchall()
                mine.append(time.perf_counter() - t)
                if got != [(c, s)]:
                    wrong.append(f"key {key!r}: expected {(c, s)}, got {got}")
        finally:
            conn.close()

    with cf.ThreadPoolExecutor(threads) as ex:
        futs = [ex.submit(worker, w) for w in range(threads)]
        try:
            start.wait()
        except threading.BrokenBarrierError:
            pass  # a worker could not connect: its error is raised below
        t0 = time.monotonic()
        deadline[0] = t0 + (seconds or 0)
        errors = [f.exception() for f in futs]
        for e in errors:
            if e is not None and not isinstance(e, threading.BrokenBarrierError):
                raise e
        for e in errors:
            if e is not None:
                raise e
        wall = time.monotonic() - t0
    if wrong:
        raise LoadError(f"{len(wrong)} point lookups returned wrong rows, e.g. {wrong[0]}")
    all_lat = np.concatenate([np.asarray(x) for x in lat]) if any(lat) else np.zeros(0)
    return {"lookups": int(all_lat.size), "lookup_threads": threads,
            "lookup_qps": all_lat.size / wall if wall > 0 else None,
            "lookup_p50_s": float(np.percentile(all_lat, 50)) if all_lat.size else None,
            "lookup_p99_s": float(np.percentile(all_lat, 99)) if all_lat.size else None}


def default_interval(total_s: float) -> float:
    """Total time / 20, rounded to whole seconds (at least 1 s)."""
    return max(1.0, float(round(total_s / 20)))


def _at(samples: list[dict], col: str, t: float) -> float | None:
    pts = [(r["time"], r[col]) for r in samples if r.get(col) is not None]
    if not pts:
        return None
    xs, ys = zip(*pts)
    return float(np.interp(t, xs, ys))


def _int(x):
    return None if x is None else int(round(x))


def interval_table(trace: list[dict], samples: list[dict], t0: float, t1: float, interval_s: float) -> list[dict]:
    """Per-interval files/rows loaded, input read MB/s, target write MB/s, table bytes at end."""
    rows = []
    n = max(1, int(np.ceil((t1 - t0) / interval_s - 1e-9)))
    for i in range(n):
        a, b = t0 + i * interval_s, min(t1, t0 + (i + 1) * interval_s)
        done = [r for r in trace if a <= r["end"] < b or (i == n - 1 and r["end"] == b)]
        span = max(b - a, 1e-9)

        def rate(col):
            x, y = _at(samples, col, a), _at(samples, col, b)
            return None if x is None or y is None else (y - x) / 1e6 / span

        rows.append({"interval": i, "start_s": a - t0, "end_s": b - t0, "files": len(done),
                     "rows": sum(r["rows"] for r in done),
                     "rows_per_s": sum(r["rows"] for r in done) / span,
                     "input_read_MBps": sum(r["bytes"] for r in done) / 1e6 / span,
                     "target_write_MBps": rate("dev_write_bytes"),
                     "innodb_write_MBps": rate("Innodb_data_written"),
                     "table_bytes": _int(_at(samples, "table_bytes", b))})
    return rows


def phase_at(phases: list[dict], t: float) -> str | None:
    live = [p["phase"] for p in phases if p["start"] <= t <= p["end"]]
    return "+".join(dict.fromkeys(live)) if live else None
