"""Restart stage: how long a storage target takes to bring the secondary index back.

Per target, in the restart job's own private server (datadir on the target):

``clean``
    Load the index (one LOAD DATA per input file, autocommit), measure the warm p50 of
    random point lookups, shut down cleanly, start again and time the phases: shutdown;
    process start -> storage engine ready; engine ready -> accepting connections; -> first
    correct LV1 answer (a point lookup returning the right chunkId); -> lookups warm again
    (p50 of a small batch of random lookups within ``warm_factor`` x the warm p50). Done
    with the InnoDB buffer-pool dump/load at shutdown/startup off and on.
``crash-during-load``
    Load a seeded random number of files (one autocommitted LOAD DATA each), SIGKILL the
    server while the next file is mid-load, restart and time crash recovery from the error
    log (recovery start, redo scan, redo apply, rollback of the incomplete transaction,
    ready) with the redo volume (LSN difference) and the recovery rate. Then verify that
    the table holds exactly the committed files (COUNT(*) and the order-independent
    checksum), resume from the first uncommitted file and check the final checksum equals
    a clean load's.
``crash-under-queries``
    SIGKILL while HV-style queries (COUNT(*), GROUP BY chunkId, ...) run from concurrent
    connections; after the restart every answer must equal the answer before the crash.

Clocks: ``client`` = this process's ``time.time()`` around the server (process spawned,
first successful connect, first correct answer); ``log-observed`` = when a marker line
appeared in the error log (polled every 2 ms, see errorlog.py); ``log-timestamp`` = the
server's own whole-second timestamps, kept in the detail for reference.

Output: ``<out_dir>/<kind>.json`` = {"rows": [...], "detail": [...], ...}, written
atomically; rows_lost > 0 or a wrong answer fails the stage after the file is written.
A server that does not come back fails with the target named and the error-log tail;
the evidence goes to ``<out_dir>/<kind>.error.json``. No server is ever left running.
"""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import statistics
import tempfile
import threading
import time
import zlib
from pathlib import Path

import mysql.connector

from ..core.index_input import FileInfo, pick_lookup_keys, scan_file
from ..core.index_table import (
    DATABASE,
    create_table,
    get_variant,
    load_file,
    table_checksum,
)
from ..core.loaddata import LoadError
from ..core.server import Server
from ..core.server_tools import SOCKET_PATH_MAX, ServerError, variables
from ..core.targets import check_target, describe_target
from . import errorlog

log = logging.getLogger(__name__)

KINDS = ("clean", "crash-during-load", "crash-under-queries")
# the order kinds run in: clean uses the fully loaded, settled table; crash-during-load
# drops it and ends with it fully loaded again (by resuming), so the first crash-under-queries
# hits a freshly loaded index whose redo since the last checkpoint is still to be applied
_ORDER = ("clean", "crash-during-load", "crash-under-queries")
BUFFER_POOL_MODES = ("off", "on")
FAULTS = ("corrupt-redo",)
TABLE = "restart_idx"
ROW_KEYS = ("target", "kind", "repetition", "phase", "seconds", "rows_expected", "rows_found", "rows_lost",
            "redo_bytes", "recovery_MBps", "buffer_pool_load", "clock")


class RestartError(RuntimeError):
    """A restart failed: the server did not come back, or rows were lost / answers changed."""


# ---------------------------------------------------------------------------------------
# small helpers

