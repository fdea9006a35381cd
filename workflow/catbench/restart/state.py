"""The state one target's restart job carries from kind to kind: its private server (owned
by ``core.server.session.private_server``), the index table in it and the input it must hold.
Every kind asks this object to (re)load the table, check it against the input's checksum
and word a failure with the server's error-log tail.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.index.input import FileInfo, pick_lookup_keys
from ..core.index.table import (
    DATABASE,
    IndexDestination,
    Variant,
    create_table,
    load_file,
    table_checksum,
)
from ..core.server.loaddata import LoadError
from ..core.server.process import Server
from . import errorlog
from .errors import RestartError

if TYPE_CHECKING:  # the spec imports the kinds, which import this
    from .spec import RestartSpec

log = logging.getLogger(__name__)

TABLE = "restart_idx"


class RestartRun:
    """State of one target's restart job: the server, the table, the input."""

    def __init__(self, target: str, srv: Server, infos: list[FileInfo], variant: Variant, spec: RestartSpec):
        self.target, self.srv, self.infos, self.v = target, srv, infos, variant
        self.spec, self.seed, self.fault = spec, spec.seed, spec.fault
        self.base_settings = dict(srv.settings)
        self.lookup_sql = variant.lookup_sql(TABLE)
        self.total_rows = sum(i.rows for i in infos)
        self.total_sum = sum(i.checksum for i in infos)
        self.loaded = False
        self.fresh_load = False  # loaded and not restarted since
        self.keys: list[tuple] = []
        self.conn = None
        self.clean_first_answer_s: dict[str, float] = {}
        self.kind: str | None = None  # the kind running now (None: setting up)

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
            s["innodb_buffer_pool_dump_pct"] = str(self.spec.buffer_pool_dump_pct)
        if self.srv.running:
            cur = self.conn_().cursor()
            cur.execute(f"SET GLOBAL innodb_buffer_pool_dump_at_shutdown = {'ON' if mode == 'on' else 'OFF'}")
            if mode == "on":
                cur.execute(f"SET GLOBAL innodb_buffer_pool_dump_pct = {int(self.spec.buffer_pool_dump_pct)}")

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
        """Initialise and start the (new, empty) server with the buffer-pool dump off."""
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

    # ---- table -------------------------------------------------------------------
    def table_file_bytes(self) -> int | None:
        """The table's tablespace file on the target: the data a node holds at rest, which the
        pool's data pages tell only while the table fits the pool."""
        f = self.srv.datadir / DATABASE / f"{TABLE}.ibd"
        return f.stat().st_size if f.is_file() else None

    def checksum(self) -> tuple[int, int]:
        return table_checksum(self.conn_(), self.v, TABLE)

    def load_files(self, infos: list[FileInfo], earlier: list[Path]) -> list[float]:
        conn = self.conn_()
        times = []
        for info in infos:
            t = time.perf_counter()
            load_file(conn, IndexDestination(TABLE, self.v, tuple(earlier + [x.path for x in infos])), info.path, info.rows)
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
        self.keys = pick_lookup_keys(self.infos, self.spec.lookup_count, self.v, seed=self.seed)
        if not self.keys:
            raise LoadError("no lookup keys: the input is empty")
