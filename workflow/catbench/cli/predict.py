"""CLI sub-commands ``catbench predict`` (a load's time and bytes at N rows from the rungs of
a ladder, with the ladder's own validation) and ``catbench coverage`` (the sealed checks' record)."""

from __future__ import annotations

import argparse
import json
import logging
import math
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.infra.config import ConfigError, yamlfile
from ..core.infra.files import atomic_path
from ..core.infra.targets import human
from ..predict import sealed as sealed_doc
from ..predict.ladder import check_one_ladder
from ..predict.runs import device_figures, read_runs
from ..predict.spec import Fitting, PredictSpec
from .common import guarded, out_path, read_config
from .predict_node import add_arguments as add_restart_arguments
from .predict_node import add_query_arguments, predict_queries_at, predict_restarts, size_type

if TYPE_CHECKING:   # imported where it is built: the scale model's imports cost every other command
    from ..predict.scale import PredictTarget

log = logging.getLogger(__name__)
COMMANDS = ("predict", "coverage")
# the fields of a load's "key" in the JSON (--out); the report reads them
KEY_FIELDS = ("target", "variant", "engine", "strategy", "id_layout")
MAX_ROWS = 1e14                      # --rows past this is no catalog the model is for
MIN_POOL, MAX_POOL = 2 << 20, 1 << 50   # --pool: InnoDB's least; more memory than any machine


def _target(spec: PredictSpec, engine: str, rows: float, reps: list, pool: int | None = None,
            limit: bool = True, ram: int | None = None) -> PredictTarget:
    """The target of one load: ``pool`` (--pool) or the config's, and the page cache beside it
    that ``ram`` (--ram, or server.ram) leaves; load.time_limit_s only where the rungs had one
    (a strategy that loads in one stream ignores it: its summary's time_limit_s is null) and
    ``limit`` (--no-time-limit: the time to load every row)."""
    from ..predict.scale import PredictTarget
    limited = limit and any(r.time_limit_s is not None for r in reps)
    pool = pool or spec.target_pool(engine, rows)
    return PredictTarget(rows, pool, spec.sort_memory, spec.time_limit_s if limited else None, spec.below_rate,
                  spec.index_files, spec.page_cache(engine, pool, ram), spec.sst_file)


def _fmt_n(v) -> str:
    return "?" if v is None else f"{v:,.0f}"


def _line(key: tuple, p: dict) -> str:
    name = "/".join(key)
    if "refused" in p:
        return f"{name}: no prediction: {p['refused']}"
    what = (f"{p['rows']:,.0f} rows by the {p['seconds']:,.0f} s limit "
            f"[{_fmt_n(p['rows_ci_low'])}, {_fmt_n(p['rows_ci_high'])}]; all rows in "
            f"{_hours(p['all_rows_seconds'])} [{_hours(p['all_rows_seconds_ci_low'])}, "
            f"{_hours(p['all_rows_seconds_ci_high'])}]" if p["stopped"] else
            f"{_hours(p['seconds'])} [{_hours(p['seconds_ci_low'])}, {_hours(p['seconds_ci_high'])}]")
    later = (f", later half {_fmt_n(p['later_half_rate'])} rows/s [{_fmt_n(p['later_half_rate_ci_low'])}, "
             f"{_fmt_n(p['later_half_rate_ci_high'])}] at table ÷ pool {p['later_half_x'][0]:.2f}–"
             f"{p['later_half_x'][1]:.2f}" if p.get("later_half_rate") and p["fit"]["form"] != "steady" else "")
    k = p["fit"].get("calibration_k")
    io = (f", {p['pool_misses_per_row']:.3f} pool misses and {p['device_reads_per_row']:.3f} device reads a row"
          if p["fit"]["form"] == "misses" else "")
    cpu = f", server CPU {p['server_cpu_us_per_row']:.1f} µs a row" if p.get("server_cpu_us_per_row") else ""
    d = p["fit"].get("depth_s_per_row_per_doubling")
    cpu += f", +{d * 1e6:.2f} µs a row per doubling of the table's rows" if d else ""
    w = p.get("writes") or {}
    cpu += (f", writes {w['device_write_bytes_per_row']:,.0f} B a row ({w['device_write_MBps']:,.0f} MB/s; redo "
            f"{w['redo_bytes_per_row']:,.0f} B, {w['pages_flushed_per_row']:.4f} pages flushed)"
            if w.get("device_write_MBps") and w.get("redo_bytes_per_row") is not None
            and w.get("pages_flushed_per_row") is not None else "")
    share = p["fit"].get("page_cache_share")
    io += ("" if not p.get("page_cache_bytes") or p["fit"]["form"] != "misses" else
           f", a page cache of {human(p['page_cache_bytes'])} serving as " +
           (f"{share:.2f} of its bytes (the rungs' device reads)" if share is not None else
            "all its bytes (no rung's device reads said how much: taken whole)"))
    return (f"{name}: {what}, table {human(p['table_bytes'])}{later}{io}{cpu}, {p['regime']}"
            + (f" (a miss costs {k:.2f}× fio's page read + write)" if k else ""))


