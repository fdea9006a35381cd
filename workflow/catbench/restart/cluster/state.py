"""What one cluster job carries from kind to kind: the cluster, the index table loaded
through node 1 (``core.index.table``), the lookup keys, the insert keys handed out so far
and every row acknowledged to the client; and the check that every node holds the same
table, the loaded index intact and every acknowledged insert.

Inserted keys never collide with the index: negative objectIds (``bigint``, whose input
keys are positive) or ``CBINS`` + digits (``char28``, whose keys are digits); the load
checks that the input holds none of them.
"""

from __future__ import annotations

import logging
import time
import zlib

from ...core.index.input import FileInfo, pick_lookup_keys
from ...core.index.table import (
    DATABASE,
    Variant,
    create_table,
    load_files,
    table_checksum,
)
from ...core.infra.resources import read_sql
from .node import state_parts
from .options import ClusterError
from .session import Cluster
from .spec import ClusterSpec

log = logging.getLogger(__name__)

TABLE = "cluster_idx"


class ClusterRun:
    def __init__(self, cluster: Cluster, infos: list[FileInfo], variant: Variant, spec: ClusterSpec):
        self.cluster, self.infos, self.v, self.spec, self.seed = cluster, infos, variant, spec, spec.seed
        self.insert_node = cluster.nodes[0]
        self.restart_node = cluster.nodes[-1]
        self.lookup_sql = variant.lookup_sql(TABLE)
        self.total_rows = sum(i.rows for i in infos)
        self.total_sum = sum(i.checksum for i in infos)
        self.keys: list[tuple] = []
        self.next_insert = 0
        self.acked: list[tuple] = []      # every acknowledged insert of the job
        self.in_doubt: list[tuple] = []   # rows of failed inserts (committed or not)
        self.kind: str | None = None
        self.load_info: dict = {}
        self.fresh_parts: dict | None = None   # the restarted node's state before the index was loaded
        names = dict(key=variant.key, database=DATABASE, table=TABLE)
        self.inserted = f"`{variant.key}` LIKE 'CBINS%'" if variant.text_key else f"`{variant.key}` < 0"
        self._part_sql = read_sql("cluster", "part_checksum.sql")
        self._rows_sql = read_sql("cluster", "inserted_rows.sql").format(where=self.inserted, **names)
        self._insert_sql = read_sql("cluster", "insert.sql")
        self._names = names

    # ---- inserts ------------------------------------------------------------------------
    def insert_key(self, i: int):
        return f"CBINS{i:023d}" if self.v.text_key else -(i + 1)

    def next_rows(self, n: int) -> list[tuple]:
        first = self.next_insert
        self.next_insert += n
        return [(self.insert_key(i), i % 8983, i % 69) for i in range(first, first + n)]

    def insert_sql(self, n: int) -> str:
        return self._insert_sql.format(values=", ".join(["(%s, %s, %s)"] * n), **self._names)

    # ---- load ---------------------------------------------------------------------------
    def load(self) -> dict:
        """The index through node 1 (one LOAD DATA per file, one file at a time), then every node
        must hold the input's rows and checksum."""
        self.fresh_parts = state_parts(self.restart_node.srv.datadir)
        conn = self.cluster.conn(self.insert_node)
        try:
            create_table(conn, self.v, TABLE)
            t0 = time.time()
            trace, _ = load_files(conn, TABLE, [i.path for i in self.infos], self.v)
            load_s = time.time() - t0
        finally:
            conn.close()
        t1 = time.time()
        sums = self.checksums()
        sync_s = time.time() - t1
        bad = {n: s for n, s in sums.items() if s != (self.total_rows, self.total_sum)}
        if bad:
            raise ClusterError(f"target {self.cluster.target}: after loading through node1 these nodes do not "
                               f"hold the input ({self.total_rows} rows, checksum {self.total_sum}): {bad}")
        clash = self.part_checksum(self.insert_node, inserted=True)
        if clash[0]:
            raise ClusterError(f"the index input holds {clash[0]} keys of the range the cluster workload inserts "
                               f"({self.inserted}); it cannot tell them apart")
        self.keys = pick_lookup_keys(self.infos, self.spec.lookup_count, self.v, seed=self.seed)
        self.load_info = {"load_s": load_s, "files": len(trace), "rows": self.total_rows,
                          "rows_per_s": self.total_rows / max(load_s, 1e-9), "checksum_all_nodes_s": sync_s}
        log.info("target %s: loaded %d rows through node1 in %.1f s; all %d nodes hold checksum %d",
                 self.cluster.target, self.total_rows, load_s, len(sums), self.total_sum)
        return self.load_info

    # ---- checks -------------------------------------------------------------------------
    def _sync_conn(self, node):
        conn = self.cluster.conn(node)
        conn.cursor().execute("SET SESSION wsrep_sync_wait = 1")  # reads see every commit so far
        return conn

    def checksums(self) -> dict[str, tuple[int, int]]:
        out = {}
        for node in self.cluster.nodes:
            conn = self._sync_conn(node)
            try:
                out[node.name] = table_checksum(conn, self.v, TABLE)
            finally:
                conn.close()
        return out

    def part_checksum(self, node, inserted: bool) -> tuple[int, int]:
        where = self.inserted if inserted else f"NOT ({self.inserted})"
        conn = self._sync_conn(node)
        try:
            cur = conn.cursor()
            cur.execute(self._part_sql.format(where=where, **self._names))
            n, s = cur.fetchone()
            return int(n), int(s)
        finally:
            conn.close()

    def _inserted_rows(self, node) -> dict:
        conn = self._sync_conn(node)
        try:
            cur = conn.cursor()
            cur.execute(self._rows_sql)
            return {self.v.key_value(k) if self.v.text_key else int(k): (int(c), int(s)) for k, c, s in cur}
        finally:
            conn.close()

    def verify(self) -> dict:
        """Every node: the same table checksum, the loaded index intact, every acknowledged
        insert present with its values, and no inserted row the client never sent."""
        sums = self.checksums()
        acked = {self.v.key_value(k) if self.v.text_key else k: (c, s) for k, c, s in self.acked}
        doubt = {self.v.key_value(k) if self.v.text_key else k: (c, s) for k, c, s in self.in_doubt}
        nodes = {}
        for node in self.cluster.nodes:
            base = self.part_checksum(node, inserted=False)
            rows = self._inserted_rows(node)
            lost = [k for k, v in acked.items() if rows.get(k) != v]
            phantom = [k for k in rows if k not in acked and k not in doubt]
            nodes[node.name] = {"rows": sums[node.name][0], "checksum": sums[node.name][1],
                                "index_rows": base[0], "index_checksum": base[1],
                                "index_intact": base == (self.total_rows, self.total_sum),
                                "inserted_rows": len(rows), "acked_lost": len(lost), "lost_keys": lost[:20],
                                "in_doubt_present": sum(1 for k in doubt if k in rows),
                                "phantom_rows": len(phantom), "phantom_keys": phantom[:20]}
        equal = len(set(sums.values())) == 1
        lost = max(n["acked_lost"] for n in nodes.values())
        failed = None
        if not equal:
            failed = f"the nodes disagree on the table: {sums}"
        elif lost:
            failed = f"{lost} acknowledged inserts missing or changed on a node"
        elif not all(n["index_intact"] for n in nodes.values()):
            failed = "the loaded index changed on a node"
        elif any(n["phantom_rows"] for n in nodes.values()):
            failed = "rows the client never inserted appeared"
        # crc of "key\tchunkId\tsubChunkId", the checksum's own formula, for the record
        expected = self.total_sum + sum(zlib.crc32(f"{k}\t{c}\t{s}".encode()) for k, c, s in self.acked)
        return {"checksums_equal": equal, "acked_inserts": len(acked), "in_doubt_inserts": len(doubt),
                "acked_lost": lost, "checksum_expected_if_no_doubt": expected, "nodes": nodes, "failed": failed}