def _write_json_atomic(path: Path, obj):
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f, indent=2, default=str)
            f.write("\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _p50(xs) -> float | None:
    return float(statistics.median(xs)) if xs else None


def _diff(a, b) -> float | None:
    return None if a is None or b is None else max(0.0, b - a)


def _innodb_status(conn) -> dict:
    """Log sequence number and last checkpoint from SHOW ENGINE INNODB STATUS."""
    cur = conn.cursor()
    cur.execute("SHOW ENGINE INNODB STATUS")
    text = cur.fetchall()[0][2]
    out = {"lsn": None, "checkpoint_lsn": None}
    for line in text.splitlines():
        if line.startswith("Log sequence number"):
            out["lsn"] = int(line.split()[-1])
        elif line.startswith("Last checkpoint at"):
            out["checkpoint_lsn"] = int(line.split()[-1])
    return out


def _status(conn, name: str) -> str | None:
    cur = conn.cursor()
    cur.execute("SHOW GLOBAL STATUS LIKE %s", (name,))
    row = cur.fetchone()
    return None if row is None else (row[1].decode() if isinstance(row[1], (bytes, bytearray)) else row[1])


def _open_trx(conn) -> int:
    cur = conn.cursor()
    cur.execute("SELECT COUNT(*) FROM information_schema.innodb_trx")
    return int(cur.fetchone()[0])


class _Prober(threading.Thread):
    """While the server starts: note when its process exists, the first successful
    connect and the first correct LV1 answer (point lookup of a known key)."""

    def __init__(self, srv: Server, sql: str, key: tuple, timeout: float, poll_s: float = 0.002):
        super().__init__(name="catbench-restart-probe", daemon=True)
        self.srv, self.sql, self.key, self.timeout, self.poll_s = srv, sql, key, timeout, poll_s
        self.t_spawn = self.t_connect = self.t_answer = None
        self.answer = None
        self.errors: list[str] = []
        self.halt = threading.Event()

    def run(self):
        deadline = time.monotonic() + self.timeout
        conn = None
        k, chunk, sub = self.key
        while not self.halt.is_set() and time.monotonic() < deadline:
            if self.t_spawn is None and self.srv.pid is not None:
                self.t_spawn = time.time()
            if self.t_spawn is not None and self.srv.socket.exists():
                try:
                    if conn is None:
                        conn = self.srv._raw_connect(connection_timeout=2)
                        cur = conn.cursor()
                        cur.execute("SELECT 1")
                        cur.fetchall()
                        if self.t_connect is None:
                            self.t_connect = time.time()
                    cur = conn.cursor()
                    cur.execute(self.sql, (k,))
                    got = cur.fetchall()
                    if got == [(chunk, sub)]:
                        self.t_answer = time.time()
                        self.answer = got
                        break
                    self.errors.append(f"lookup of {k!r} gave {got}, expected {[(chunk, sub)]}")
                except mysql.connector.Error as exc:
                    if conn is not None and self.t_connect is not None:
                        self.errors.append(str(exc)[:200])
                    try:
                        if conn is not None:
                            conn.close()
                    except Exception:  # noqa: BLE001
                        pass
                    conn = None
            self.halt.wait(self.poll_s)
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001
                pass
        self.errors = self.errors[-5:]


# ---------------------------------------------------------------------------------------

class RestartRun:
    """State of one target's restart job: the server, the table, the input."""

    def __init__(self, target: str, path, infos: list[FileInfo], variant, settings: dict | None, binary,
                 seed: int, lookup_count: int, warm_timeout_s: float, warm_factor: float, warm_batch: int,
                 buffer_pool_modes, buffer_pool_dump_pct: int, query_threads: int, start_timeout: float,
                 fault: str | None):
        self.target, self.infos, self.v = target, infos, variant
        self.seed, self.warm_timeout_s, self.warm_factor = seed, warm_timeout_s, warm_factor
        self.warm_batch, self.bp_modes, self.bp_pct = warm_batch, tuple(buffer_pool_modes), buffer_pool_dump_pct
        self.query_threads, self.fault, self.lookup_count = query_threads, fault, lookup_count
        self.start_timeout = start_timeout
        self.user_settings = dict(settings or {})
        self.basedir = Path(path).absolute() / f"catbench-restart-{variant.name}"
        sock = self.basedir / "mysqld.sock"
        self.sock_dir = None
        if len(str(sock).encode()) > SOCKET_PATH_MAX:
            self.sock_dir = tempfile.mkdtemp(prefix="cbr-", dir="/tmp")
            sock = Path(self.sock_dir) / "mysqld.sock"
        self.srv = Server(target, self.basedir, settings, binary=binary, socket_path=sock,
                          start_timeout=start_timeout)
        self.base_settings = dict(self.srv.settings)
        self.lookup_sql = variant.lookup_sql(TABLE)
        self.total_rows = sum(i.rows for i in infos)
        self.total_sum = sum(i.checksum for i in infos)
        self.loaded = False
        self.fresh_load = False  # loaded and not restarted since
        self.keys: list[tuple] = []
        self.conn = None
        self.clean_first_answer_s: dict[str, float] = {}

    # ---- server ------------------------------------------------------------------
    def set_buffer_pool(self, mode: str):
        """off: no dump at shutdown, no load at startup, no dump file; on: both, 100 %."""
        s = self.srv.settings
        s.clear()
        s.update(self.base_settings)
        on = "1" if mode == "on" else "0"
        s["innodb_buffer_pool_dump_at_shutdown"] = on
        s["innodb_buffer_pool_load_at_startup"] = on
        if mode == "on":
            s["innodb_buffer_pool_dump_pct"] = str(self.bp_pct)
        if self.srv.running:
            cur = self.conn_().cursor()
            cur.execute(f"SET GLOBAL innodb_buffer_pool_dump_at_shutdown = {'ON' if mode == 'on' else 'OFF'}")
            if mode == "on":
                cur.execute(f"SET GLOBAL innodb_buffer_pool_dump_pct = {int(self.bp_pct)}")

    def conn_(self):
        if self.conn is None:
            self.conn = self.srv.connect()
        return self.conn

    def drop_conn(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:  # noqa: BLE001 - the server may be gone
                pass
        self.conn = None

    def setup(self):
        self.srv.cleanup_stale()
        if self.basedir.exists():
            log.info("target %s: removing the previous restart run's %s", self.target, self.basedir)
            shutil.rmtree(self.basedir)
        self.set_buffer_pool("off")
        self.srv.initialize()
        self.srv.start()
        cur = self.conn_().cursor()
        cur.execute(f"CREATE DATABASE IF NOT EXISTS `{DATABASE}`")

    def fail(self, what: str, exc: Exception | None = None) -> RestartError:
        msg = f"target {self.target}: {what}"
        if exc is not None:
            msg += f": {exc}"
        if "last lines of" not in msg:
            msg += f"\nlast lines of {self.srv.error_log}:\n{errorlog.tail(self.srv.error_log)}"
        return RestartError(msg)

    def observed_start(self, label: str, probe_key: tuple | None = None) -> dict:
        """Start the server and time it by both clocks; the LV1 probe runs alongside.

        The error-log watcher keeps running: the caller stops ``obs["watcher"]``."""
        self.drop_conn()
        offset = self.srv.error_log.stat().st_size if self.srv.error_log.exists() else 0
        key = probe_key or self.keys[0]
        probe = _Prober(self.srv, self.lookup_sql, key, self.start_timeout + 60)
        watcher = errorlog.LogWatcher(self.srv.error_log, offset)
        watcher.start()
        t_call = time.time()
        probe.start()
        try:
            self.srv.start()
            t_started = time.time()
            probe.join(self.start_timeout)
        except ServerError as exc:
            watcher.stop()
            raise self.fail(f"the server did not come back after {label}", exc) from None
        finally:
            probe.halt.set()
            probe.join(5)
        watcher.wait_for("ready", 2)
        if probe.t_answer is None:
            watcher.stop()
            raise self.fail(f"after {label} the server answers but the LV1 lookup of key {key[0]!r} "
                            f"never returned the right chunkId ({'; '.join(probe.errors) or 'no answer'})")
        return {"t_call": t_call, "t_spawn": probe.t_spawn or t_call, "t_connect": probe.t_connect,
                "t_answer": probe.t_answer, "t_start_returned": t_started, "events": watcher.events,
                "watcher": watcher, "start_s_server_py": self.srv.timings.get("start_s")}

    # ---- table -------------------------------------------------------------------
    def checksum(self) -> tuple[int, int]:
        return table_checksum(self.conn_(), self.v, TABLE)

    def load_files(self, infos: list[FileInfo], earlier: list[Path]) -> list[float]:
        conn = self.conn_()
        times = []
        for i, info in enumerate(infos):
            t = time.perf_counter()
            load_file(conn, TABLE, info.path, info.rows, self.v, earlier + [x.path for x in infos])
            times.append(time.perf_counter() - t)
        return times

    def ensure_full(self) -> dict:
        if self.loaded:
            return {}
        create_table(self.conn_(), self.v, TABLE)
        t0 = time.time()
        times = self.load_files(self.infos, [])
        load_s = time.time() - t0
        n, s = self.checksum()
        if (n, s) != (self.total_rows, self.total_sum):
            raise self.fail(f"the initial load holds {n} rows (checksum {s}), the input has "
                            f"{self.total_rows} rows (checksum {self.total_sum})")
        self.loaded = True
        if not self.keys:
            self.pick_keys()
        log.info("target %s: loaded %d rows in %.1f s for the restart tests", self.target, n, load_s)
        return {"initial_load_s": load_s, "initial_load_files": len(times)}

    def pick_keys(self):
        self.keys = pick_lookup_keys(self.infos, self.lookup_count, self.v, seed=self.seed)
        if not self.keys:
            raise LoadError("no lookup keys: the input is empty")

    # ---- lookups -----------------------------------------------------------------
    def lookup_batch(self, conn, rng: random.Random, n: int, limit_s: float) -> list[float]:
        cur = conn.cursor()
        lat = []
        end = time.monotonic() + limit_s
        for _ in range(n):
            k, c, s = self.keys[rng.randrange(len(self.keys))]
            t = time.perf_counter()
            cur.execute(self.lookup_sql, (k,))
            got = cur.fetchall()
            lat.append(time.perf_counter() - t)
            if got != [(c, s)]:
                raise RestartError(f"target {self.target}: lookup of key {k!r} returned {got}, expected {[(c, s)]}")
            if time.monotonic() > end:
                break
        return lat

    def settle(self, timeout: float = 120) -> dict:
        """Flush dirty pages (innodb_max_dirty_pages_pct=0 for a while) so the warm baseline
        is not measured against the page cleaner working off the load."""
        conn = self.conn_()
        cur = conn.cursor()
        cur.execute("SELECT @@GLOBAL.innodb_max_dirty_pages_pct")
        old = cur.fetchone()[0]
        total = int(_status(conn, "Innodb_buffer_pool_pages_data") or 0)
        dirty0 = dirty = int(_status(conn, "Innodb_buffer_pool_pages_dirty") or 0)
        t0 = time.time()
        cur.execute("SET GLOBAL innodb_max_dirty_pages_pct = 0")
        try:
            while dirty > max(16, total // 1000) and time.time() - t0 < timeout:
                time.sleep(0.05)
                dirty = int(_status(conn, "Innodb_buffer_pool_pages_dirty") or 0)
        finally:
            cur.execute(f"SET GLOBAL innodb_max_dirty_pages_pct = {float(old)}")
        return {"seconds": time.time() - t0, "dirty_pages_before": dirty0, "dirty_pages_after": dirty,
                "data_pages": total}

    def warm_p50(self, rng: random.Random) -> float:
        """p50 of warm lookups: every key of the pool once (unmeasured, at most 30 s), then
        five measured batches."""
        conn = self.conn_()
        cur = conn.cursor()
        end = time.monotonic() + 30
        for k, _, _ in self.keys:
            cur.execute(self.lookup_sql, (k,))
            cur.fetchall()
            if time.monotonic() > end:
                break
        lat = []
        for _ in range(5):
            lat += self.lookup_batch(conn, rng, self.warm_batch, 5)
        return _p50(lat)

    def wait_warm(self, rng: random.Random, warm_p50: float, t_from: float, want_bp_load: bool,
                  watcher_events: list) -> dict:
        """Batches of random lookups until a batch p50 <= warm_factor x warm p50 (and the
        buffer-pool load finished when it runs), within warm_timeout_s."""
        conn = self.conn_()
        limit = self.warm_factor * warm_p50
        deadline = time.monotonic() + self.warm_timeout_s
        batches, t_warm, t_bp = [], None, None
        bp_status = None
        while time.monotonic() < deadline and (t_warm is None or (want_bp_load and t_bp is None)):
            if want_bp_load and t_bp is None:
                ev = errorlog.first(list(watcher_events), "buffer_pool_load_done")
                t_bp = ev.seen if ev else None
            if t_warm is None:
                lat = self.lookup_batch(conn, rng, self.warm_batch, 2.0)
                p = _p50(lat)
                now = time.time()
                batches.append({"t_rel_s": round(now - t_from, 4), "lookups": len(lat), "p50_s": p})
                if p is not None and p <= limit:
                    t_warm = now
            if want_bp_load and t_bp is None:
                bp_status = _status(conn, "Innodb_buffer_pool_load_status")
                ev = errorlog.first(list(watcher_events), "buffer_pool_load_done")
                if ev is not None:
                    t_bp = ev.seen
                elif bp_status and "load completed" in bp_status.lower():
                    t_bp = time.time()
                elif t_warm is not None:
                    time.sleep(0.01)
        return {"t_warm": t_warm, "t_bp_loaded": t_bp, "warm_limit_s": limit, "batches": batches,
                "buffer_pool_load_status": bp_status,
                "timed_out": t_warm is None or (want_bp_load and t_bp is None)}


# ---------------------------------------------------------------------------------------
# phase rows

def _row(run: RestartRun, kind: str, rep: int, phase: str, seconds, clock: str, **kw) -> dict:
    row = {k: None for k in ROW_KEYS}
    row.update(target=run.target, kind=kind, repetition=rep, phase=phase,
               seconds=None if seconds is None else round(float(seconds), 6), clock=clock)
    row.update(kw)
    return row


def _start_phases(obs: dict) -> tuple[list[tuple], dict]:
    """(phase, seconds, clock) of a start, and the event detail."""
    ev = obs["events"]
    t0 = obs["t_spawn"]
    ready_ev = errorlog.first(ev, "engine_ready")
    accept_ev = errorlog.first(ev, "ready")
    t_engine = ready_ev.seen if ready_ev else None
    phases = [
        ("process_start_to_engine_ready", _diff(t0, t_engine), "log-observed"),
        ("engine_ready_to_accepting", _diff(t_engine, obs["t_connect"]), "client"),
        ("accepting_to_first_answer", _diff(obs["t_connect"], obs["t_answer"]), "client"),
        ("process_start_to_first_answer", _diff(t0, obs["t_answer"]), "client"),
    ]
    ts = {e.name: e.log_time for e in reversed(ev)}  # first occurrence wins
    detail = {
        "clock_note": ("process start = first client observation of the server pid (time.time(), ~2 ms); "
                       "engine ready = 'InnoDB: log sequence number ...' line seen in the error log "
                       "(polled every 2 ms); accepting = first successful connect + SELECT 1 (client); "
                       "first answer = first correct LV1 point lookup (client); the log's own "
                       "timestamps have whole-second resolution and are given as *_log_timestamp_s"),
        "process_start": t0, "start_called": obs["t_call"], "engine_ready_seen": t_engine,
        "ready_for_connections_seen": accept_ev.seen if accept_ev else None,
        "first_connect": obs["t_connect"], "first_answer": obs["t_answer"],
        "log_timestamp_s": {
            "process_start_to_engine_ready": _diff(ts.get("process_start"), ts.get("engine_ready")),
            "engine_ready_to_ready_for_connections": _diff(ts.get("engine_ready"), ts.get("ready")),
            "process_start_to_ready_for_connections": _diff(ts.get("process_start"), ts.get("ready")),
        },
        "engine_ready_to_ready_for_connections_seen": _diff(t_engine, accept_ev.seen if accept_ev else None),
        "events": [e.as_dict(t0) for e in ev],
    }
    return phases, detail


def _recovery(obs: dict, status_before: dict | None) -> tuple[list[tuple], dict]:
    """Crash-recovery phases, redo volume and rate from the error log of a start."""
    ev = obs["events"]
    t0 = obs["t_spawn"]
    rs, eol = errorlog.first(ev, "recovery_start"), errorlog.last(ev, "end_of_log")
    ready = errorlog.first(ev, "engine_ready")
    batches = [e for e in ev if e.name in ("multi_batch", "redo_batch", "to_recover", "redo_read",
                                           "redo_apply_progress", "undo_ready")]
    rb0, rb1 = errorlog.first(ev, "rollback_start"), errorlog.last(ev, "rollback_done")
    redo = None
    source = None
    if rs and rs.numbers and eol and eol.numbers:
        redo, source = eol.numbers[0] - rs.numbers[0], "error log: End of log LSN - crash recovery checkpoint LSN"
    elif status_before and status_before.get("lsn") is not None and status_before.get("checkpoint_lsn") is not None:
        redo = status_before["lsn"] - status_before["checkpoint_lsn"]
        source = "SHOW ENGINE INNODB STATUS before the kill: Log sequence number - Last checkpoint at"
    rec_s = _diff(rs.seen if rs else None, ready.seen if ready else None)
    rate = (redo / 1e6 / rec_s) if (redo is not None and rec_s) else None
    phases = [
        ("process_start_to_recovery_start", _diff(t0, rs.seen if rs else None), "log-observed"),
        ("redo_scan", _diff(rs.seen if rs else None, eol.seen if eol else None), "log-observed"),
        ("redo_apply", _diff(eol.seen if eol else None, ready.seen if ready else None), "log-observed"),
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


def _wait_rollback(run: RestartRun, t_from: float, timeout: float) -> dict:
    """Background rollback of recovered transactions: until innodb_trx is empty."""
    conn = run.conn_()
    deadline = time.monotonic() + timeout
    n = _open_trx(conn)
    had = n > 0
    while n > 0 and time.monotonic() < deadline:
        time.sleep(0.005)
        n = _open_trx(conn)
    return {"open_trx_after_start": had, "t_done": time.time(), "done": n == 0,
            "client_s": time.time() - t_from}


# ---------------------------------------------------------------------------------------
# kinds

def run_clean(run: RestartRun, rep: int) -> tuple[list[dict], dict]:
    rows, details = [], {"repetition": rep, "modes": {}}
    for mode in run.bp_modes:
        details.update(run.ensure_full())
        rng = random.Random(run.seed * 7919 + rep * 31 + (mode == "on"))
        run.set_buffer_pool(mode)
        n_before, sum_before = run.checksum()
        settled = run.settle()
        warm = run.warm_p50(rng)
        dump = run.srv.datadir / "ib_buffer_pool"
        run.drop_conn()
        offset = run.srv.error_log.stat().st_size
        stop_s = run.srv.stop()
        if stop_s is None:
            raise run.fail(f"clean shutdown (buffer pool {mode}) did not finish; the server was killed")
        shut_ev = errorlog.last_start(errorlog.parse_lines(run.srv.error_log.read_bytes()[offset:].decode(
            "utf-8", "replace")))
        if mode == "off":
            dump.unlink(missing_ok=True)
        obs = run.observed_start(f"a clean shutdown (buffer pool dump/load {mode})")
        phases, det = _start_phases(obs)
        try:
            w = run.wait_warm(rng, warm, obs["t_answer"], mode == "on", obs["events"])
        finally:
            obs["watcher"].stop()
        if mode == "on" and w["t_bp_loaded"] is None:
            ev = run.srv.error_log.read_text(errors="replace")
            evs = errorlog.last_start(errorlog.parse_lines(ev))
            e = errorlog.first(evs, "buffer_pool_load_done")
            w["buffer_pool_load_log_time"] = e.log_time if e else None
        n_after, sum_after = run.checksum()
        lost = max(0, n_before - n_after)
        common = dict(rows_expected=n_before, rows_found=n_after, rows_lost=lost, buffer_pool_load=mode == "on")
        sts = {e.name: e.log_time for e in shut_ev}
        rows.append(_row(run, "clean", rep, "flush_dirty_pages_before_shutdown", settled["seconds"], "client",
                         **common))
        rows.append(_row(run, "clean", rep, "shutdown", stop_s, "client", **common))
        rows += [_row(run, "clean", rep, p, s, c, **common) for p, s, c in phases]
        if mode == "on":
            rows.append(_row(run, "clean", rep, "process_start_to_buffer_pool_loaded",
                             _diff(obs["t_spawn"], w["t_bp_loaded"]), "log-observed", **common))
        rows.append(_row(run, "clean", rep, "first_answer_to_warm", _diff(obs["t_answer"], w["t_warm"]),
                         "client", **common))
        rows.append(_row(run, "clean", rep, "process_start_to_warm", _diff(obs["t_spawn"], w["t_warm"]),
                         "client", **common))
        if obs["t_answer"] is not None:
            run.clean_first_answer_s.setdefault(mode, obs["t_answer"] - obs["t_spawn"])
        details["modes"][mode] = {
            **det, "warm_p50_before_s": warm, "warm": w, "settle": settled,
            "shutdown": {"client_s": stop_s, "dump_file_bytes": dump.stat().st_size if dump.exists() else None,
                         "log_timestamp_s": _diff(sts.get("shutdown_start"), sts.get("shutdown_done")),
                         "events": [e.as_dict() for e in shut_ev]},
            "checksum_before": sum_before, "checksum_after": sum_after,
            "checksum_equal": (n_before, sum_before) == (n_after, sum_after)}
        if (n_before, sum_before) != (n_after, sum_after):
            details["failed"] = (f"after a clean restart (buffer pool {mode}) the table holds {n_after} rows "
                                 f"(checksum {sum_after}), before it held {n_before} ({sum_before})")
            break
    run.set_buffer_pool("off")
    return rows, details


HV_QUERIES = {
    "count": "SELECT COUNT(*) FROM `{db}`.`{t}`",
    "chunk_counts": "SELECT `chunkId`, COUNT(*) FROM `{db}`.`{t}` GROUP BY `chunkId` ORDER BY `chunkId`",
    "sums": "SELECT COUNT(DISTINCT `chunkId`), SUM(`subChunkId`), MIN(`{key}`), MAX(`{key}`) FROM `{db}`.`{t}`",
}


def _hv_answers(run: RestartRun, conn) -> dict:
    out = {}
    for name, sql in HV_QUERIES.items():
        cur = conn.cursor()
        cur.execute(sql.format(db=DATABASE, t=TABLE, key=run.v.key))
        out[name] = [tuple(int(x) if isinstance(x, int) else str(x) for x in r) for r in cur.fetchall()]
    return out


def _digest(answers: dict) -> dict:
    return {k: {"rows": len(v), "crc32": zlib.crc32(repr(v).encode())} for k, v in answers.items()}


def run_crash_under_queries(run: RestartRun, rep: int) -> tuple[list[dict], dict]:
    fresh = run.fresh_load
    details = {"repetition": rep, **run.ensure_full()}
    fresh = fresh or bool(details.get("initial_load_s"))
    run.fresh_load = False
    rng = random.Random(run.seed * 104729 + rep)
    run.set_buffer_pool("off")
    conn = run.conn_()
    t = time.time()
    before = _hv_answers(run, conn)
    query_s = time.time() - t
    n_before, sum_before = run.checksum()
    stop = threading.Event()
    stats = {"completed": 0, "wrong": [], "errors": 0}
    lock = threading.Lock()

    def worker(w: int):
        try:
            c = run.srv.connect()
        except Exception:  # noqa: BLE001 - the kill may come first
            return
        names = list(HV_QUERIES)
        i = w
        try:
            while not stop.is_set():
                name = names[i % len(names)]
                i += 1
                try:
                    cur = c.cursor()
                    cur.execute(HV_QUERIES[name].format(db=DATABASE, t=TABLE, key=run.v.key))
                    got = [tuple(int(x) if isinstance(x, int) else str(x) for x in r) for r in cur.fetchall()]
                except mysql.connector.Error:
                    with lock:
                        stats["errors"] += 1
                    return
                with lock:
                    stats["completed"] += 1
                    if got != before[name]:
                        stats["wrong"].append(name)
        finally:
            try:
                c.close()
            except Exception:  # noqa: BLE001
                pass

    threads = [threading.Thread(target=worker, args=(w,), daemon=True) for w in range(run.query_threads)]
    for th in threads:
        th.start()
    delay = rng.uniform(0.3, 1.0) + rng.uniform(0.5, 1.5) * query_s
    time.sleep(delay)
    status = _innodb_status(conn)
    with lock:
        completed_before_kill = stats["completed"]
    t_kill = time.time()
    run.srv.kill()
    run.drop_conn()
    stop.set()
    for th in threads:
        th.join(30)
    obs = run.observed_start("SIGKILL under HV queries")
    obs["watcher"].stop()
    phases, det = _start_phases(obs)
    rphases, rdet = _recovery(obs, status)
    rdet.pop("_rollback_events")
    conn = run.conn_()
    after = _hv_answers(run, conn)
    t_all = time.time()
    n_after, sum_after = run.checksum()
    equal = after == before and (n_after, sum_after) == (n_before, sum_before)
    lost = max(0, n_before - n_after)
    common = dict(rows_expected=n_before, rows_found=n_after, rows_lost=lost, buffer_pool_load=False)
    rows = [_row(run, "crash-under-queries", rep, p, s, c, **common) for p, s, c in phases]
    rows += [_row(run, "crash-under-queries", rep, p, s, c, redo_bytes=rdet["redo_bytes"],
                  recovery_MBps=rdet["recovery_MBps"], **common) for p, s, c in rphases]
    rows.append(_row(run, "crash-under-queries", rep, "process_start_to_all_answers_equal",
                     _diff(obs["t_spawn"], t_all) if equal else None, "client", **common))
    total = obs["t_answer"] - obs["t_spawn"]
    clean = run.clean_first_answer_s.get("off")
    details.update({**det, "recovery": rdet, "kill_after_s": delay, "killed_at": t_kill,
                    "checkpoint_age_at_kill_bytes": (status["lsn"] - status["checkpoint_lsn"]) if status.get(
                        "lsn") is not None and status.get("checkpoint_lsn") is not None else None,
                    "table_state": "freshly loaded" if fresh else "settled (restarted before)",
                    "queries_completed_before_kill": completed_before_kill, "query_threads": run.query_threads,
                    "wrong_answers_during_run": stats["wrong"][:10], "answers_before": _digest(before),
                    "answers_after": _digest(after), "answers_equal": equal,
                    "crash_to_clean_first_answer_ratio": (total / clean) if clean else None})
    if not equal:
        details["failed"] = ("after a crash under queries the answers differ from before: " + ", ".join(
            k for k in before if before[k] != after.get(k)) + (" (checksum differs)" if (n_after, sum_after) != (
                n_before, sum_before) else ""))
    return rows, details


def _corrupt_redo(run: RestartRun):
    """Fault drill: overwrite the redo log header + checkpoint blocks with garbage."""
    lf = run.srv.datadir / "ib_logfile0"
    with open(lf, "r+b") as f:
        f.write(random.Random(run.seed).randbytes(12288))
    log.warning("target %s: fault drill: corrupted the first 12 KiB of %s", run.target, lf)


def _diagnose(run: RestartRun, committed: list[FileInfo], inflight: FileInfo | None) -> dict:
    """Which rows of the committed files are missing, and which rows do not belong to them."""
    conn = run.conn_()
    cur = conn.cursor()
    chk = f"{TABLE}_expected"
    create_table(conn, run.v, chk)
    for info in committed:
        load_file(conn, chk, info.path, info.rows, run.v, [info.path])
    k = run.v.key
    cur.execute(f"SELECT COUNT(*) FROM `{DATABASE}`.`{chk}` e LEFT JOIN `{DATABASE}`.`{TABLE}` t "
                f"ON t.`{k}` = e.`{k}` AND t.`chunkId` = e.`chunkId` AND t.`subChunkId` = e.`subChunkId` "
                f"WHERE t.`{k}` IS NULL")
    missing = int(cur.fetchone()[0])
    cur.execute(f"SELECT COUNT(*) FROM `{DATABASE}`.`{TABLE}` t LEFT JOIN `{DATABASE}`.`{chk}` e "
                f"ON t.`{k}` = e.`{k}` WHERE e.`{k}` IS NULL")
    extra = int(cur.fetchone()[0])
    cur.execute(f"DROP TABLE `{DATABASE}`.`{chk}`")
    return {"missing_committed_rows": missing, "rows_not_from_committed_files": extra,
            "inflight_file_rows": inflight.rows if inflight else None}


def _first_row(path: Path, v) -> tuple:
    with open(path, "rb") as f:
        k, c, s = f.readline().rstrip(b"\n").split(b"\t")
    return (v.parse_key(k), int(c), int(s))


def run_crash_during_load(run: RestartRun, rep: int) -> tuple[list[dict], dict]:
    rng = random.Random(run.seed * 1_000_003 + rep)
    n = len(run.infos)
    run.set_buffer_pool("off")
    if not run.keys:
        run.pick_keys()
    conn = run.conn_()
    create_table(conn, run.v, TABLE)
    run.loaded = False
    k = rng.randint(1, n - 1) if n > 1 else 0
    frac = rng.uniform(0.2, 0.8)
    details = {"repetition": rep, "files": n, "planned_committed_files": k, "kill_fraction": frac}
    times = run.load_files(run.infos[:k], [])
    median = _p50(times) or 0.01
    acked = k
    attempts = []
    while True:
        inflight = run.infos[acked]
        status = _innodb_status(conn)
        result: dict = {}

        def load_next(info=inflight):
            try:
                c = run.srv.connect()
            except Exception as exc:  # noqa: BLE001
                result["error"] = str(exc)
                return
            try:
                result["t_start"] = time.time()
                load_file(c, TABLE, info.path, info.rows, run.v, [info.path])
                result["acked"] = time.time()
            except Exception as exc:  # noqa: BLE001 - the kill lands here
                result["error"] = str(exc)[:200]
            finally:
                try:
                    c.close()
                except Exception:  # noqa: BLE001
                    pass

        th = threading.Thread(target=load_next, daemon=True)
        th.start()
        while "t_start" not in result and th.is_alive():
            time.sleep(0.0005)
        time.sleep(max(0.0005, frac * median))
        if not th.is_alive() and "acked" in result and acked + 1 < n:
            # the file finished before the kill point: it is committed; try the next one,
            # killing sooner (a busy machine makes file load times vary)
            attempts.append({"file": acked, "acked_before_kill": True})
            acked += 1
            frac *= 0.5
            continue
        break
    t_kill = time.time()
    run.srv.kill()
    run.drop_conn()
    th.join(30)
    inflight_acked = "acked" in result
    if inflight_acked:  # the OK reached us just before the kill
        acked += 1
        inflight = run.infos[acked] if acked < n else None
    committed = run.infos[:acked]
    details.update({"committed_files": acked, "inflight_file": str(inflight.path) if inflight else None,
                    "inflight_acknowledged": inflight_acked, "retries": attempts,
                    "median_file_load_s": median, "killed_at": t_kill,
                    "inflight_started_before_kill_s": (t_kill - result["t_start"]) if "t_start" in result else None})
    if run.fault == "corrupt-redo":
        _corrupt_redo(run)
    probe_key = _first_row(committed[0].path, run.v) if committed else None
    obs = run.observed_start(f"SIGKILL during load (after {acked} committed files)", probe_key)
    try:
        rb = _wait_rollback(run, obs["t_spawn"], run.warm_timeout_s + 60)
        if errorlog.first(list(obs["events"]), "rollback_start") is not None:
            obs["watcher"].wait_for("rollback_done", 2)
    finally:
        obs["watcher"].stop()
    phases, det = _start_phases(obs)
    rphases, rdet = _recovery(obs, status)
    rb0, rb1 = rdet.pop("_rollback_events")
    rb_done_seen = rb1.seen if rb1 else None
    rows_expected = sum(i.rows for i in committed)
    sum_expected = sum(i.checksum for i in committed)
    n_found, s_found = run.checksum()
    outcome = None
    if (n_found, s_found) == (rows_expected, sum_expected):
        outcome = "rolled_back" if inflight else "no_inflight_file"
    elif inflight and (n_found, s_found) == (rows_expected + inflight.rows, sum_expected + inflight.checksum):
        outcome = "committed_before_kill_unacknowledged"
    diag = None
    if outcome is None:
        diag = _diagnose(run, committed, inflight)
        rows_lost = diag["missing_committed_rows"]
        rows_found = rows_expected - rows_lost
    else:
        rows_lost, rows_found = 0, rows_expected
    first_missing = acked + (1 if outcome == "committed_before_kill_unacknowledged" else 0)
    t = time.time()
    resumed_ok = None
    final = None
    if outcome is not None:
        run.load_files(run.infos[first_missing:], [i.path for i in run.infos[:first_missing]])
        resume_s = time.time() - t
        final = run.checksum()
        resumed_ok = final == (run.total_rows, run.total_sum)
        run.loaded = run.fresh_load = resumed_ok
    else:
        resume_s = None
    common = dict(rows_expected=rows_expected, rows_found=rows_found, rows_lost=rows_lost, buffer_pool_load=False)
    rows = [_row(run, "crash-during-load", rep, p, s, c, **common) for p, s, c in phases]
    rows += [_row(run, "crash-during-load", rep, p, s, c, redo_bytes=rdet["redo_bytes"],
                  recovery_MBps=rdet["recovery_MBps"], **common) for p, s, c in rphases]
    rows.append(_row(run, "crash-during-load", rep, "rollback", _diff(rb0.seen if rb0 else None, rb_done_seen),
                     "log-observed", **common))
    rows.append(_row(run, "crash-during-load", rep, "process_start_to_rollback_done", rb["client_s"], "client",
                     **common))
    rows.append(_row(run, "crash-during-load", rep, "resume_load", resume_s, "client", **common))
    details.update({**det, "recovery": rdet, "rollback": {**rb, "log_done": rb1.as_dict(obs["t_spawn"]) if rb1
                                                                else None},
                    "outcome": outcome, "diagnosis": diag, "checksum_expected": sum_expected,
                    "rows_in_table": n_found, "checksum_in_table": s_found,
                    "resumed_from_file": first_missing if outcome else None,
                    "final_rows": final[0] if final else None, "final_checksum": final[1] if final else None,
                    "clean_checksum": run.total_sum, "final_equals_clean": resumed_ok})
    if outcome is None:
        details["failed"] = (f"after a crash during load the table holds {n_found} rows (checksum {s_found}); "
                             f"the {acked} committed files have {rows_expected} rows (checksum {sum_expected}): "
                             f"{diag['missing_committed_rows']} committed rows lost, "
                             f"{diag['rows_not_from_committed_files']} rows not from committed files "
                             f"(partial in-flight file)")
    elif not resumed_ok:
        details["failed"] = (f"resuming the load from file {first_missing} ended with {final[0]} rows "
                             f"(checksum {final[1]}), a clean load has {run.total_rows} ({run.total_sum})")
    return rows, details


KIND_FUNCS = {"clean": run_clean, "crash-during-load": run_crash_during_load,
              "crash-under-queries": run_crash_under_queries}


def _summary(results: dict) -> dict:
    """Per-target headline figures from the rows of all kinds."""
    def pick(kind, phase, bp=None):
        vals = [r["seconds"] for r in results.get(kind, {}).get("rows", [])
                if r["phase"] == phase and r["seconds"] is not None and (bp is None or r["buffer_pool_load"] == bp)]
        return {"median": _p50(vals), "max": max(vals) if vals else None, "n": len(vals)}

    rates = [r["recovery_MBps"] for kind in results for r in results[kind].get("rows", [])
             if r["phase"] == "crash_recovery" and r["recovery_MBps"] is not None]
    redo = [r["redo_bytes"] for r in results.get("crash-during-load", {}).get("rows", [])
            if r["phase"] == "crash_recovery" and r["redo_bytes"] is not None]
    out = {
        "clean_first_answer_s": {m: pick("clean", "process_start_to_first_answer", m == "on") for m in ("off", "on")},
        "clean_warm_s": {m: pick("clean", "process_start_to_warm", m == "on") for m in ("off", "on")},
        "clean_shutdown_s": pick("clean", "shutdown"),
        "crash_under_queries_first_answer_s": pick("crash-under-queries", "process_start_to_first_answer"),
        "crash_under_queries_all_answers_s": pick("crash-under-queries", "process_start_to_all_answers_equal"),
        "crash_during_load_first_answer_s": pick("crash-during-load", "process_start_to_first_answer"),
        "crash_during_load_recovery_s": pick("crash-during-load", "crash_recovery"),
        "recovery_MBps_median": _p50(rates), "redo_bytes_median": _p50(redo),
        "rows_lost_total": sum(r["rows_lost"] or 0 for k in results for r in results[k].get("rows", [])),
    }
    c = out["clean_first_answer_s"]["off"]["median"]
    q = out["crash_under_queries_first_answer_s"]["max"]
    out["crash_over_clean_ratio"] = (q / c) if (c and q) else None
    d = out["crash_during_load_first_answer_s"]["max"]
    out["crash_during_load_over_clean_ratio"] = (d / c) if (c and d) else None
    out["goal_crash_within_2x_clean"] = None if out["crash_over_clean_ratio"] is None else out[
        "crash_over_clean_ratio"] <= 2.0
    return out


def run_restart(target: str, path, input_files, out_dir, variant: str = "qserv", kinds=KINDS,
                repetitions: int = 1, settings: dict | None = None, binary: str | None = None, seed: int = 0,
                lookup_count: int = 20000, warm_timeout_s: float = 60, warm_factor: float = 1.2,
                warm_batch: int = 200, buffer_pool_modes=BUFFER_POOL_MODES, buffer_pool_dump_pct: int = 100,
                query_threads: int = 4, start_timeout: float = 600, keep_data: bool = False,
                fault: str | None = None) -> dict:
    """Run the restart kinds on one target; writes ``<out_dir>/<kind>.json`` and summary.json.

    Returns {"summary": ..., kind: {"rows": [...], "detail": [...]}}. Raises RestartError
    (target named, error-log tail included) when the server does not come back, rows of
    committed files are lost or answers change; the evidence is written first.
    """
    kinds = tuple(dict.fromkeys(kinds))
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        raise RestartError(f"unknown restart kind(s) {bad}; choose from {', '.join(KINDS)}")
    if repetitions < 1:
        raise RestartError(f"repetitions must be at least 1, not {repetitions}")
    bad = [m for m in buffer_pool_modes if m not in BUFFER_POOL_MODES]
    if bad or not buffer_pool_modes:
        raise RestartError(f"buffer_pool_modes must be a non-empty subset of {BUFFER_POOL_MODES}, not {bad}")
    if fault is not None and fault not in FAULTS:
        raise RestartError(f"unknown fault drill {fault!r}; available: {', '.join(FAULTS)}")
    if not 0 < warm_factor:
        raise RestartError("warm_factor must be positive")
    v = get_variant(variant)
    files = [Path(f).absolute() for f in input_files]
    if not files:
        raise LoadError("no input files given")
    input_bytes = sum(f.stat().st_size for f in files)
    check_target(target, path, need_bytes=3 * input_bytes + (1 << 30))
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for kind in KINDS:  # a re-run replaces results; stale evidence must not look current
        for suffix in (".json", ".error.json"):
            (out_dir / f"{kind}{suffix}").unlink(missing_ok=True)
    (out_dir / "summary.json").unlink(missing_ok=True)
    (out_dir / "server-error.log").unlink(missing_ok=True)
    t0 = time.time()
    infos = [scan_file(f, v) for f in files]
    log.info("target %s: scanned %d files (%d rows) in %.1f s", target, len(infos), sum(i.rows for i in infos),
             time.time() - t0)
    run = RestartRun(target, path, infos, v, settings, binary, seed, lookup_count, warm_timeout_s, warm_factor,
                     warm_batch, buffer_pool_modes, buffer_pool_dump_pct, query_threads, start_timeout, fault)
    meta = {"target": target, "variant": v.name, "files": len(files), "rows": run.total_rows,
            "input_bytes": input_bytes, "seed": seed, "repetitions": repetitions, "storage": describe_target(path),
            "options": {"lookup_count": lookup_count, "warm_timeout_s": warm_timeout_s, "warm_factor": warm_factor,
                        "warm_batch": warm_batch, "buffer_pool_modes": list(buffer_pool_modes),
                        "buffer_pool_dump_pct": buffer_pool_dump_pct, "query_threads": query_threads,
                        "fault": fault}}
    results: dict = {}
    ok = False
    kind = None
    try:
        run.setup()
        meta["server"] = {"binary": run.srv.binary, "version": run.srv.version, "settings": run.base_settings,
                          "variables": variables(run.conn_(), (
                              "version", "innodb_buffer_pool_size", "innodb_log_file_size",
                              "innodb_flush_log_at_trx_commit", "innodb_flush_method", "innodb_doublewrite",
                              "innodb_page_size", "datadir"))}
        for kind in (k for k in _ORDER if k in kinds):
            res = results[kind] = {**meta, "kind": kind, "rows": [], "detail": []}
            for rep in range(repetitions):
                log.info("target %s: restart kind %s, repetition %d", target, kind, rep)
                rows, det = KIND_FUNCS[kind](run, rep)
                res["rows"] += rows
                res["detail"].append(det)
                lost = sum(r["rows_lost"] or 0 for r in rows)
                failed = det.get("failed")
                if lost and not failed:
                    failed = f"{lost} rows lost"
                if failed:
                    res["failed"] = failed
                    _write_json_atomic(out_dir / f"{kind}.json", res)
                    raise RestartError(f"target {target}: restart kind {kind}, repetition {rep}: {failed}; "
                                       f"evidence in {out_dir / (kind + '.json')}")
            _write_json_atomic(out_dir / f"{kind}.json", res)
        summary = {**meta, "kinds": list(results), "summary": _summary(results)}
        _write_json_atomic(out_dir / "summary.json", summary)
        run.drop_conn()
        run.srv.stop()
        ok = True
        log.info("target %s: restart results in %s: %s", target, out_dir, json.dumps(summary["summary"], default=str))
        return {"summary": summary["summary"], **results}
    except Exception as exc:
        if kind is not None and not (out_dir / f"{kind}.json").exists():
            res = results.get(kind, {**meta, "kind": kind, "rows": [], "detail": []})
            _write_json_atomic(out_dir / f"{kind}.error.json", {
                **res, "error": str(exc), "error_log_tail": errorlog.tail(run.srv.error_log, 60)})
        if isinstance(exc, (ServerError, mysql.connector.Error)) and not isinstance(exc, RestartError):
            raise run.fail(f"restart kind {kind} failed", exc) from exc
        raise
    finally:
        run.drop_conn()
        if run.srv.running:
            try:
                run.srv.stop(timeout=120)
            except Exception:  # noqa: BLE001 - never leave a server behind
                run.srv.kill()
        run.srv.cleanup_stale()
        if run.srv.error_log.exists():  # the evidence of every phase, kept with the results
            try:
                shutil.copyfile(run.srv.error_log, out_dir / "server-error.log")
            except OSError as exc:
                log.warning("could not copy %s: %s", run.srv.error_log, exc)
        if run.sock_dir:
            shutil.rmtree(run.sock_dir, ignore_errors=True)
        if not keep_data:
            if ok:
                shutil.rmtree(run.basedir, ignore_errors=True)
            else:  # keep the error log and config for diagnosis, not the data
                for sub in ("data", "tmp"):
                    shutil.rmtree(run.basedir / sub, ignore_errors=True)