def _hours(v) -> str:
    """Seconds as s, min or h: a 10^10-row load is days."""
    if v is None:
        return "?"
    return f"{v:,.1f} s" if v < 600 else f"{v / 60:,.1f} min" if v < 7200 else f"{v / 3600:,.1f} h"


def _compare_line(name: str, v: dict) -> str:
    if "refused" in v:
        return f"{name}: not predicted: {v['refused']}"
    inside = {True: "inside", False: "OUTSIDE", None: "no"}[v["inside"]]
    out = (f"{name}: predicted ÷ measured {v['compared']} = {v['predicted_over_measured']:.2f} "
           f"({inside} its interval; n = {v['n_measured']}, {v['regime']})")
    if v.get("later_half_rate_predicted_over_measured"):
        inside = {True: "inside", False: "OUTSIDE", None: "no"}[v["later_half_rate_inside"]]
        x = v["measured_later_half_x"]
        out += (f"; later-half rate {v['later_half_rate_predicted_over_measured']:.2f} ({inside} its interval; "
                f"measured {v['measured_later_half_rate']:,.0f} rows/s at table ÷ pool {x[0]:.2f}–{x[1]:.2f})")
    return out


def _validation_line(key: tuple, v: dict) -> str:
    name = "/".join(key)
    if "refused" in v:
        return f"{name}: rung of {v['rung_rows']:,} rows not predicted: {v['refused']}"
    return _compare_line(f"{name}: rung of {v['rung_rows']:,} rows from {len(v['from_rungs'])} smaller", v)


def _finite(o):
    """NaN and infinity as null: strict JSON (json.dumps writes a float's NaN as is)."""
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_finite(v) for v in o]
    return o


def _one_ladder(key: tuple, reps: list):
    """The rungs of one load share their cache per row (a ladder scales it with the rows): rungs
    of two configs fitted together would read a pool's effect as the scale's."""
    check_one_ladder({r.run: r.pool / r.rung_rows for r in reps if r.pool and r.rung_rows},
                     f"the rungs of {'/'.join(key)}", "cache bytes", ".1f")


def _same_pool(key: tuple, measured: list, pool: float):
    """A measured run is scored only against a prediction made for its own cache."""
    had = measured[0].pool
    if had and not 0.9 <= had / pool <= 1.1:
        size = f"{had // 2**20}M" if had % 2**20 == 0 else f"{had // 1024}K"
        give = (f"give --pool {size} (or the config it ran)" if had >= MIN_POOL
                else f"its cache is under the least --pool, {human(MIN_POOL)}: it cannot be scored")
        raise ConfigError(f"--measured {measured[0].run}: {'/'.join(key)} ran with a {human(had)} cache, the "
                          f"prediction is for {human(pool)}: {give}")


