"""Secondary ("director") index loading: the seed's protocol, strategy ``sequential``,
and the driver of every other strategy (see strategies.py).

One connection, one ``LOAD DATA LOCAL INFILE`` per input TSV (``key\\tchunkId\\tsubChunkId``)
in order. Every file is validated before it is loaded, and after it is loaded the rows
affected must equal its line count with no warnings: LOCAL silently skips duplicate keys,
which we never let pass. Then an order-independent checksum of the table is compared
with the input, OPTIMIZE TABLE is tried under a time limit and point lookups are timed.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import logging
import random
import shutil
import tempfile
import threading
import time
from pathlib import Path

import mysql.connector
import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ..core.index_input import pick_lookup_keys
from ..core.index_table import DATABASE, Variant, get_variant, table_checksum
from ..core.loaddata import LoadError
from ..core.server import Server
from ..core.server_tools import SOCKET_PATH_MAX, variables
from ..core.targets import check_target, describe_target, device_for
from .sampler import Sampler
from .strategies import STRATEGIES, LoadOptions, run_strategy, table_ddl, table_name

log = logging.getLogger(__name__)

def optimize_table(server: Server, conn, table: str, limit_s: float) -> dict:
    """OPTIMIZE TABLE, killed via ``KILL QUERY`` from a second connection after ``limit_s``."""
    fired = threading.Event()
    cid = conn.connection_id

    def kill():
        k = server.connect()
        try:
            k.cursor().execute(f"KILL QUERY {cid}")
        finally:
            k.close()
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


def lookup_benchmark(server: Server, table: str, variant: Variant, keys: list[tuple], threads: int = 4,
                     count: int = 10000, seconds: float | None = None) -> dict:
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
        conn = server.connect()
        cur = conn.cursor()
        rng = random.Random(w)
        mine = lat[w]
        start.wait()
        try:
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
        start.wait()
        t0 = time.monotonic()
        deadline[0] = t0 + (seconds or 0)
        for f in futs:
            f.result()
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


def _write_table(rows: list[dict], path: Path):
    pq.write_table(pa.Table.from_pylist(rows), path)


def _phase_at(phases: list[dict], t: float) -> str | None:
    live = [p["phase"] for p in phases if p["start"] <= t <= p["end"]]
    return "+".join(dict.fromkeys(live)) if live else None


def _clean_stale_partials(out_dir: Path):
    """Remove what a killed earlier run of this out_dir left: its partial dirs and old results."""
    for stale in out_dir.parent.glob(f".{out_dir.name}.partial-*"):
        log.warning("removing %s left by an interrupted run", stale)
        shutil.rmtree(stale, ignore_errors=True)
    if out_dir.exists():
        # a re-run replaces the results; if it is killed, nothing finished-looking may remain
        log.info("removing the previous results in %s", out_dir)
        shutil.rmtree(out_dir)


def run_load_index(target: str, path, files: list, out_dir, variant: str = "seed", strategy: str = "sequential",
                   settings: dict | None = None, binary: str | None = None, tcp: bool = False,
                   sample_interval_s: float = 1.0, interval_s: float | None = None,
                   optimize_limit_s: float = 0, lookup_threads: int = 4, lookup_count: int = 10000,
                   lookup_seconds: float | None = None, keep_data: bool = False,
                   start_timeout: float = 120, options: LoadOptions | None = None, **option_kw) -> dict:
    """Start a private server on ``path``, load ``files`` with ``strategy``, verify, measure.

    Strategy knobs come as ``options`` (a LoadOptions) or as keyword arguments of the same
    names (connections, transaction_rows, batch_files, consolidate, sort_memory,
    sort_threads, chunk_rows). Writes trace.parquet, samples.parquet,
    intervals.parquet/.csv, phases.parquet and summary.json into a temporary directory
    renamed to ``out_dir`` only on success; a previous ``out_dir`` is removed at the start.
    """
    v = get_variant(variant)
    if strategy not in STRATEGIES:
        raise LoadError(f"unknown loading strategy {strategy!r}; available: {', '.join(STRATEGIES)}")
    if options is None:
        try:
            options = LoadOptions(**option_kw)
        except TypeError as exc:
            raise LoadError(f"unknown load option: {exc}") from None
    elif option_kw:
        raise LoadError("pass either options= or option keywords, not both")
    options.check()
    files = [Path(f).absolute() for f in files]
    if not files:
        raise LoadError("no input files given")
    input_bytes = sum(f.stat().st_size for f in files)
    # InnoDB needs roughly 3x the TSV size for a CHAR(28) key index, plus redo logs;
    # the sorting strategies also keep a sorted copy and DuckDB's spill files on the target.
    extra = 2 * input_bytes if strategy in ("sorted", "bulk") else 0
    check_target(target, path, need_bytes=3 * input_bytes + extra + (512 << 20))
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    _clean_stale_partials(out_dir)
    work = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.partial-", dir=out_dir.parent))
    table = table_name(v, strategy)
    basedir = Path(path).absolute() / f"catbench-load_index-{v.name}-{strategy}"
    sock = basedir / "mysqld.sock"
    sock_dir = None
    if len(str(sock).encode()) > SOCKET_PATH_MAX:
        sock_dir = tempfile.mkdtemp(prefix="cb-", dir="/tmp")  # socket I/O is not what we measure
        sock = Path(sock_dir) / "mysqld.sock"
    ok = False
    try:
        srv = Server(target, basedir, settings, binary=binary, tcp=tcp, socket_path=sock,
                     start_timeout=start_timeout)
        srv.cleanup_stale()
        if basedir.exists():
            log.info("target %s: removing the previous run's %s", target, basedir)
            shutil.rmtree(basedir)
        summary = {"target": target, "variant": v.name, "strategy": strategy, "table": f"{DATABASE}.{table}",
                   "files": len(files), "input_bytes": input_bytes, "storage": describe_target(path),
                   "options": options.as_dict()}
        with srv:
            conn = srv.connect()
            summary["server"] = {"binary": srv.binary, "version": srv.version, "settings": srv.settings,
                                 "variables": variables(conn)}
            cur = conn.cursor()
            cur.execute(f"CREATE DATABASE IF NOT EXISTS `{DATABASE}`")
            cur.execute(table_ddl(v, strategy, DATABASE, table))
            sampler = Sampler(srv, device=device_for(path), table_glob=f"{DATABASE}/{table}*.ibd",
                              interval_s=sample_interval_s)
            log.info("target %s: loading %d files with strategy %s (%s)", target, len(files), strategy,
                     options.as_dict())
            with sampler:
                t0 = time.time()
                outcome = run_strategy(strategy, srv, conn, table, v, files, options, srv.tmpdir)
                t1 = time.time()
            trace, infos = outcome.trace, outcome.infos
            rows = sum(i.rows for i in infos)
            loaded = trace[-1]["cumulative_rows"] if trace else 0
            v0 = time.time()
            n_table, sum_table = table_checksum(conn, v, table)
            verify_s = time.time() - v0
            sum_input = sum(i.checksum for i in infos)
            if int(n_table) != rows or int(sum_table) != sum_input or loaded != rows:
                raise LoadError(f"table {DATABASE}.{table} on target {target} holds {n_table} rows with checksum "
                                f"{sum_table} ({loaded} rows reported loaded), the input has {rows} rows with "
                                f"checksum {sum_input}")
            table_bytes = sampler.table_bytes()
            opt = {"optimize_seconds": None, "optimize_stopped": False, "optimize_skipped": True}
            if optimize_limit_s and optimize_limit_s > 0:
                opt = {**optimize_table(srv, conn, table, optimize_limit_s), "optimize_skipped": False}
            keys = pick_lookup_keys(infos, min(lookup_count, 100_000), v)
            lookups = lookup_benchmark(srv, table, v, keys, lookup_threads, lookup_count, lookup_seconds)
            timings = {k: outcome.timings.get(k, 0.0) for k in (
                "scan_seconds", "sort_seconds", "load_seconds", "index_build_seconds", "consolidate_seconds",
                "duplicate_check_seconds")}
            summary.update({
                "rows": rows, "seconds": t1 - t0, "rows_per_s": rows / (t1 - t0) if t1 > t0 else None,
                **timings, "verify_seconds": verify_s,
                "connections": outcome.extra.get("connections", 1),
                "transaction_rows": outcome.extra.get("transaction_rows"),
                "strategy_details": {k: val for k, val in outcome.extra.items()
                                     if k not in ("connections", "transaction_rows")},
                "table_bytes": table_bytes, "table_bytes_final": sampler.table_bytes(),
                "checksum_input": sum_input, "checksum_table": int(sum_table), "checksum_ok": True,
                **opt, "optimize_limit_s": optimize_limit_s, **lookups,
            })
            conn.close()
        summary["server"]["timings"] = dict(srv.timings)
        interval = interval_s or default_interval(t1 - t0)
        intervals = interval_table(trace, sampler.rows, t0, t1, interval)
        for r in intervals:
            r["phase"] = _phase_at(outcome.phases, t0 + r["end_s"] - 1e-6)
        summary["interval_s"] = interval
        summary["phases"] = [{**p, "start_s": p["start"] - t0, "end_s": p["end"] - t0} for p in outcome.phases]
        _write_table(trace, work / "trace.parquet")
        sampler.to_parquet(work / "samples.parquet")
        _write_table(intervals, work / "intervals.parquet")
        _write_table(summary["phases"] or [{"phase": None, "start": t0, "end": t1, "seconds": 0.0}],
                     work / "phases.parquet")
        pacsv.write_csv(pa.Table.from_pylist(intervals), work / "intervals.csv")
        (work / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
        if out_dir.exists():
            shutil.rmtree(out_dir)
        work.rename(out_dir)
        log.info("target %s: %s/%s: %d rows in %.1f s (%.0f rows/s); results in %s", target, v.name, strategy,
                 rows, t1 - t0, summary["rows_per_s"] or 0, out_dir)
        ok = True
        return summary
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if sock_dir:
            shutil.rmtree(sock_dir, ignore_errors=True)
        if not keep_data and ok:
            shutil.rmtree(basedir, ignore_errors=True)
        elif not keep_data:
            # a failed load keeps its error log and config for diagnosis, not the data
            for sub in ("data", "tmp"):
                shutil.rmtree(basedir / sub, ignore_errors=True)
