"""One index load, end to end: ``run_load_index`` checks the target's room, starts a
private server on it, creates the strategy's table, loads the validated input with the
strategy while the sampler records, verifies row count and checksum against the input,
runs OPTIMIZE TABLE under its limit and the point lookups, and writes the results.
All of that is one repetition; the job makes ``load.repetitions`` of them (fewer when a
repetition takes longer than ``load.repetition_limit_s``; with ``load.max_repetitions`` those
are a pilot whose spread sets how many follow, core/infra/jobs/repeat.py), each on a dropped
and re-created table after a server restart, so each starts from an empty buffer pool. The
server runs with ``load.settings`` over ``server.settings`` (e.g. a small buffer pool for
the index study only).

Orchestration only: the strategies are in ``strategies/``, the measurements in
``measure.py``; the server's life (owner lock, stale cleanup, stop on every exit path,
data removal) is ``core.server.session.private_server``'s, and the results directory appears
only complete (``core.infra.files.staged_output``). Every knob comes from the job's
``LoadSpec`` (spec.py), read once from the validated ``load`` and ``server`` sections.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

import mysql.connector
import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ..core.index.input import list_input, pick_lookup_keys
from ..core.index.table import DATABASE, Variant, files_figures, get_engine, get_variant, table_checksum
from ..core.infra.files import dir_bytes, staged_output
from ..core.infra.jobs.repeat import Repeats
from ..core.infra.resources import read_sql
from ..core.infra.targets import StorageTarget, check_target, describe_target, device_for
from ..core.server.loaddata import LoadError
from ..core.server.logs import out_of_space
from ..core.server.session import Datadir, execute_alone, load_server, private_server, server_dir
from ..core.server.status import variables
from .estimate import STEADY, input_rows, load_need
from .job import TIMINGS, LoadJob, LoadWatch, Outcome, Repetition
from .ledger import STATE, Ledger, ResumeState, load_key, repetition_from_doc
from .measure import (
    default_interval,
    interval_table,
    lookup_benchmark,
    optimize_table,
    phase_at,
)
from .sampler import Sampler
from .spec import EstimateSpec, LoadCase, LoadSpec, Lookups
from .strategies import Strategy, get_strategy, table_name

log = logging.getLogger(__name__)

MAX_LOOKUP_KEYS = 100_000
# Per-repetition figures whose median is the load's figure in summary.json.
FIGURES = ("rows", "seconds", "rows_per_s", *TIMINGS, "verify_seconds", "server_cpu_s", "job_cpu_s",
           "table_bytes", "table_bytes_final",
           "optimize_seconds", "optimize_elapsed_s", "lookups", "lookup_qps", "lookup_p50_s", "lookup_p99_s")


@dataclass
class _Load:
    """One load job's fixed parts, handed from step to step."""
    srv: object               # the started core.server.process.Server
    summary: dict
    v: Variant
    strategy: Strategy
    table: str
    files: list[Path]
    spec: LoadSpec
    path: Path                # the target's run directory