def _device_file(path: str) -> dict:
    """A device's published figures (--device FILE) as a target's fio figures."""
    try:
        return device_figures(yamlfile.read(path, "--device", "a device's figures (YAML)"), path)
    except yamlfile.YamlFileError as exc:
        raise ConfigError(str(exc)) from None
    except ValueError as exc:
        raise ConfigError(f"--device {exc}") from None


def _on_device(groups: dict, figures: dict) -> dict:
    """Every rung's device figures replaced by a device's published ones (--device FILE): the
    answer for a disk this machine does not have. The page cache's read stays the rungs' (it is
    RAM) unless the file gives one."""
    import dataclasses
    return {k: [dataclasses.replace(r, device={**r.device, **figures}) for r in reps] for k, reps in groups.items()}


def cmd_predict(args) -> int:
    """Per target and method: the predicted load time and table bytes at --rows with an
    interval and its regime (or why the model refuses), then every ladder's prediction of
    its own largest rung from the smaller ones (predicted ÷ measured). A load whose job did
    not run alone (its isolation.json) is neither fitted nor scored, and named. Where
    --results hold restart or cluster results, each restart kind at the node's size too."""
    out_path(args.out)
    cfg = read_config(args.config)
    spec = PredictSpec.of(cfg)
    fitting = spec.fitting.replace(min_rungs=args.min_rungs) if args.min_rungs else spec.fitting
    figures = _device_file(args.device) if args.device else None
    skipped: list = []
    groups = {k: v for k, v in read_runs(args.results, skipped).items() if not args.targets or k[0] in args.targets}
    restarts = None if args.loads_only else predict_restarts(args, cfg, fitting, figures, required=not groups)
    queries = predict_queries_at(args, figures, cfg) if getattr(args, "nodes", None) else None
    if not groups and restarts is None and queries is None:
        raise ConfigError(f"no loads in {', '.join(args.results)} (results/<run>/load/*/*/*/*/summary.json)"
                          + (f" that ran alone: {_not_alone_text(skipped)}" if skipped else "")
                          + " and no restarts (results/<run>/restart/*/*.json, results/<run>/cluster/*/*.json)")
    rows = float(args.rows if args.rows is not None else spec.target_rows)
    out = {"rows": rows, "pool_bytes": args.pool, "ram_bytes": args.ram or spec.ram, "device": args.device,
           "predictions": [], "validation": [], "measured": [], "not_alone": []}
    if restarts is not None:
        out["restarts"] = restarts
    if queries is not None:
        out["queries"] = queries
    if groups:
        _loads(args, spec, fitting, (groups, skipped, figures), out)
        out["not_measured"] = _not_measured(cfg, groups, args.config)
        for m in out["not_measured"]:
            print(f"not predicted: {m['variant']}/{m['engine']}/{m['strategy']}, which no rung measured: {m['how']}")
    elif args.sealed:
        _check_seal(args.sealed, sealed_doc.read(args.sealed), out)
    if queries is not None and args.measured:
        out["queries_measured"] = _score_queries(args.measured, queries)
    if args.out:
        with atomic_path(args.out) as tmp:
            tmp.write_text(json.dumps(_finite(out), indent=1, default=str))
    return 0


