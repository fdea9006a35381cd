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
from ..core.infra.config import ConfigError, validate
from ..core.infra.targets import TargetError
from ..core.server.process import ServerError
from ..restart.cluster.options import ClusterError
from ..restart.cluster.spec import ClusterSpec
from .common import config_arg, guarded, measured, overrides, section_flags

log = logging.getLogger(__name__)
COMMANDS = ("cluster",)
EXPECTED = (ClusterError, LoadError, ServerError, TargetError, ConfigError)


def sections(args) -> tuple[dict, dict, int | None]:
    """(cluster, server, seed) from --config with the flags given over it."""
    cfg = overrides(args, config_arg(args.config))
    cluster = dict(cfg.get("cluster") or {})
    server = dict(cfg.get("server") or {})
    if args.server_binary:
        server["binary"] = args.server_binary
    return cluster, server, args.seed if args.seed is not None else cfg.get("seed")


def cluster_spec(cluster: dict | None, server: dict | None, seed: int | None = None,
                 keep_data: bool = False) -> ClusterSpec:
    """A cluster job's spec from (whole or partial) ``cluster`` and ``server`` sections and
    the seed: validated (ConfigError naming the key, e.g. a cluster of fewer than 2 nodes:
    one node restarted leaves nobody to rejoin), the schema's defaults filled in, once."""
    cfg = validate({"cluster": cluster or {}, "server": server or {}, **({} if seed is None else {"seed": seed})},
                   whole=False)
    return ClusterSpec.of(cfg, keep_data=keep_data)


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
    p = subparsers.add_parser("cluster", help="Galera cluster: one node restarted under load, phase by phase",
                              description=cmd_cluster.__doc__)
    p.add_argument("--target", required=True, help="storage target name (as in the config)")
    p.add_argument("--path", required=True, help="directory on the target (every node's datadir goes below it)")
    p.add_argument("--input-dir", required=True, help="directory of index input TSV files (key, chunkId, subChunkId)")
    p.add_argument("--out", required=True, help="output directory, e.g. results/<run>/cluster/<target>")
    p.add_argument("--config", help="config as JSON text or a YAML file (sections cluster, server, seed); "
                                    "the flags below override single values, the schema gives the rest")
    section_flags(p, "cluster")
    p.add_argument("--server-binary", help="server.binary: the mariadbd to use")
    p.add_argument("--seed", type=int, help="seed of lookup keys and the workload (config: seed)")
    p.add_argument("--keep-data", action="store_true", help="keep the nodes' datadirs afterwards")
    p.set_defaults(func=guarded(measured(cmd_cluster), EXPECTED, "cluster"))
