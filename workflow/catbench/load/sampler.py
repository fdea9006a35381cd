"""Background sampling of table size, device I/O, server CPU/RSS, its cgroup's own and page-cache
bytes (``server.ram``) and InnoDB counters
(what the 2017 storage study did by hand with ls, iostat and top)."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import psutil
import pyarrow as pa

from ..core.server.status import status_counters
from .job import LoadWatch

log = logging.getLogger(__name__)


def _cpu_s(p: psutil.Process, children: bool = True) -> float:
    t = p.cpu_times()
    return t.user + t.system + ((t.children_user + t.children_system) if children else 0.0)


def cpu_split(server_pid: int | None) -> tuple[float | None, float]:
    """CPU-s so far of the server and of this job (its threads, and its other descendants:
    the scan's workers, reaped by their forkserver). Their difference over a load says
    which side bounds it: a server that spends the cores is the floor no client can move."""
    me = psutil.Process()
    # this process by its CPU clock (ns), not /proc's 10 ms ticks: a small load's client
    # side can spend less than a tick
    t = me.cpu_times()
    server, job = None, time.process_time() + t.children_user + t.children_system
    for child in me.children(recursive=True):
        try:
            if child.pid == server_pid:
                server = _cpu_s(child, children=False)
            elif child.ppid() != server_pid:
                job += _cpu_s(child)
        except psutil.Error:   # gone meanwhile: its time is in its parent's children_* now
            pass
    return server, job


class Sampler:
    """``with Sampler(server, device="vda", table_glob="db/*.ibd"):`` samples every ``interval_s``.

    ``server`` needs ``pid``, ``datadir`` and ``connect()`` (a catbench.server.Server).
    Device counters are cumulative bytes since boot; None when the target has no block device.
    The table's bytes are the sizes of the files ``table_glob`` matches under the datadir
    (``Engine.table_files``: InnoDB's .ibd files, MyRocks' SST files). While loading they
    are sampled as they are; ``settled_table_bytes`` first runs ``flush_sql`` (MyRocks keeps
    recent rows in its memtable, and the WAL, until a flush writes them to SST files).
    """

    def __init__(self, server, device: str | None = None, table_glob: str = "**/*.ibd",
                 interval_s: float = 1.0, watch: LoadWatch | None = None, progress_every_s: float = 5.0,
                 flush_sql: str | None = None):
        self.server = server
        self.device = device
        self.table_glob = table_glob
        self.interval_s = interval_s
        self.rows: list[dict] = []
        self.watch, self.progress_every_s = watch, progress_every_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._conn = None
        self._proc = None
        self.flush_sql = flush_sql
        self.cpu0 = (None, 0.0)
        self.server_cpu_s: float | None = None   # over the load (start to stop)
        self.job_cpu_s: float | None = None

    def table_bytes(self) -> int:
        total = 0
        for f in Path(self.server.datadir).glob(self.table_glob):
            try:
                total += f.stat().st_size
            except OSError:  # dropped between glob and stat
                pass
        return total

    def settled_table_bytes(self, conn) -> int:
        """The table's bytes once all its rows are in its files (after ``flush_sql``)."""
        if self.flush_sql:
            conn.cursor().execute(self.flush_sql)
        return self.table_bytes()

    def sample(self) -> dict:
        """Take one sample now (also usable without the thread)."""
        row = {"time": time.time(), "table_bytes": self.table_bytes(),
               "dev_read_bytes": None, "dev_write_bytes": None, "dev_read_ios": None, "dev_write_ios": None,
               "cpu_percent": None, "rss_bytes": None, "server_user_s": None, "server_sys_s": None,
               "ram_own_bytes": None, "ram_cache_bytes": None}
        split = self.server.cage.split() if getattr(self.server, "cage", None) else None
        if split:   # server.ram: its cgroup's own and page-cache bytes
            row["ram_own_bytes"], row["ram_cache_bytes"] = split
        if self.device:
            io = (psutil.disk_io_counters(perdisk=True) or {}).get(self.device)
            if io:   # bytes and requests, as iostat shows them (the 2017 study watched both)
                row.update(dev_read_bytes=io.read_bytes, dev_write_bytes=io.write_bytes,
                           dev_read_ios=io.read_count, dev_write_ios=io.write_count)
        try:
            if self._proc is None or self._proc.pid != self.server.pid:
                self._proc = psutil.Process(self.server.pid)
                self._proc.cpu_percent(None)  # first call only primes the counter
            row["cpu_percent"] = self._proc.cpu_percent(None)
            row["rss_bytes"] = self._proc.memory_info().rss
            t = self._proc.cpu_times()
            row["server_user_s"], row["server_sys_s"] = t.user, t.system
        except (psutil.Error, TypeError, ValueError):
            self._proc = None
        try:
            if self._conn is None:
                self._conn = self.server.connect(connection_timeout=5)
            row.update(status_counters(self._conn))
        except Exception as exc:  # noqa: BLE001 - a sampler must never kill the measurement
            log.debug("sampler: no InnoDB counters (%s)", exc)
            self._close()
        self.rows.append(row)
        return row

    def _run(self):
        last = time.time()
        while not self._stop.wait(self.interval_s):
            row = self.sample()
            if self.watch is not None and self.watch.by_files and row["time"] - last >= self.progress_every_s:
                last = row["time"]
                log.info("%s", self.watch.progress_line(row["table_bytes"]))

    def start(self):
        self.cpu0 = cpu_split(self.server.pid)
        self.sample()
        self._thread = threading.Thread(target=self._run, name="catbench-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        if self._thread:
            self._stop.set()
            self._thread.join()
            self._thread = None
            self.sample()  # closing sample so intervals have an end point
            (s0, j0), (s1, j1) = self.cpu0, cpu_split(self.server.pid)
            self.server_cpu_s = None if s0 is None or s1 is None else s1 - s0
            self.job_cpu_s = j1 - j0
        self._close()

    def _close(self):
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # noqa: BLE001
                pass
            self._conn = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    def to_table(self) -> pa.Table:
        return pa.Table.from_pylist(self.rows)
