"""The load a node restart runs under (``cluster.load``): LV1 point lookups of known index
keys on every node (``lookup_threads`` per node, ``lookup_rate`` lookups/s per node, 0 =
as fast as they go) and a stream of index inserts through the insert node
(``insert_batch`` rows per autocommitted INSERT, ``insert_rate`` rows/s, 0 = as fast as
one client goes). The client keeps its own log: every lookup (time, answered, latency),
every acknowledged insert (time, rows) and the rows of failed inserts (in doubt: the
commit may or may not have happened), so nothing acknowledged can go missing unseen.
"""

from __future__ import annotations

import logging
import random
import threading
import time

import mysql.connector

from ..phases import p50
from .node import Node
from .spec import ClusterLoad

log = logging.getLogger(__name__)


def _close(conn):
    if conn is not None:
        try:
            conn.close()
        except Exception:  # noqa: BLE001 - the server may be gone
            pass


class Workload:
    """Lookup threads on every node and one insert thread; ``start``/``stop``."""

    def __init__(self, nodes: list[Node], insert_node: Node, lookup_sql: str, keys: list[tuple],
                 insert_sql, next_rows, load: ClusterLoad, seed: int):
        self.nodes, self.insert_node, self.lookup_sql, self.keys = nodes, insert_node, lookup_sql, keys
        self.insert_sql, self.next_rows, self.load, self.seed = insert_sql, next_rows, load, seed
        self.lookups: dict[str, list[tuple]] = {n.name: [] for n in nodes}  # (t, ok, latency_s)
        self.lookup_errors: dict[str, dict[str, int]] = {n.name: {} for n in nodes}
        self.wrong: list[str] = []      # answers that differ from the input: a correctness failure
        self.acks: list[tuple] = []     # (t_sent, t_ack, rows)
        self.acked: list[tuple] = []    # rows acknowledged by the server, in order
        self.in_doubt: list[tuple] = []  # rows of inserts that failed: committed or not, unknown
        self.insert_errors: list[tuple] = []
        self._halt = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self):
        ld = self.load
        for i, node in enumerate(self.nodes):
            for j in range(ld.lookup_threads):
                rate = ld.lookup_rate / ld.lookup_threads if ld.lookup_rate else 0
                rng = random.Random(self.seed * 7919 + i * 101 + j)
                self._threads.append(threading.Thread(target=self._lookups, args=(node, rng, rate), daemon=True,
                                                      name=f"catbench-lookup-{node.name}-{j}"))
        self._threads.append(threading.Thread(target=self._inserts, daemon=True, name="catbench-insert"))
        for t in self._threads:
            t.start()

    def stop(self):
        self._halt.set()
        for t in self._threads:
            t.join(30)

    def last_acked(self) -> tuple | None:
        return self.acked[-1] if self.acked else None

    @staticmethod
    def _pace(next_t: float, interval: float) -> float:
        if not interval:
            return 0.0
        now = time.monotonic()
        if next_t > now:
            time.sleep(next_t - now)
            return next_t + interval
        return max(next_t + interval, now - 1.0)  # behind by more than a second: no burst to catch up

    def _lookups(self, node: Node, rng: random.Random, rate: float):
        out, errs = self.lookups[node.name], self.lookup_errors[node.name]
        interval = 1.0 / rate if rate else 0.0
        conn, next_t = None, time.monotonic()
        while not self._halt.is_set():
            next_t = self._pace(next_t, interval)
            k, c, s = self.keys[rng.randrange(len(self.keys))]
            t = time.perf_counter()
            try:
                if conn is None:
                    conn = node.srv._raw_connect(connection_timeout=2)
                cur = conn.cursor()
                cur.execute(self.lookup_sql, (k,))
                got = cur.fetchall()
                out.append((time.time(), True, time.perf_counter() - t))
                if got != [(c, s)] and len(self.wrong) < 100:
                    self.wrong.append(f"{node.name}: lookup of {k!r} gave {got}, expected {[(c, s)]}")
            except mysql.connector.Error as exc:
                out.append((time.time(), False, None))
                code = str(getattr(exc, "errno", None) or type(exc).__name__)
                errs[code] = errs.get(code, 0) + 1
                _close(conn)
                conn = None
                self._halt.wait(0.05)  # a node that is down refuses at once: don't spin
        _close(conn)

    def _inserts(self):
        ld = self.load
        batch = ld.insert_batch
        interval = batch / ld.insert_rate if ld.insert_rate else 0.0
        sql = self.insert_sql(batch)
        conn, next_t = None, time.monotonic()
        while not self._halt.is_set():
            next_t = self._pace(next_t, interval)
            rows = self.next_rows(batch)
            t0 = time.time()
            try:
                if conn is None:
                    conn = self.insert_node.srv._raw_connect(connection_timeout=5)
                conn.cursor().execute(sql, [x for r in rows for x in r])
                self.acks.append((t0, time.time(), len(rows)))
                self.acked.extend(rows)
            except mysql.connector.Error as exc:
                self.in_doubt.extend(rows)
                self.insert_errors.append((time.time(), str(exc)[:200]))
                _close(conn)
                conn = None
                self._halt.wait(0.05)
        _close(conn)

    # ---- figures per time window -----------------------------------------------------------
    def lookup_window(self, node: str, t0: float, t1: float) -> dict:
        rec = [r for r in self.lookups[node] if t0 <= r[0] < t1]
        ok = [r[2] for r in rec if r[1]]
        span = max(t1 - t0, 1e-9)
        lat = sorted(ok)
        return {"lookups_ok": len(ok), "lookups_failed": len(rec) - len(ok), "lookups_per_s": len(ok) / span,
                "lookup_p50_ms": 1000 * p50(lat) if lat else None,
                "lookup_p99_ms": 1000 * lat[min(len(lat) - 1, int(0.99 * len(lat)))] if lat else None}

    def insert_window(self, t0: float, t1: float) -> dict:
        rec = [a for a in self.acks if t0 <= a[1] < t1]
        rows = sum(a[2] for a in rec)
        lat = [a[1] - a[0] for a in rec]
        return {"insert_rows": rows, "inserts_per_s": rows / max(t1 - t0, 1e-9),
                "insert_max_latency_s": max(lat) if lat else None,
                "insert_failures": sum(1 for e in self.insert_errors if t0 <= e[0] < t1)}
