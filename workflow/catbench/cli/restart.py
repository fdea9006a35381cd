"""CLI subcommand ``catbench restart``: restart / crash-recovery phases on one target.

Hook into the main CLI with ``add_subcommands(subparsers)``; the subcommand sets
``func`` (called with the parsed args, returns an exit code).
"""

from __future__ import annotations

import argparse
import json
import logging

from ..core.index_input import list_input
from ..core.index_table import VARIANTS, LoadError
from ..core.server import ServerError
from ..core.targets import TargetError
from ..restart.run import BUFFER_POOL_MODES, FAULTS, KINDS, RestartError, run_restart
from .common import settings_arg

log = logging.getLogger(__name__)
EXPECTED = (RestartError, LoadError, ServerError, TargetError)


def cmd_restart(args) -> int:
    """Load the index in a private server on the target, restart it cleanly and after crashes,
    time the phases; writes <out>/<kind>.json ({"rows": [...]}) and <out>/summary.json."""
    try:
        files = list_input(args.input_dir)
        result = run_restart(
            args.target, args.path, files, args.out, variant=args.variant, kinds=args.kinds,
            repetitions=args.repetitions, settings=settings_arg(args.settings_json), binary=args.server_binary,
            seed=args.seed, lookup_count=args.lookup_count, warm_timeout_s=args.warm_timeout_s,
            warm_factor=args.warm_factor, warm_batch=args.warm_batch, buffer_pool_modes=args.buffer_pool_modes,
            buffer_pool_dump_pct=args.buffer_pool_dump_pct, query_threads=args.query_threads,
            start_timeout=args.start_timeout, keep_data=args.keep_data, fault=args.fault)
    except EXPECTED as exc:
        log.error("%s", exc)
        return 1
    print(json.dumps({"target": args.target, **result["summary"]}, default=str))
    return 0


def add_subcommands(subparsers) -> None:
    p = subparsers.add_parser("restart", help="restart and crash-recovery phases on one target",
                              description=cmd_restart.__doc__)
    p.add_argument("--target", required=True, help="storage target name (as in the config)")
    p.add_argument("--path", required=True, help="directory on the target (the server datadir goes below it)")
    p.add_argument("--input-dir", required=True, help="directory of index input TSV files (key, chunkId, subChunkId)")
    p.add_argument("--out", required=True, help="output directory, e.g. results/<run>/restart/<target>")
    p.add_argument("--variant", choices=sorted(VARIANTS), default="qserv")
    p.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS), help="restart kinds (default all)")
    p.add_argument("--repetitions", type=int, default=1, help="repetitions of each kind (default 1)")
    p.add_argument("--settings-json", help="server options as a JSON object")
    p.add_argument("--server-binary", help="mariadbd/mysqld to use (default: search PATH, /usr/sbin)")
    p.add_argument("--seed", type=int, default=0, help="seed of kill points and lookup keys (default 0)")
    p.add_argument("--lookup-count", type=int, default=20000,
                   help="distinct random keys of the warm-up lookups (default 20000)")
    p.add_argument("--warm-timeout-s", type=float, default=60,
                   help="time limit of the warm-up measurement per restart (default 60)")
    p.add_argument("--warm-factor", type=float, default=1.2,
                   help="warm again when a batch p50 is within this factor of the warm p50 (default 1.2)")
    p.add_argument("--warm-batch", type=int, default=200, help="lookups per warm-up batch (default 200)")
    p.add_argument("--buffer-pool-modes", nargs="+", choices=BUFFER_POOL_MODES, default=list(BUFFER_POOL_MODES),
                   help="clean restarts without (off) and with (on) buffer-pool dump/load (default both)")
    p.add_argument("--buffer-pool-dump-pct", type=int, default=100,
                   help="innodb_buffer_pool_dump_pct of the 'on' mode (default 100)")
    p.add_argument("--query-threads", type=int, default=4,
                   help="concurrent HV query connections of crash-under-queries (default 4)")
    p.add_argument("--start-timeout", type=float, default=600,
                   help="seconds a (re)start may take before the target is declared failed (default 600)")
    p.add_argument("--keep-data", action="store_true", help="keep the server datadir afterwards")
    p.add_argument("--fault", choices=FAULTS, help=argparse.SUPPRESS)  # fault drill: must fail cleanly
    p.set_defaults(func=cmd_restart)
