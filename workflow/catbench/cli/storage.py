"""CLI subcommands for the storage side: ``catbench fio`` and ``catbench load-index``.

Hook into the main CLI with ``add_subcommands(subparsers)``; each subcommand sets
``func`` (called with the parsed args, returns an exit code).
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

import mysql.connector
import pyarrow as pa
import pyarrow.csv as pacsv

from ..core.index_input import list_input
from ..core.index_table import VARIANTS, LoadError
from ..core.server import ServerError
from ..core.targets import TargetError, parse_size
from ..fio.bench import TESTS, FioError, run_fio
from ..load.driver import STRATEGIES, run_load_index
from ..load.strategies import LoadOptions
from .common import guarded, settings_arg

log = logging.getLogger(__name__)
EXPECTED = (FioError, LoadError, ServerError, TargetError, mysql.connector.Error)


def cmd_fio(args) -> int:
    """Run the fio job files on one target; writes <out>/fio.csv and the raw JSON."""
    out = Path(args.out)
    rows = run_fio(args.target, args.path, parse_size(args.size), args.runtime_s, args.numjobs,
                   out / "json", tests=args.tests or TESTS)
    pacsv.write_csv(pa.Table.from_pylist(rows), out / "fio.csv")
    return 0


def cmd_load_index(args) -> int:
    """Load the secondary index on one target; writes <out>/{summary.json,trace,samples,intervals}."""
    files = list_input(args.input_dir)
    summary = run_load_index(
        args.target, args.path, files, args.out, variant=args.variant, strategy=args.strategy,
        settings=settings_arg(args.settings_json), binary=args.server_binary, tcp=args.tcp,
        sample_interval_s=args.sample_interval, interval_s=args.interval_s,
        optimize_limit_s=args.optimize_limit_s, lookup_threads=args.lookup_threads,
        lookup_count=args.lookup_count, lookup_seconds=args.lookup_seconds, keep_data=args.keep_data,
        options=LoadOptions(connections=args.connections, transaction_rows=args.transaction_rows,
                            batch_files=args.batch_files, consolidate=args.consolidate,
                            sort_memory=args.sort_memory, sort_threads=args.sort_threads,
                            chunk_rows=args.chunk_rows))
    print(json.dumps({k: summary.get(k) for k in (
        "target", "variant", "strategy", "rows", "seconds", "rows_per_s", "sort_seconds", "load_seconds",
        "index_build_seconds", "consolidate_seconds", "duplicate_check_seconds", "table_bytes", "lookup_qps",
        "lookup_p50_s", "lookup_p99_s")}, default=str))
    return 0


def _target_args(p):
    p.add_argument("--target", required=True, help="storage target name (as in the config)")
    p.add_argument("--path", required=True, help="directory on the target")
    p.add_argument("--out", required=True, help="output directory")


def add_subcommands(subparsers) -> None:
    p = subparsers.add_parser("fio", help="fio storage tests on one target",
                              description=cmd_fio.__doc__)
    _target_args(p)
    p.add_argument("--size", default="1G", help="test file size, e.g. 256M, 4G (default 1G)")
    p.add_argument("--runtime-s", type=float, default=20, help="seconds per test (default 20)")
    p.add_argument("--numjobs", type=int, default=16, help="parallel jobs of the random tests (default 16)")
    p.add_argument("--tests", nargs="*", choices=TESTS, help="subset of tests (default all)")
    p.set_defaults(func=guarded(cmd_fio, EXPECTED, "fio"))

    p = subparsers.add_parser("load-index", help="load the secondary index on one target",
                              description=cmd_load_index.__doc__)
    _target_args(p)
    p.add_argument("--input-dir", required=True, help="directory of index input TSV files (key, chunkId, subChunkId)")
    p.add_argument("--variant", choices=sorted(VARIANTS), default="seed")
    p.add_argument("--strategy", choices=STRATEGIES, default="sequential")
    p.add_argument("--settings-json", help="server options as a JSON object")
    p.add_argument("--server-binary", help="mariadbd/mysqld to use (default: search PATH, /usr/sbin)")
    p.add_argument("--tcp", action="store_true", help="also listen on 127.0.0.1 (default: socket only)")
    p.add_argument("--sample-interval", type=float, default=1.0, help="sampling interval in s (default 1)")
    p.add_argument("--interval-s", type=float, help="load-rate table interval in s (default total/20)")
    p.add_argument("--optimize-limit-s", type=float, default=60,
                   help="time limit of OPTIMIZE TABLE in s; 0 skips it (default 60)")
    p.add_argument("--lookup-threads", type=int, default=4, help="point-lookup client threads (default 4)")
    p.add_argument("--lookup-count", type=int, default=20000, help="point lookups in total (default 20000)")
    p.add_argument("--lookup-seconds", type=float, help="time budget of the lookups (optional)")
    p.add_argument("--keep-data", action="store_true", help="keep the server datadir after the load")
    d = LoadOptions()
    g = p.add_argument_group("strategy options (ignored by strategies that do not use them)")
    g.add_argument("--connections", type=int, default=d.connections,
                   help=f"parallel, deferred-pk, trans-partitioned: loading connections (default {d.connections})")
    g.add_argument("--transaction-rows", type=int, default=d.transaction_rows,
                   help="bulk: rows per transaction, 0 = one transaction for everything (default 0)")
    g.add_argument("--batch-files", type=int, default=d.batch_files,
                   help=f"trans-partitioned: input files per partition (default {d.batch_files})")
    g.add_argument("--consolidate", action=argparse.BooleanOptionalAction, default=d.consolidate,
                   help="trans-partitioned: ALTER TABLE ... REMOVE PARTITIONING at the end (default on)")
    g.add_argument("--sort-memory", default=d.sort_memory,
                   help=f"sorted, bulk: DuckDB memory limit of the external sort (default {d.sort_memory})")
    g.add_argument("--sort-threads", type=int, default=d.sort_threads,
                   help="sorted, bulk: DuckDB threads, 0 = all cores (default 0)")
    g.add_argument("--chunk-rows", type=int, default=d.chunk_rows,
                   help=f"sorted, bulk: rows per sorted TSV chunk (default {d.chunk_rows})")
    p.set_defaults(func=guarded(cmd_load_index, EXPECTED, "load-index"))
