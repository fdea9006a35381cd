"""CLI sub-commands of the storage side: the targets checked, fio, the index loads and their
comparison, and the estimate of what a run needs (with its calibration load)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import mysql.connector
import pyarrow as pa
import pyarrow.csv as pacsv

from ..core.index.input import list_input
from ..core.index.table import ENGINES, VARIANTS, LoadError
from ..core.infra.config import ConfigError, section, validate
from ..core.infra.files import atomic_path
from ..core.infra.targets import StorageTarget, TargetError
from ..core.server.process import ServerError
from ..fio.bench import FioError, run_fio
from ..fio.spec import TESTS, FioSpec
from ..load.load_index import run_load_index
from ..load.spec import LoadCase, LoadSpec
from ..load.strategies import STRATEGIES
from .common import (command, config_arg, flagged_config, guarded, measured, overrides, read_config,
                     section_flags, settings_arg)

log = logging.getLogger(__name__)
COMMANDS = ("fio", "load-index", "load-compare", "estimate", "target-info")
EXPECTED = (FioError, LoadError, ServerError, TargetError, ConfigError, mysql.connector.Error)


def cmd_fio(args) -> int:
    """Run the fio job files on one target; writes <out>/fio.csv and the raw JSON. Every knob
    is read from --config (section fio; the schema's defaults where absent); a flag overrides
    its config key."""
    out = Path(args.out)
    rows = run_fio(args.target, args.path, FioSpec.of(flagged_config(args), args.tests), out / "json")
    pacsv.write_csv(pa.Table.from_pylist(rows), out / "fio.csv")
    return 0


def load_spec(cfg: dict, keep_data: bool = False, checked: bool = True) -> LoadSpec:
    """A load's spec from (whole or partial) ``load`` and ``server`` sections: validated, the
    schema's defaults filled in, here at the command line, once. ``checked`` False only fills
    the defaults (tests load tiny inputs with knobs below the schema's minimums)."""
    if not checked:
        return LoadSpec.of({sec: section(sec, cfg.get(sec)) for sec in ("load", "server")}, keep_data)
    return LoadSpec.of(validate(cfg), keep_data)


def _load_index_config(args) -> dict:
    """The config of a load: --config, with the flags given over it."""
    cfg = overrides(args, config_arg(args.config))
    if args.settings_json:
        cfg.setdefault("server", {})["settings"] = settings_arg(args.settings_json)
    return cfg


def cmd_load_index(args) -> int:
    """Load the secondary index on one target; writes <out>/{summary.json,trace,samples,intervals}.
    Every knob is read from --config (sections load and server; the schema's defaults
    where absent); a flag overrides its config key."""
    files = list_input(args.input_dir)
    spec = load_spec(_load_index_config(args), keep_data=args.keep_data)
    summary = run_load_index(spec, StorageTarget(args.target, Path(args.path)), files, args.out,
                             LoadCase(args.variant, args.strategy, args.engine))
    print(json.dumps({k: summary.get(k) for k in (
        "target", "variant", "engine", "strategy", "rows", "seconds", "rows_per_s", "sort_seconds", "load_seconds",
        "index_build_seconds", "consolidate_seconds", "duplicate_check_seconds", "table_bytes", "lookup_qps",
        "lookup_p50_s", "lookup_p99_s")}, default=str))
    return 0


def cmd_estimate(args):
    """What the run will need on each target (input, tables, scratch), before it starts."""
    from ..load.load_index import calibrate
    from ..load.estimate import estimate, fit_tables, lines, time_lines
    from ..load.spec import EstimateSpec
    if args.fit:   # refit the model's table figures from loads of several sizes (estimate.md)
        print(json.dumps(fit_tables(args.fit), indent=1))
        return
    if not args.config:
        raise ValueError("give --config (the run to estimate) or --fit (loads to refit the model from)")
    cfg = read_config(args.config)
    run = EstimateSpec.of(cfg)
    est = estimate(run, Path(args.results) if args.results else None)
    for line in lines(est):
        print(line)
    if args.calibrate:
        import tempfile
        if not args.results:
            raise ValueError("--calibrate loads the run's index input: give --results results/<run>")
        from ..core.server.loaddata import LoadError
        from ..core.infra.settings import ServerError
        with tempfile.TemporaryDirectory(prefix="catbench-calibrate-") as tmp:
            try:
                est["time"] = calibrate(run, LoadSpec.of(cfg), args.calibrate, Path(args.results), args.calibrate_files,
                                        Path(tmp))
            except (LoadError, ServerError) as exc:   # named, not a traceback
                raise ValueError(f"calibration load on target {args.calibrate}: {exc}") from None
        for line in time_lines(est["time"]):
            print(line)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(args.out) as tmp:
            tmp.write_text(json.dumps(est, indent=1) + "\n")


def cmd_target_info(args):
    """Check one storage target (exists or can be created, writable, room for the
    estimated data) and record its filesystem, device and size."""
    from ..core.infra.config import target_dir
    from ..core.infra.targets import check_targets
    cfg = read_config(args.config)
    info = check_targets(cfg, [args.target])[args.target]
    info["run_dir"] = str(target_dir(cfg, args.target))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(args.out) as tmp:
        tmp.write_text(json.dumps(info, indent=1, default=str) + "\n")


def cmd_load_compare(args):
    """One row per load (target, variant, engine, strategy) with speed-up vs one-file-at-a-time; the
    engine x strategy pairs not run, with their reason, to --not-run-out."""
    from ..load.comparison import compare_loads, write_not_run
    compare_loads(args.summaries, args.out)
    if args.not_run_out:
        write_not_run(json.loads(args.not_run or "[]"), args.not_run_out)


_OVERRIDES = "overrides of config keys (default: the key's value in --config)"


def _target_args(p):
    p.add_argument("--target", required=True, help="storage target name (as in the config)")
    p.add_argument("--path", required=True, help="directory on the target")
    p.add_argument("--out", required=True, help="output directory")


def add_subcommands(subparsers) -> None:
    def add(name, fn, *flags):
        command(subparsers, name, fn, *flags, config=name not in ("estimate", "load-compare"))

    add("estimate", cmd_estimate,
        ("--results", {"required": False, "help": "results/<run>: index input already there is measured"}),
        ("--out", {"required": False, "help": "also write the estimate as JSON"}),
        ("--calibrate", {"required": False, "metavar": "TARGET",
                         "help": "also time the steady strategies (sorted, bulk, deferred-pk) from a short "
                                 "load of the first --calibrate-files input files on this target"}),
        ("--calibrate-files", {"type": int, "default": 4, "required": False}),
        ("--fit", {"nargs": "+", "required": False, "metavar": "SUMMARY_JSON",
                   "help": "print table bytes per row fitted to these loads' summary.json instead"}))
    add("target-info", cmd_target_info, "--target", "--out")
    add("load-compare", cmd_load_compare, ("--summaries", {"nargs": "+"}), "--out",
        ("--not-run", {"required": False, "help": "JSON list of {engine, strategy, reason} not run"}),
        ("--not-run-out", {"required": False, "help": "write those to this JSON file"}))

    p = subparsers.add_parser("fio", help="fio storage tests on one target",
                              description=cmd_fio.__doc__)
    _target_args(p)
    p.add_argument("--config", help="config as JSON text or a YAML file: its fio section "
                                    "(default: the schema's defaults)")
    p.add_argument("--tests", nargs="*", choices=TESTS, help="subset of tests (default all)")
    section_flags(p, "fio", group=p.add_argument_group(_OVERRIDES))
    # --path is <target>/<run>/fio: the target's lock sits beside the loads' one
    p.set_defaults(func=guarded(measured(cmd_fio, lambda args: Path(args.path).parent), EXPECTED, "fio"))

    p = subparsers.add_parser("load-index", help="load the secondary index on one target",
                              description=cmd_load_index.__doc__)
    _target_args(p)
    p.add_argument("--input-dir", required=True, help="directory of index input TSV files (key, chunkId, subChunkId)")
    p.add_argument("--variant", choices=sorted(VARIANTS), default="char28")
    p.add_argument("--strategy", choices=STRATEGIES, default="one-file-at-a-time")
    p.add_argument("--engine", choices=sorted(ENGINES), default="innodb",
                   help="storage engine of the index table (one of the config's load.engines)")
    p.add_argument("--config", help="config as JSON text or a YAML file: its load and server sections "
                                    "(default: the schema's defaults)")
    p.add_argument("--settings-json", help="server options as a JSON object (default: server.settings "
                                           "from the config)")
    p.add_argument("--keep-data", action="store_true", help="keep the server datadir after the load")
    g = p.add_argument_group(_OVERRIDES)
    section_flags(p, "load", lists=False, group=g)
    section_flags(p, "server", "server-", lists=False, group=g)
    p.set_defaults(func=guarded(measured(cmd_load_index), EXPECTED, "load-index"))
