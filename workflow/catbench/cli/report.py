"""CLI subcommands for the final product: ``catbench tables``, ``report``, ``compare``,
``provenance``.

Hook into the main CLI with ``add_subcommands(subparsers)``; each subcommand sets ``func``
(called with the parsed args, returns an exit code: 0 ok, 1 bad/missing metrics file).
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

from ..core.infra.config import ConfigError, validate
from ..core.infra.targets import TargetError
from ..report.inputs import STAGES, MetricsError
from ..report.spec import ReportSpec
from .common import config_arg, guarded, out_path, overrides, section_flags

log = logging.getLogger(__name__)
COMMANDS = ("tables", "report", "compare", "noise-floor", "provenance")


def report_spec(report: dict | None = None) -> ReportSpec:
    """The report's spec from a whole or partial ``report`` section: validated (ConfigError
    naming the key), the schema's defaults filled in, here at the command line, once."""
    return ReportSpec.of(validate({"report": report or {}}, whole=False))


def _report_spec(args) -> ReportSpec:
    """--config: JSON text or a YAML/JSON file; its ``report`` section (none: the schema's),
    with the flags given over it."""
    return report_spec(overrides(args, config_arg(args.config)).get("report"))


def cmd_tables(args) -> int:
    """Final tables of a run (DuckDB SQL in resources/sql/) -> <out>/<table>.csv (every table of
    resources/report/columns.md), summary.md, provenance.json."""
    from ..report.tables import make_tables
    written = make_tables(args.results, args.out, require=args.require or (),
                          report=_report_spec(args), only=args.inputs)
    for name, path in written.items():
        print(f"{name}: {path}")
    return 0


def cmd_report(args) -> int:
    """Plots (PNG) and a self-contained index.html for a run."""
    from ..report.html import make_report
    index = make_report(args.results, args.out, args.tables, report=_report_spec(args), only=args.inputs)
    print(index)
    return 0


def cmd_compare(args) -> int:
    """Differences between two runs' tables, joined on key columns, with ratios B/A; every
    measured figure judged by the comparison rule against the runs' common offset."""
    from ..report import compare as cmp
    from ..report import noise
    path = Path(args.noise_floor) if args.noise_floor else Path(args.results_a).resolve().parent / noise.FLOOR_FILE
    try:
        floor, note = noise.load(path)
    except ValueError as exc:
        raise MetricsError(str(exc)) from exc
    report = _report_spec(args)
    if floor is None:
        cv = report.between_run_cv
        note += (f"; between-run spread assumed {cv:.0%} with {noise.FALLBACK_DF} degrees of freedom "
                 f"(report.between_run_cv, a guess: measure it with make aa)")
    out = out_path(args.out) or \
        cmp.tables_dir(args.results_b) / f"compare_{cmp.run_name(args.results_a)}.csv"
    cmp.distinct(args.results_a, args.results_b, "compared with itself, every figure would agree, which is no "
                 "A/A check (that needs two runs of one config: make aa)")
    rows = cmp.compare(args.results_a, args.results_b, report=report, floor=floor)
    cmp.write(rows, out)
    print(f"A = {args.results_a}\nB = {args.results_b}\nbetween runs: {note}")
    print(cmp.header(rows, args.results_a, args.results_b) + "\n")
    print(cmp.format_rows(rows[1:], args.limit))
    print(f"\n{cmp.tally(rows)}\n{len(rows)} comparisons written to {out}")
    return 0


def cmd_noise_floor(args) -> int:
    """The between-run noise floor of this machine from a twin: two runs of one config, one after
    the other (make aa). compare then uses it for every comparison of runs on this machine."""
    from ..report import compare as cmp
    from ..report import noise
    cmp.distinct(args.results_a, args.results_b, "a twin is two runs of one config, one after the other "
                 "(make aa); one run against itself measures no noise")
    diffs = cmp.diffs(cmp.figure_pairs(args.results_a, args.results_b))
    if not diffs:   # an empty floor would read as measured while compare fell back to the guess
        raise MetricsError(f"{args.results_a} and {args.results_b}: no measured figure has 2 or more repetitions "
                           f"in both runs from jobs that ran alone, so no between-run noise can be measured; run "
                           f"the twin with repetitions of 2 or more (make aa); no floor written")
    floor = noise.estimate(diffs, (cmp.run_name(args.results_a), cmp.run_name(args.results_b)))
    out = Path(args.out) if args.out else Path(args.results_a).resolve().parent / noise.FLOOR_FILE
    noise.save(floor, out)
    for fam, f in floor["families"].items():
        print(f"{fam:<22} between-run spread {f['between_cv']:.1%} beyond the common offset "
              f"({f['figures']} figures, {f['df']:g} degrees of freedom)")
    print(f"written to {out}")
    return 0


