"""A cluster job's knobs, read once from the validated config (its ``cluster`` and
``server`` sections and the run's ``seed``, the schema's defaults filled in at the CLI):
the driver, the session, the kinds and the workload read this, never the config."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...core.infra.targets import parse_size, server_bytes
from .options import COPY_FACTOR, in_run_order


@dataclass(frozen=True)
class ClusterLoad:
    """The load a node restart runs under (``cluster.load``): lookups on every node, inserts
    through node 1, and how long it runs before, while down and after the restart."""
    lookup_threads: int      # per node
    lookup_rate: float       # lookups/s per node, 0: as fast as they go
    insert_batch: int        # rows per autocommitted INSERT
    insert_rate: float       # rows/s, 0: as fast as one client goes
    before_s: float          # under load before the node goes down
    down_s: float            # the node stays down (write sets pile up)
    after_s: float           # under load after it is Synced

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class ClusterSpec:
    """A cluster job: how many nodes, which restart kinds how often, the state transfer, the
    nodes' options and ports, the workload during a restart and the seed."""
    nodes: int
    kinds: tuple[str, ...]          # cluster.kinds in run order (options.KINDS)
    repetitions: int
    variant: str                    # the index table's variant (core.index.table)
    sst_method: str
    recover_position: bool          # node-crash: --wsrep-recover before the start (IST, not SST)
    gcache_size: str                # e.g. "128M"
    base_port: int | None           # None: free ports picked at run time
    lookup_count: int               # lookup keys picked from the input
    start_timeout_s: float          # every node start, recovery and wait for Synced
    settings: dict                  # cluster.settings over server.settings
    binary: str | None              # server.binary (None: searched)
    load: ClusterLoad
    seed: int
    keep_data: bool = False         # the nodes' datadirs stay afterwards (--keep-data)

    @classmethod
    def of(cls, cfg: dict, keep_data: bool = False) -> ClusterSpec:
        """From a validated config's ``cluster``, ``server`` and ``seed`` (the schema checks
        the values, e.g. at least 2 nodes)."""
        cl, server = cfg["cluster"], cfg["server"]
        return cls(cl["nodes"], tuple(in_run_order(cl["kinds"])), cl["repetitions"], cl["variant"],
                   cl["sst_method"], cl["recover_position"], cl["gcache_size"], cl["base_port"],
                   cl["lookup_count"], cl["start_timeout_s"], {**server["settings"], **cl["settings"]},
                   server["binary"], ClusterLoad(**cl["load"]), cfg["seed"], keep_data)

    def node_bytes(self, input_bytes: int) -> int:
        """Room one node needs on its target: the server's own files, its gcache (a file of
        ``gcache_size`` allocated at start) and a full copy of the index with SST staging."""
        return server_bytes(self.settings) + parse_size(self.gcache_size) + COPY_FACTOR * input_bytes
