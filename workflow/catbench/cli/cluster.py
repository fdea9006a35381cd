"""CLI subcommand ``catbench cluster``: a private Galera cluster on one target, one node
restarted under load per kind, phase by phase.

Every knob comes from ``--config`` (the run's config, or just its ``cluster``, ``server``
and ``seed`` as the rule passes them); a flag given overrides one value; anything in
neither is the config schema's default.
"""

from __future__ import annotations

import json
import logging

from ..core.index.input import list_input
from ..core.index.table import LoadError
from ..core.infra.config import ConfigError
from ..core.infra.targets import TargetError
from ..core.server.process import ServerError
from ..restart.cluster.options import ClusterError
from ..restart.cluster.spec import ClusterSpec
from .common import guarded, measured, stage_config, stage_parser, stage_sections

log = logging.getLogger(__name__)
COMMANDS = ("cluster",)
EXPECTED = (ClusterError, LoadError, ServerError, TargetError, ConfigError)


def sections(args) -> tuple[dict, dict, int | None]:
    """(cluster, server, seed) from --config with the flags given over it."""
    return stage_sections(args, "cluster")


def cluster_spec(cluster: dict | None, server: dict | None, seed: int | None = None,
                 keep_data: bool = False) -> ClusterSpec:
    """A cluster job's spec from (whole or partial) ``cluster`` and ``server`` sections and
    the seed (a cluster of fewer than 2 nodes fails naming the key: one node restarted
    leaves nobody to rejoin)."""
    return ClusterSpec.of(stage_config("cluster", cluster, server, seed), keep_data=keep_data)


def cmd_cluster(args) -> int:
    """Form a private Galera cluster on the target (every node's datadir there), load the index
    through node 1, restart the last node under load per kind; writes <out>/<kind>.json and
    <out>/summary.json."""
    # the stage's imports only when it runs
    from ..restart.cluster.run_cluster import run_cluster
    cluster, server, seed = sections(args)
    files = list_input(args.input_dir)
    result = run_cluster(args.target, args.path, files, args.out, cluster_spec(cluster, server, seed, args.keep_data))
    print(json.dumps({"target": args.target, "kinds": result["summary"]["kinds"]}, default=str))
    return 0


def add_subcommands(subparsers) -> None:
    p = stage_parser(subparsers, "cluster", cmd_cluster, "Galera cluster: one node restarted under load, phase by phase",
                     "cluster", "every node's datadir goes")
    p.set_defaults(func=guarded(measured(cmd_cluster), EXPECTED, "cluster"))