def run_load_index(spec: LoadSpec, target: StorageTarget, files: list, out_dir, case: LoadCase) -> dict:
    """Load ``files`` into a private server on ``target`` with ``case.strategy`` into a table
    of storage ``case.engine`` (its plugin loaded, its settings under ``load.settings``),
    verify, measure, as ``spec`` says. Writes trace.parquet, samples.parquet, intervals.parquet/.csv,
    phases.parquet (every row with its ``repetition``) and summary.json (the median of
    each figure over the repetitions, and every repetition's own figures under
    ``repetitions``) into ``out_dir``, which appears only on success (a previous
    ``out_dir`` is removed at the start). Returns the summary.
    """
    v, strategy, eng = get_variant(case.variant), get_strategy(case.strategy), get_engine(case.engine)
    target, path, options = target.name, target.path, spec.options
    if not strategy.supports(eng.name):
        raise LoadError(f"strategy {strategy.name} does not run on storage engine {eng.name}: "
                        f"{strategy.unsupported.get(eng.name)} (config keys load.strategies, load.engines)")
    files = [Path(f).absolute() for f in files]
    if not files:
        raise LoadError("no input files given")
    input_bytes = sum(f.stat().st_size for f in files)
    check_target(target, path)   # a usable directory now; its room once a resume's kept data is known
    table = table_name(v, strategy.name)
    summary = {"target": target, "variant": v.name, "engine": eng.name, "strategy": strategy.name,
               "table": f"{DATABASE}.{table}",
               "files": len(files), "input_bytes": input_bytes, "row_bytes": v.row_bytes,
               "in_file_order": strategy.in_file_order,
               "storage": describe_target(path),
               "options": options.as_dict(), "repetitions_requested": spec.repeats.min_n,
               "max_repetitions": spec.repeats.max_n if spec.repeats.adaptive else None,
               "repetition_limit_s": spec.repetition_limit_s}
    settings = {**eng.settings, **spec.settings}
    name = load_server(v.name, eng.name, strategy.name)
    state = None
    if strategy.resumable:  # an interrupted run of this same load is continued (load/ledger.py)
        key = load_key(files, v.name, strategy.name, table, options.as_dict(), settings)
        state = ResumeState.find(server_dir(path, name), key) or ResumeState(server_dir(path, name) / STATE, key)
    summary["time_limit_s"] = spec.time_limit_s if strategy.resumable else None
    # the run-level estimate's model (estimate.py), less what a resumed load already has there
    kept = dir_bytes(server_dir(path, name)) if state and state.in_progress else 0
    need = load_need(v.name, strategy.name, input_rows(files, input_bytes), input_bytes, settings)["need_bytes"]
    check_target(target, path, need_bytes=max(0, need - kept),
                 why=f"a {v.name}/{strategy.name} load" + (f", less the {kept / 2**20:.1f} MiB it has kept" if kept else ""))
    with staged_output(out_dir) as work:
        launch = dataclasses.replace(spec.launch, plugins=(eng.plugin,) if eng.plugin else ())
        data = Datadir(spec.keep_data, reuse=bool(state and state.in_progress), keep_on_failure=strategy.resumable)
        with private_server(target, path, name, settings, launch, data=data) as srv:
            _describe_server(srv, summary)
            runs = _repetitions(_Load(srv, summary, v, strategy, table, files, spec, Path(path)), state)
        summary["server"].update(timings=dict(srv.timings), ram=srv.ram, ram_peak=srv.ram_peak,
                                 page_cache=srv.page_cache_hold)
        kept = spec.repeats.kept(runs)
        _aggregate(summary, kept, runs[:len(runs) - len(kept)])
        _write_results(work, summary, kept, spec.interval_s)
    log.info("target %s: %s/%s: %d rows in %.1f s (median of %d; %.0f rows/s); results in %s", target, v.name,
             strategy.name, summary["rows"], summary["seconds"], summary["n"], summary["rows_per_s"] or 0, out_dir)
    return summary


def _repetitions(job: _Load, state: ResumeState | None) -> list[Repetition]:
    """``load.repetitions`` loads on one server (with ``load.max_repetitions``: those are a
    pilot, then as many as its spread asks, core/infra/jobs/repeat.py); the table is dropped
    and the server restarted between them. Stops early once a repetition took longer than
    ``load.repetition_limit_s`` (one stopped by ``load.time_limit_s`` is repeated too: its rows
    by the limit are a figure that needs its n). A resumed load (``state``) takes its finished
    repetitions as they were and continues the interrupted one; the pilot it kept sets the
    same number of loads as it did."""
    srv, summary, v, strategy, table = job.srv, job.summary, job.v, job.strategy, job.table
    runs = [repetition_from_doc(d) for d in state.completed] if state else []
    limit, repeats = job.spec.repetition_limit_s, job.spec.repeats
    while repeats.more(_rates(runs), sum(r.t1 - r.t0 for r in runs)):
        rep = len(runs)
        if repeats.adaptive and rep == repeats.min_n:
            log.info("target %s: %s/%s: the pilot's %d loads ask for %d more (rows/s within ±%g %%, at most %d "
                     "in all)", summary["target"], v.name, strategy.name, rep,
                     repeats.after(_rates(runs)), 100 * repeats.precision,
                     repeats.max_n)
        resuming = bool(state and state.resuming(rep))
        if rep and not resuming:
            _fresh_start(srv, table)
        if state and not resuming:
            state.begin(rep)
        figures = {"repetition": rep}
        outcome, sampler, t0, t1 = _load_and_measure(job, figures, resuming)
        runs.append(Repetition(rep, figures, outcome, sampler, t0, t1))
        if state:
            state.finish(runs[-1])
        log.info("target %s: %s/%s repetition %d: %.1f s%s", summary["target"], v.name, strategy.name, rep,
                 figures["seconds"], " (stopped at load.time_limit_s)" if figures["stopped"] else "")
        if limit is not None and figures["seconds"] > limit and repeats.more(_rates(runs), 0.0):
            log.info("target %s: %s/%s took %.1f s > load.repetition_limit_s %s: n=%d", summary["target"],
                     v.name, strategy.name, figures["seconds"], limit, len(runs))
            break
    return runs


