"""The cluster stage's fixed choices: its kinds in run order, the SST methods, the room a
node's copy of the index takes, and its error. The job's knobs are its spec (spec.py)."""

from __future__ import annotations

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


def in_run_order(kinds) -> list[str]:
    return [k for k in KINDS if k in kinds]
