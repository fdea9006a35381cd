"""CLI subcommand ``catbench restart``: restart / crash-recovery phases on one target.

Every knob comes from ``--config`` (the run's config, or just its ``restart``, ``server``
and ``seed`` as the rule passes them); a flag given overrides one value; anything in
neither is the config schema's default. Hook into the main CLI with
``add_subcommands(subparsers)``; the subcommand sets ``func`` (called with the parsed
args, returns an exit code).
"""

from __future__ import annotations

import argparse
import json
import logging

from ..core.index.input import list_input
from ..core.index.table import LoadError
from ..core.infra.config import ConfigError, validate
from ..core.infra.targets import TargetError
from ..core.server.process import ServerError
from ..restart.options import FAULTS, RestartError
from ..restart.spec import RestartSpec
from .common import config_arg, guarded, measured, overrides, section_flags, settings_arg

log = logging.getLogger(__name__)
COMMANDS = ("restart",)
EXPECTED = (RestartError, LoadError, ServerError, TargetError, ConfigError)


def sections(args) -> tuple[dict, dict, int | None]:
    """(restart, server, seed) from --config with the flags given over it."""
    cfg = overrides(args, config_arg(args.config))
    restart = dict(cfg.get("restart") or {})
    if args.settings_json:
        restart["settings"] = {**(restart.get("settings") or {}), **settings_arg(args.settings_json)}
    server = dict(cfg.get("server") or {})
    if args.server_binary:
        server["binary"] = args.server_binary
    return restart, server, args.seed if args.seed is not None else cfg.get("seed")


def restart_spec(restart: dict | None, server: dict | None, seed: int | None = None, keep_data: bool = False,
                 fault: str | None = None) -> RestartSpec:
    """A restart's spec from (whole or partial) ``restart`` and ``server`` sections and the
    seed: validated, the schema's defaults filled in, here at the command line, once."""
    cfg = validate({"restart": restart or {}, "server": server or {}, **({} if seed is None else {"seed": seed})},
                   whole=False)
    return RestartSpec.of(cfg, keep_data=keep_data, fault=fault)


def cmd_restart(args) -> int:
    """Load the index in a private server on the target, restart it cleanly and after crashes,
    time the phases; writes <out>/<kind>.json ({"rows": [...]}) and <out>/summary.json."""
    # imported here: --help and the argument parser skip the stage's imports
    from ..restart.run_restart import run_restart
    restart, server, seed = sections(args)
    files = list_input(args.input_dir)
    result = run_restart(args.target, args.path, files, args.out,
                         restart_spec(restart, server, seed, args.keep_data, args.fault))
    print(json.dumps({"target": args.target, **result["summary"]}, default=str))
    return 0


def add_subcommands(subparsers) -> None:
    p = subparsers.add_parser("restart", help="restart and crash-recovery phases on one target",
                              description=cmd_restart.__doc__)
    p.add_argument("--target", required=True, help="storage target name (as in the config)")
    p.add_argument("--path", required=True, help="directory on the target (the server datadir goes below it)")
    p.add_argument("--input-dir", required=True, help="directory of index input TSV files (key, chunkId, subChunkId)")
    p.add_argument("--out", required=True, help="output directory, e.g. results/<run>/restart/<target>")
    p.add_argument("--config", help="config as JSON text or a YAML file (sections restart, server, seed); "
                                    "the flags below override single values, the schema gives the rest")
    section_flags(p, "restart")
    p.add_argument("--settings-json", help="server options as a JSON object, over restart.settings")
    p.add_argument("--server-binary", help="server.binary: mariadbd/mysqld to use (default: search PATH, /usr/sbin)")
    p.add_argument("--seed", type=int, help="seed of kill points and lookup keys (config: seed)")
    p.add_argument("--keep-data", action="store_true", help="keep the server datadir afterwards")
    p.add_argument("--fault", choices=FAULTS, help=argparse.SUPPRESS)  # fault drill: must fail cleanly
    p.set_defaults(func=guarded(measured(cmd_restart), EXPECTED, "restart"))