def _rates(runs: list[Repetition]) -> list[float]:
    """What the pilot is made of: each repetition's rows/s (0 where it has none: the most runs)."""
    return [r.figures["rows_per_s"] or 0.0 for r in runs]


def _describe_server(srv, summary: dict) -> None:
    """The server's binary, version, settings and variables, before any repetition: a resumed
    load whose repetitions all finished before it was killed runs none, and still writes them."""
    conn = srv.connect()
    try:
        summary["server"] = {"binary": srv.binary, "version": srv.version, "settings": srv.settings,
                             "variables": variables(conn)}
    finally:
        conn.close()


def _fresh_start(srv, table: str):
    """Drop the table and restart the server: the next repetition starts with an empty pool."""
    execute_alone(srv, f"DROP TABLE IF EXISTS `{DATABASE}`.`{table}`")
    srv.stop()
    srv.start()


def _aggregate(summary: dict, runs: list[Repetition], pilot: list[Repetition]):
    """The load's figures: the median over the repetitions kept (checks: every one, the
    pilot's too, must pass), each kept repetition's own figures under ``repetitions`` and the
    pilot's under ``pilot`` (with adaptive repetitions: its spread set n, it is not judged)."""
    reps = [r.figures for r in runs]
    for k in FIGURES:
        vals = [r[k] for r in reps if r.get(k) is not None]
        summary[k] = float(np.median(vals)) if vals else None
    for k in ("table_bytes", "table_bytes_final"):   # bytes stay whole (MyRocks' differ between repetitions)
        summary[k] = None if summary[k] is None else int(round(summary[k]))
    summary["rows"] = reps[0]["rows"]
    summary["n"] = len(reps)
    every = reps + [r.figures for r in pilot]
    summary["checksum_ok"] = all(r["checksum_ok"] for r in every)
    summary["optimize_stopped"] = any(r.get("optimize_stopped") for r in reps)
    summary["stopped"] = any(r.get("stopped") for r in reps)
    for k, val in reps[0].items():   # settings-like values: the first kept repetition's
        if k != "repetition":
            summary.setdefault(k, val)
    summary["repetitions"] = reps
    summary["pilot"] = [r.figures for r in pilot]


def _load_and_measure(job: _Load, figures: dict, resuming: bool = False):
    """One repetition on a started server: fills ``figures``, returns what the result files are
    made of: (outcome, sampler, t0, t1)."""
    srv, summary, v, strategy, table, spec = job.srv, job.summary, job.v, job.strategy, job.table, job.spec
    options = spec.options
    conn = srv.connect()
    try:
        eng = get_engine(summary["engine"])
        load = LoadJob(srv, conn, DATABASE, table, v, job.files, options, srv.tmpdir, eng)
        with _full_disk_named(summary["target"], srv):
            conn.cursor().execute(f"CREATE DATABASE IF NOT EXISTS `{DATABASE}`")
            _prepare_table(load, strategy, figures, resuming)
        load.watch = LoadWatch(len(load.files), summary["time_limit_s"], list(load.earlier[0]))
        files_glob = eng.table_files.format(database=DATABASE, table=table)
        sampler = Sampler(srv, device=device_for(job.path), table_glob=files_glob,
                          interval_s=spec.sample_interval_s, watch=load.watch,
                          flush_sql=read_sql("index", eng.flush_sql) if eng.flush_sql else None)
        log.info("target %s: loading %d files with strategy %s (%s)", summary["target"], len(load.todo), strategy.name,
                 options.as_dict())
        with sampler:
            t0 = load.clock()
            with _full_disk_named(summary["target"], srv):
                outcome = strategy.load(load)
            t1 = time.time()
        verified = _verify(conn, v, table, outcome, summary["target"])
        table_bytes = sampler.settled_table_bytes(conn)
        table_files = files_figures(conn, eng)
        after = _optimize_and_lookups(job, conn, outcome.infos)
        table_bytes_final = sampler.settled_table_bytes(conn)
    finally:
        conn.close()
    rows = verified["rows"]
    pool = int(summary["server"]["variables"].get(eng.cache_variable) or 0)
    figures.update({
        "stopped": bool(outcome.extra.get("stopped")), "files_loaded": len(outcome.infos),
        "table_pool_ratio": table_bytes / pool if pool else None,
        "rows": rows, "seconds": t1 - t0, "rows_per_s": rows / (t1 - t0) if t1 > t0 else None,
        **{k: outcome.timings.get(k, 0.0) for k in TIMINGS}, "verify_seconds": verified["verify_seconds"],
        "connections": outcome.extra.get("connections", 1),
        "transaction_rows": outcome.extra.get("transaction_rows"),
        "strategy_details": {k: val for k, val in outcome.extra.items()
                             if k not in ("connections", "transaction_rows")},
        "server_cpu_s": sampler.server_cpu_s, "job_cpu_s": sampler.job_cpu_s, "host_cpus": len(os.sched_getaffinity(0)),
        "table_bytes": table_bytes, "table_bytes_final": table_bytes_final, "table_files": table_files,
        **{k: verified[k] for k in ("checksum_input", "checksum_table", "checksum_ok")}, **after,
    })
    return outcome, sampler, t0, t1


