"""Watching a server come back: a client thread that notes the process, the first
successful connect and the first correct LV1 answer (``Prober``), run beside the
error-log watcher while the server starts (``observed_start``); and the few status
readings the kinds take before a kill (LSNs, open transactions).
"""

from __future__ import annotations

import threading
import time

import mysql.connector

from ..core.infra.settings import ServerError
from ..core.server.process import Server
from . import errorlog


def innodb_status(conn) -> dict:
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


def pace_mark(conn) -> dict:
    """The redo written and pages flushed so far, and when: two marks give a load's pace
    against the page cleaners' (what holds its checkpoint age)."""
    return {**innodb_status(conn), "t": time.time(),
            "pages_flushed": int(global_status(conn, "Innodb_buffer_pool_pages_flushed") or 0)}


def global_status(conn, name: str) -> str | None:
    cur = conn.cursor()
    cur.execute("SHOW GLOBAL STATUS LIKE %s", (name,))
    row = cur.fetchone()
    return None if row is None else (row[1].decode() if isinstance(row[1], (bytes, bytearray)) else row[1])


def open_trx(conn) -> int:
    cur = conn.cursor()
    cur.execute("SELECT COUNT(*) FROM information_schema.innodb_trx")
    return int(cur.fetchone()[0])


def _close(conn):
    try:
        if conn is not None:
            conn.close()
    except Exception:  # noqa: BLE001 - the server may be gone
        pass


class Prober(threading.Thread):
    """While the server starts: note when its process exists, the first successful
    connect and the first correct LV1 answer (point lookup of a known key)."""

    def __init__(self, srv: Server, sql: str, key: tuple, timeout: float, poll_s: float = 0.002):
        super().__init__(name="catbench-restart-probe", daemon=True)
        self.srv, self.sql, self.key, self.timeout, self.poll_s = srv, sql, key, timeout, poll_s
        self.t_spawn = self.t_connect = self.t_answer = None
        self.answer = None
        self.errors: list[str] = []
        self.halt = threading.Event()
        self._conn = None

    def _ask(self) -> bool:
        """One attempt (connecting first if needed); True once the answer is right."""
        k, chunk, sub = self.key
        if self._conn is None:
            self._conn = self.srv._raw_connect(connection_timeout=2)
            cur = self._conn.cursor()
            cur.execute("SELECT 1")
            cur.fetchall()
            if self.t_connect is None:
                self.t_connect = time.time()
        cur = self._conn.cursor()
        cur.execute(self.sql, (k,))
        got = cur.fetchall()
        if got == [(chunk, sub)]:
            self.t_answer = time.time()
            self.answer = got
            return True
        self.errors.append(f"lookup of {k!r} gave {got}, expected {[(chunk, sub)]}")
        return False

    def run(self):
        deadline = time.monotonic() + self.timeout
        while not self.halt.is_set() and time.monotonic() < deadline:
            if self.t_spawn is None and self.srv.pid is not None:
                self.t_spawn = time.time()
            if self.t_spawn is not None and self.srv.socket.exists():
                try:
                    if self._ask():
                        break
                except mysql.connector.Error as exc:
                    if self._conn is not None and self.t_connect is not None:
                        self.errors.append(str(exc)[:200])
                    _close(self._conn)
                    self._conn = None
            self.halt.wait(self.poll_s)
        _close(self._conn)
        self._conn = None
        self.errors = self.errors[-5:]


def observed_start(run, label: str, probe_key: tuple | None = None) -> dict:
    """Start ``run``'s server and time it by both clocks; the LV1 probe runs alongside.

    The error-log watcher keeps running: the caller stops ``obs["watcher"]``."""
    srv = run.srv
    run.drop_conn()
    offset = srv.error_log.stat().st_size if srv.error_log.exists() else 0
    key = probe_key or run.keys[0]
    probe = Prober(srv, run.lookup_sql, key, run.spec.launch.start_timeout_s + 60)
    watcher = errorlog.LogWatcher(srv.error_log, offset)
    watcher.start()
    t_call = time.time()
    probe.start()
    try:
        srv.start()
        t_started = time.time()
        probe.join(run.spec.launch.start_timeout_s)
    except ServerError as exc:
        watcher.stop()
        raise run.fail(f"the server did not come back after {label}", exc) from None
    finally:
        probe.halt.set()
        probe.join(5)
    watcher.wait_for("ready", 2)
    if probe.t_answer is None:
        watcher.stop()
        raise run.fail(f"after {label} the server answers but the LV1 lookup of key {key[0]!r} "
                       f"never returned the right chunkId ({'; '.join(probe.errors) or 'no answer'})")
    return {"t_call": t_call, "t_spawn": probe.t_spawn or t_call, "t_connect": probe.t_connect,
            "t_answer": probe.t_answer, "t_start_returned": t_started, "events": watcher.events,
            "watcher": watcher, "start_s_server_py": srv.timings.get("start_s")}