def cmd_provenance(args) -> int:
    """provenance.json of a run: versions, server settings in force, CPU, memory, targets."""
    from ..report.tables import provenance
    doc = json.dumps(provenance(args.results), indent=1, default=str) + "\n"
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(doc)
        print(args.out)
    else:
        sys.stdout.write(doc)
    return 0


def _config_arg(p) -> None:
    p.add_argument("--config", help="config as JSON text or a YAML file: its report section (confidence, "
                                    "alpha, practical_threshold, between_run_cv; default: the schema's)")
    section_flags(p, "report")


def _inputs_arg(p) -> None:
    p.add_argument("--inputs", nargs="*", metavar="PATH",
                   help="the files and folders this config's jobs wrote (the workflow gives its rule's inputs): "
                        "other result folders under RESULTS, an earlier config's, are left out and named; "
                        "default: every folder there")


def add_subcommands(subparsers) -> None:
    p = subparsers.add_parser("tables", help="final CSV tables, summary.md and provenance.json of a run",
                              description=cmd_tables.__doc__)
    p.add_argument("--results", required=True, help="the run's results directory, results/<run>")
    p.add_argument("--out", help="output directory (default RESULTS/tables)")
    p.add_argument("--require", nargs="*", choices=STAGES, metavar="STAGE",
                   help=f"stages that must have metrics ({', '.join(STAGES)}); default none")
    _config_arg(p)
    _inputs_arg(p)
    p.set_defaults(func=guarded(cmd_tables, (MetricsError, ConfigError), "tables"))

    p = subparsers.add_parser("report", help="plots and index.html of a run",
                              description=cmd_report.__doc__)
    p.add_argument("--results", required=True, help="the run's results directory, results/<run>")
    p.add_argument("--tables", help="tables directory (default RESULTS/tables; built if absent)")
    p.add_argument("--out", help="output directory (default RESULTS/report)")
    _config_arg(p)
    _inputs_arg(p)
    p.set_defaults(func=guarded(cmd_report, (MetricsError, ConfigError, TargetError), "report"))

    p = subparsers.add_parser("compare", help="compare two runs' tables (ratios B/A)",
                              description=cmd_compare.__doc__)
    p.add_argument("results_a", metavar="RESULTS_A", help="run A: results/<run> or its tables/")
    p.add_argument("results_b", metavar="RESULTS_B", help="run B: results/<run> or its tables/")
    p.add_argument("--out", help="CSV to write (default RESULTS_B/tables/compare_<A>.csv)")
    p.add_argument("--limit", type=int, default=40, help="rows printed per table (default 40)")
    p.add_argument("--noise-floor", help="between-run noise floor (default: noise-floor.json beside RESULTS_A, "
                                         "when measured on this machine; else report.between_run_cv)")
    _config_arg(p)
    p.set_defaults(func=guarded(cmd_compare, (MetricsError, ConfigError), "compare"))

    p = subparsers.add_parser("noise-floor", help="this machine's between-run noise from two runs of one config",
                              description=cmd_noise_floor.__doc__)
    p.add_argument("results_a", metavar="RESULTS_A", help="the first run of the twin")
    p.add_argument("results_b", metavar="RESULTS_B", help="the second run of the twin")
    p.add_argument("--out", help="file to write (default: beside RESULTS_A, noise-floor.json)")
    p.set_defaults(func=guarded(cmd_noise_floor, (MetricsError, ConfigError), "noise-floor"))

    p = subparsers.add_parser("provenance", help="versions, settings, hardware of a run",
                              description=cmd_provenance.__doc__)
    p.add_argument("--results", required=True, help="the run's results directory, results/<run>")
    p.add_argument("--out", help="file to write (default: print)")
    p.set_defaults(func=guarded(cmd_provenance, (MetricsError,), "provenance"))