def _prepare_table(job: LoadJob, strategy: Strategy, figures: dict, resuming: bool):
    """Creates the strategy's table, or, resuming, finds what the interrupted run committed
    (the ledger); gives file-by-file strategies their ledger. A stop before the table was made
    (the server killed as it came up) left nothing to resume: the table is made and the
    repetition starts at its first file."""
    made = not resuming or not _has_table(job.conn, job.table)
    if made:
        _new_table(job, strategy)
    if not strategy.resumable:
        return
    job.ledger = Ledger(DATABASE, job.table, figures["repetition"], job.files)
    job.ledger.create(job.conn)
    if resuming and made:
        job.ledger.clear(job.conn)
        figures["resumed_at_file"] = 0
        log.info("resuming after 0 of %d committed files: the table was not made before the stop", len(job.files))
    elif resuming:
        job.earlier = job.ledger.committed(job.conn, job.variant)
        if not job.engine.transactional and not _table_is_ledger(job, figures):
            job.earlier = ((), ())
            _new_table(job, strategy)
            job.ledger.clear(job.conn)
        figures["resumed_at_file"] = len(job.earlier[1])
        log.info("resuming after %d of %d committed files", len(job.earlier[1]), len(job.files))
    else:
        job.ledger.clear(job.conn)


@contextlib.contextmanager
def _full_disk_named(target: str, srv):
    """A statement that failed because the target is full (the server's log or its own message
    says errno 28, or a handler's 135), or a file of the load's own that could not be written
    there (a sorted chunk), fails as that: one LoadError whose first line says so, naming where,
    and the server's half-made data is not kept for a resume."""
    try:
        yield
    except (LoadError, mysql.connector.Error, OSError) as exc:
        own = isinstance(exc, OSError) and exc.filename
        full = out_of_space(target, Path(exc.filename).parent if own else srv.datadir,
                            *(() if own else (srv.error_log,)), said=str(exc), who="the load" if own else "the server")
        if full:
            raise LoadError(f"{full}; loading failed: {exc}") from exc
        raise


def _new_table(job: LoadJob, strategy: Strategy) -> None:
    job.conn.cursor().execute(f"DROP TABLE IF EXISTS `{DATABASE}`.`{job.table}`")
    job.conn.cursor().execute(strategy.table_ddl(job.variant, DATABASE, job.table, job.engine))


def _has_table(conn, table: str) -> bool:
    cur = conn.cursor()
    cur.execute("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = %s AND table_name = %s",
                (DATABASE, table))
    return cur.fetchone()[0] > 0


def _table_is_ledger(job: LoadJob, figures: dict) -> bool:
    """A non-transactional table (MyISAM) keeps the rows of a file that was loading when the
    load stopped, which the ledger does not name, and may be left marked crashed. It is
    resumed only when its row count and checksum are exactly the ledger's files'; otherwise
    the repetition starts again from an empty table (``figures["resume_discarded"]`` says why)."""
    infos = job.earlier[1]
    want = (sum(i.rows for i in infos), sum(i.checksum for i in infos))
    try:
        have = table_checksum(job.conn, job.variant, job.table)
    except mysql.connector.Error as exc:
        why = f"the table cannot be read ({exc.msg})"
    else:
        if have == want:
            return True
        why = (f"the table holds {have[0]} rows (checksum {have[1]}), the ledger's {len(infos)} files "
               f"{want[0]} (checksum {want[1]}): rows of a file in flight that {job.engine.sql_name} cannot "
               f"roll back")
    figures["resume_discarded"] = why
    log.warning("not resuming %s.%s: %s; loading again from an empty table", DATABASE, job.table, why)
    return False