def _loads(a, spec: PredictSpec, fitting: Fitting, found: tuple, out: dict) -> None:
    """The loads' half of ``catbench predict``: ``found`` = (groups, skipped, device figures)."""
    from ..predict.scale import predict, validate   # scipy: not for a refused argument
    groups, skipped, figures = found
    rows, pool, ram = out["rows"], a.pool, a.ram or spec.ram
    skipped = [dict(s, role="rung") for s in skipped]
    if figures:
        groups = _on_device(groups, figures)
    more: list = []
    measured = read_runs(a.measured, more) if a.measured else {}
    skipped += [dict(s, role="measured") for s in more]
    out["not_alone"] = skipped
    sealed = sealed_doc.read(a.sealed) if a.sealed else None
    for key, reps in measured.items():
        if abs(reps[0].rung_rows - rows) > 0.01 * rows:
            raise ConfigError(f"--measured {reps[0].run}: {'/'.join(key)} loaded an input of {reps[0].rung_rows:,} "
                              f"rows, not the {rows:,.0f} predicted: give --rows {reps[0].rung_rows}")
    # load.time_limit_s was written for predict.target_rows: at another N it means nothing
    limit = not a.no_time_limit and rows == spec.target_rows
    print(f"predicted at {rows:,.0f} rows" + (f" with a {human(pool)} cache" if pool else "")
          + (f" and {human(ram)} of RAM" if ram else "")
          + f" from {len(a.results)} run(s):")
    for s in skipped:
        print(f"  {'not fitted' if s['role'] == 'rung' else 'not scored'}: {s['run']} {s['load']} did not run "
              f"alone (met {s['met']}): {_again(s)}")
    pools = {}
    for key, reps in sorted(groups.items()):
        _one_ladder(key, reps)
        t = _target(spec, key[2], rows, reps, pool, limit, ram)
        pools[key] = t.pool
        p = predict(reps, t, fitting)
        out["predictions"].append({"key": dict(zip(KEY_FIELDS, key)), **p})
        print("  " + _line(key, p))
    if sealed is not None:
        _check_seal(a.sealed, sealed, out)
    _score(a, out, measured, pools, sealed)
    print("validation (each ladder's largest rung from its smaller ones):")
    for key, reps in sorted(groups.items()):
        v = validate(reps, fitting)
        if v is not None:
            out["validation"].append({"key": dict(zip(KEY_FIELDS, key)), **v})
            print("  " + _validation_line(key, v))
    if not out["validation"]:
        print("  none: every load has a single rung")
    out["validation"] += out["measured"]   # the report's validation: the rungs' own, then the target's
    if a.out:
        out["curve"] = _curves(spec, fitting, groups, measured, pool, rows, ram)


def _not_measured(cfg: dict, groups: dict, config: str) -> list[dict]:
    """The loads the config asks for (load.variants x the engine x strategy pairs that run) that
    no rung in --results measured, each with the commands that would measure it."""
    from ..load.spec import LoadMatrix
    matrix = LoadMatrix.of(cfg)
    have = {key[1:4] for key in groups}
    how = (f"`catbench ladder --config {config} --out results/{cfg['run']}-rungs` writes its rungs' configs "
           f"(`make ladder LADDER={config}` runs them); give their results with --results")
    return [{"variant": v, "engine": e, "strategy": s, "how": how}
            for v in matrix.variants for e, s in matrix.pairs() if (v, e, s) not in have]


def _again(skipped: dict) -> str:
    """How a load that did not run alone is run again, alone: Snakemake forced to redo its output."""
    return (f"run it again alone: `snakemake --cores all --configfile <its config> --forcerun {skipped['path']}` "
            f"(with nothing else measuring on the machine)")


def _not_alone_text(skipped: list) -> str:
    return "; ".join(f"{s['run']} {s['load']} did not (met {s['met']}): {_again(s)}" for s in skipped)


def _check_seal(path, sealed: dict, out: dict) -> None:
    """Refuse, naming what changed, when the prediction made now is not the sealed one."""
    keys = ("rows", "pool_bytes", "ram_bytes", "predictions", *(("queries",) if "queries" in out else ()))
    now = json.loads(json.dumps(_finite({**{k: out[k] for k in keys},
                                         **({"restarts": {k: out["restarts"][k] for k in ("at", "predictions")}}
                                            if "restarts" in out else {})}), default=str))
    sealed = {k: sealed[k] for k in (*keys, "restarts") if k in sealed}
    if "restarts" in sealed:
        sealed["restarts"] = {k: sealed["restarts"][k] for k in ("at", "predictions")}
    found = sealed_doc.differences(sealed, now)
    if found:
        raise ConfigError(sealed_doc.refusal(path, found))
    print(f"the sealed prediction {path}: the rungs and the config give it still; its figures are scored")


