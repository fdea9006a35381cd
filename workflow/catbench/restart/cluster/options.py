"""The cluster stage's knobs, from one source of truth: the config schema's ``cluster`` and
``server`` sections. A job, a test or a hand-run command gives whole or partial sections;
every value not given is the schema's default. The room each node needs on its target
is derived here from the same settings (the job's memory: ``core.infra.jobs.requests``).
"""

from __future__ import annotations

from ...core.infra.config import check_section, load_schema, section
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


def resolve(cluster: dict | None, server: dict | None) -> tuple[dict, dict]:
    """The ``cluster`` and ``server`` sections with the schema's defaults filled in and
    checked; ConfigError naming the key for anything the schema rejects (e.g. a cluster of
    fewer than 2 nodes: one node restarted leaves nobody to rejoin)."""
    cl, sv = section("cluster", cluster), section("server", server)
    check_section("cluster", cl)
    check_section("server", sv)
    cl["kinds"] = [k for k in KINDS if k in cl["kinds"]]
    return cl, sv


def node_settings(cluster: dict, server: dict) -> dict:
    """Every node's server options: ``cluster.settings`` over ``server.settings``."""
    return {**(server.get("settings") or {}), **(cluster.get("settings") or {})}


def node_bytes(cluster: dict, server: dict, input_bytes: int) -> int:
    """Room one node needs on its target: the server's own files, its gcache (a file of
    ``gcache_size`` allocated at start) and a full copy of the index with SST staging."""
    return (server_bytes(node_settings(cluster, server)) + parse_size(cluster["gcache_size"])
            + COPY_FACTOR * input_bytes)


def default_seed() -> int:
    return int(load_schema()["properties"]["seed"]["default"])