def _verify(conn, v: Variant, table: str, outcome: Outcome, target: str) -> dict:
    """Row count and checksum of the table against the input and the rows reported
    loaded; LoadError naming every difference when they disagree."""
    rows = sum(i.rows for i in outcome.infos)
    loaded = outcome.trace[-1]["cumulative_rows"] if outcome.trace else 0
    v0 = time.time()
    n_table, sum_table = table_checksum(conn, v, table)
    verify_s = time.time() - v0
    sum_input = sum(i.checksum for i in outcome.infos)
    differences = [what for what, same in (("row count", n_table == rows), ("checksum", sum_table == sum_input),
                                           ("rows reported loaded", loaded == rows)) if not same]
    result = {"rows": rows, "verify_seconds": verify_s, "checksum_input": sum_input,
              "checksum_table": int(sum_table), "checksum_ok": not differences}
    if differences:
        raise LoadError(f"table {DATABASE}.{table} on target {target} holds {n_table} rows with checksum "
                        f"{sum_table} ({loaded} rows reported loaded), the input has {rows} rows with "
                        f"checksum {sum_input}: checksum_ok is false ({', '.join(differences)} differ)")
    return result


def _optimize_and_lookups(job: _Load, conn, infos: list) -> dict:
    limit, look = job.spec.optimize_limit_s, job.spec.lookups
    opt = {"optimize_seconds": None, "optimize_stopped": False, "optimize_skipped": True}
    if limit and limit > 0:
        opt = {**optimize_table(job.srv, conn, job.table, limit), "optimize_skipped": False}
    keys = pick_lookup_keys(infos, min(look.count, MAX_LOOKUP_KEYS), job.v)
    lookups = lookup_benchmark(job.srv, job.table, job.v, keys, look.threads, look.count, look.seconds)
    return {**opt, "optimize_limit_s": limit, **lookups}


def _write_table(rows: list[dict], path: Path):
    pq.write_table(pa.Table.from_pylist(rows), path)


def _write_results(work: Path, summary: dict, runs: list[Repetition], interval_s: float | None):
    """Per repetition: the load-rate table (intervals with their phase), the phases, trace
    and samples, each row with its ``repetition``; then summary.json."""
    intervals, phases, trace, samples = [], [], [], []
    for run in runs:
        t0, t1, rep = run.t0, run.t1, {"repetition": run.rep}
        interval = interval_s or default_interval(t1 - t0)
        iv = interval_table(run.outcome.trace, run.sampler.rows, t0, t1, interval)
        for r in iv:
            r["phase"] = phase_at(run.outcome.phases, t0 + r["end_s"] - 1e-6)
        run.figures["interval_s"] = interval
        run.figures["phases"] = [{**p, "start_s": p["start"] - t0, "end_s": p["end"] - t0}
                                 for p in run.outcome.phases]
        intervals += [{**r, **rep} for r in iv]
        phases += [{**p, **rep} for p in run.figures["phases"]
                   or [{"phase": None, "start": t0, "end": t1, "seconds": 0.0}]]
        trace += [{**r, **rep} for r in run.outcome.trace]
        samples += [{**r, **rep} for r in run.sampler.rows]
    summary["interval_s"] = runs[0].figures["interval_s"]
    summary["phases"] = runs[0].figures["phases"]
    _write_table(trace, work / "trace.parquet")
    _write_table(samples, work / "samples.parquet")
    _write_table(intervals, work / "intervals.parquet")
    _write_table(phases, work / "phases.parquet")
    pacsv.write_csv(pa.Table.from_pylist(intervals), work / "intervals.csv")
    (work / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")


def calibrate(run: EstimateSpec, spec: LoadSpec, target: str, results: Path, files: int,
              out_dir: Path) -> list[dict]:
    """Time of the steady strategies of the ``run``, from a short load with ``spec``'s knobs
    on ``target``: the first ``files`` input files of each variant loaded once (no OPTIMIZE,
    few lookups), the rate extrapolated to all rows. First-order: a sort's n log n and a
    cache that stops holding the table make the real load slower."""
    rows = run.rows
    spec = spec.replace(repeats=Repeats(1, 1, 0.0, None), optimize_limit_s=0,
                        lookups=Lookups(spec.lookups.threads, 100, None))
    out = []
    for v in run.loads.variants:
        part = list_input(results / "index" / get_variant(v).folder)[:files]
        for e, s in run.loads.pairs():
            if s in STEADY:
                done = run_load_index(spec, StorageTarget(target, run.targets[target].path / "calibrate"), part,
                                      out_dir / f"{v}-{e}-{s}", LoadCase(v, s, e))
                rate = done["rows_per_s"] or 0
                out.append({"job": f"load {v}/{e}/{s}", "target": target, "calibration_files": len(part),
                            "calibration_rows": done["rows"], "rows_per_s": rate,
                            "seconds": rows / rate if rate else None})
    return out