def _score_queries(measured: list, answers: dict) -> dict:
    """Each target's query answer (the sealed one's, the seal checked), Qserv's plan's and each
    engine's, against each --measured run."""
    from ..predict.queries.runs import read_rung
    from ..predict.queries.scan import read_scan_rung
    from ..predict.queries.score import ScoreError, lines, score
    out = {}
    for run in measured:
        for target, answer in answers.items():
            pairs = [("mysql", answer, read_rung(Path(run), target)),
                     *((e, a, read_scan_rung(Path(run), target, e)) for e, a in (answer.get("engines") or {}).items())]
            for engine, ans, rung in pairs:
                if rung is None or "classes" not in ans:
                    continue
                try:
                    result = {"engine": engine, **score(ans, rung)}
                except ScoreError as e:
                    raise ConfigError(f"{target} {engine}: {e}") from None
                out.setdefault(target, []).append(result)
                print(f"{target} {engine}: " + "\n".join(lines(result)))
    return out


def _score(a, out: dict, measured: dict, pools: dict, sealed: dict | None) -> None:
    """Each measured load against its prediction: the sealed one's figures with --sealed."""
    from ..predict.scale import compare
    made = sealed_doc.by_load(sealed if sealed is not None else out)
    for key in sorted(k for k in measured if k in pools):
        _same_pool(key, measured[key], pools[key])
        p = made["/".join(key)]
        out["measured"].append({"key": dict(zip(KEY_FIELDS, key)), "rung_rows": measured[key][0].rung_rows,
                                "from_rungs": p["rungs"], "measured_runs": sorted({r.run for r in measured[key]}),
                                **compare(p, measured[key])})
    if a.measured:
        print(f"against the measured run(s) {', '.join(a.measured)}" + (" (the sealed figures)" if sealed else "")
              + ":")
        for m in out["measured"]:
            print("  " + _compare_line("/".join(m["key"].values()), m))


def _curves(spec: PredictSpec, fitting: Fitting, groups: dict, measured: dict, pool: int | None,
            rows: float, ram: int | None = None) -> list:
    """Per load: its predicted time to every row at each N of the grid (the user's pool, or
    the config's at that N) and the points its runs measured (rungs, then --measured);
    ``rows``: the N the prediction was asked for."""
    from ..predict.curve import GRID, curve, measured_points
    out = []
    for key, reps in sorted(groups.items()):
        targets = [_target(spec, key[2], n, reps, pool, limit=False, ram=ram) for n in GRID]
        out.append({"key": dict(zip(KEY_FIELDS, key)), "target_rows": rows, "predicted": curve(reps, targets, fitting),
                    "measured": measured_points(reps + measured.get(key, []))})
    return out


def cmd_coverage(args) -> int:
    """Per form and in all, over the out-of-sample figures of the record of sealed checks: how
    many fell inside the interval printed then, inside that interval widened by the form's error
    measured on the other checks (what predict states now), and within [0.67, 1.5]."""
    from ..predict import coverage as cov
    checks = cov.read(Path(args.record) if args.record else None)
    print(f"{len(checks)} sealed figures out of sample ({args.confidence:.0%} intervals):")
    for form, c in cov.coverage(checks, args.confidence).items():
        pct = lambda k, n: f"{c[k]}/{c[n]}" + (f" ({c[k] / c[n]:.0%})" if c[n] else "")  # noqa: E731
        err = f", error {math.exp(c['error']):.2f}x" if c["error"] is not None else ""
        print(f"  {form}: {c['figures']} figures{err}; inside as printed {pct('inside', 'printed')}, "
              f"widened {pct('inside_widened', 'widened')}; within [0.67, 1.5] {pct('within_band', 'figures')}")
    return 0


