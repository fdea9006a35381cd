"""The cluster stage's knobs, from one source of truth: the config schema's ``cluster`` and
``server`` sections, validated with the schema's defaults filled in at the command line
(cli/cluster.py ``cluster_spec``) and handed over as a :class:`ClusterSpec`. The room each
node needs on its target is derived here from the same settings (the job's memory:
``core.infra.jobs.requests``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.infra.targets import parse_size, server_bytes

# Run order: the clean IST restart first (the cluster as loaded), then the full SST, then
# the crash, whose recovery must also cope with the SST-built datadir.
KINDS = ("node-restart-ist", "node-restart-sst", "node-crash")
SST_METHODS = ("mariabackup", "rsync")
# Bytes on the target per index input byte, per node: the InnoDB table (~2x the TSV with
# page fill and secondary structures) plus, for an SST, the joiner's staging copy (.sst).
COPY_FACTOR = 4


class ClusterError(RuntimeError):
    """A cluster restart failed or cannot start: the message names the node, the config key
    or the evidence (error-log tail)."""


@dataclass(frozen=True)
class ClusterSpec:
    """A cluster job: its validated ``cluster`` and ``server`` config sections (the kinds in
    run order), the run's ``seed`` and whether the nodes' data stays afterwards."""
    cluster: dict
    server: dict
    seed: int
    keep_data: bool = False


def in_run_order(kinds) -> list[str]:
    return [k for k in KINDS if k in kinds]


def node_settings(cluster: dict, server: dict) -> dict:
    """Every node's server options: ``cluster.settings`` over ``server.settings``."""
    return {**(server.get("settings") or {}), **(cluster.get("settings") or {})}


def node_bytes(cluster: dict, server: dict, input_bytes: int) -> int:
    """Room one node needs on its target: the server's own files, its gcache (a file of
    ``gcache_size`` allocated at start) and a full copy of the index with SST staging."""
    return (server_bytes(node_settings(cluster, server)) + parse_size(cluster["gcache_size"])
            + COPY_FACTOR * input_bytes)
