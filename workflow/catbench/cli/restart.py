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
from ..core.infra.config import ConfigError
from ..core.infra.targets import TargetError
from ..core.server.process import ServerError
from ..restart.options import FAULTS, RestartError
from ..restart.spec import RestartSpec
from .common import guarded, measured, settings_arg, stage_config, stage_parser, stage_sections

log = logging.getLogger(__name__)
COMMANDS = ("restart",)
EXPECTED = (RestartError, LoadError, ServerError, TargetError, ConfigError)


def sections(args) -> tuple[dict, dict, int | None]:
    """(restart, server, seed) from --config with the flags given over it."""
    restart, server, seed = stage_sections(args, "restart")
    if args.settings_json:
        restart["settings"] = {**(restart.get("settings") or {}), **settings_arg(args.settings_json)}
    return restart, server, seed


def restart_spec(restart: dict | None, server: dict | None, seed: int | None = None, keep_data: bool = False,
                 fault: str | None = None) -> RestartSpec:
    """A restart's spec from (whole or partial) ``restart`` and ``server`` sections and the seed."""
    return RestartSpec.of(stage_config("restart", restart, server, seed), keep_data=keep_data, fault=fault)


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
    p = stage_parser(subparsers, "restart", cmd_restart, "restart and crash-recovery phases on one target",
                     "restart", "the server datadir goes")
    p.add_argument("--settings-json", help="server options as a JSON object, over restart.settings")
    p.add_argument("--fault", choices=FAULTS, help=argparse.SUPPRESS)  # fault drill: must fail cleanly
    p.set_defaults(func=guarded(measured(cmd_restart), EXPECTED, "restart"))