def _positive(text: str) -> float:
    """--rows: a finite number over 0 (1e10 and 10000000000 alike)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of rows") from None
    if not math.isfinite(v) or v < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: the rows must be a finite number of at least 1")
    return v


def _rows(text: str) -> float:
    """--rows: a finite number of at least 1 and at most MAX_ROWS (1e10 and 10000000000 alike)."""
    v = _positive(text)
    if v > MAX_ROWS:
        raise argparse.ArgumentTypeError(f"{text!r}: over {MAX_ROWS:.0e} rows, past any catalog the model is for")
    return v


# --pool, --ram: a cache a server can have
_pool = size_type("128G, 512M", MIN_POOL, MAX_POOL,
                  f"a cache between {human(MIN_POOL)} and {human(MAX_POOL)}", int)


def _at_least_one(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: at least 1")
    return v


def add_subcommands(subparsers) -> None:
    p = subparsers.add_parser("predict", help="a load's time and bytes at N rows from a ladder's smaller runs",
                              description=cmd_predict.__doc__)
    p.add_argument("--config", required=True, help="the target's config (its predict section and load settings)")
    p.add_argument("--results", required=True, action="extend", nargs="+", help="results/<run> of each rung")
    p.add_argument("--rows", type=_rows, help="index rows to predict (default predict.target_rows)")
    p.add_argument("--pool", type=_pool, help="the target's cache (e.g. 128G; default the config's, or "
                   "predict.pool_per_row_bytes × rows)")
    p.add_argument("--ram", type=_pool, help="the target's RAM for the server and its page cache (e.g. 512G; "
                   "default server.ram). Where the engine reads through the page cache (innodb_flush_method "
                   "fsync, MyISAM, MyRocks), a page the pool misses is read from RAM while the table's pages fit "
                   "in what is left of it beside the pool and predict.ram_own, from the device after: each "
                   "at its cost on the target (fio's cache-read and page-read)")
    p.add_argument("--no-time-limit", action="store_true",
                   help="predict the time to load every row, ignoring load.time_limit_s (ignored too "
                        "when --rows is not predict.target_rows, which the limit was written for)")
    p.add_argument("--measured", action="append", help="results/<run> of a target run to hold the "
                   "predictions against (not fitted on; repeat)")
    p.add_argument("--sealed", help="a prediction sealed before the target ran (make far-seal): the --measured "
                   "runs are scored against its figures, and the command refuses when the rungs and the config "
                   "no longer give it")
    p.add_argument("--min-rungs", type=_at_least_one, help="rungs needed (default predict.min_rungs)")
    p.add_argument("--device", help="a device's published figures (YAML: page_read_us, page_write_us, "
                   "seq_read_MBps, seq_write_MBps; resources/devices/ has an NVMe, a SATA SSD, a RAID6 of disks "
                   "and the Qserv test clusters' nodes) in place of the rungs' fio: the answer for a disk this machine does not have")
    p.add_argument("--out", help="write the predictions and the validation as JSON here")
    p.add_argument("--targets", nargs="+", help="predict these targets' loads alone (default: every target's)")
    p.add_argument("--loads-only", action="store_true", help="the loads alone: restart results in --results "
                   "are not read")
    add_query_arguments(p, _rows, _positive, _at_least_one, _pool)
    add_restart_arguments(p)
    p.set_defaults(func=guarded(cmd_predict, (ConfigError, FileNotFoundError, ValueError), "predict"))

    p = subparsers.add_parser("coverage", help="how often the stated intervals held, per form, over every sealed check",
                              description=cmd_coverage.__doc__)
    p.add_argument("--record", help="the record of sealed checks (default: resources/predict/coverage.csv)")
    p.add_argument("--confidence", type=float, default=0.95)
    p.set_defaults(func=guarded(cmd_coverage, (OSError, ValueError, KeyError), "coverage"))
