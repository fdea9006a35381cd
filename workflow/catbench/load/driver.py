"""One index load, end to end: ``run_load_index`` checks the target's room, starts a
private server on it, creates the strategy's table, loads the validated input with the
strategy while the sampler records, verifies row count and checksum against the input,
runs OPTIMIZE TABLE under its limit and the point lookups, and writes the results.

Orchestration only: the strategies are in ``strategies.py``, the measurements in
``measure.py``; the server's life (owner lock, stale cleanup, stop on every exit path,
data removal) is ``core.session.private_server``'s, and the results directory appears
only complete (``core.files.staged_output``). Every knob comes from the ``load`` and
``server`` config sections, whose defaults are the schema's.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ..core.config import section
from ..core.files import staged_output
from ..core.index_input import pick_lookup_keys
from ..core.index_table import DATABASE, Variant, get_variant, table_checksum
from ..core.loaddata import LoadError
from ..core.server_tools import variables
from ..core.session import private_server
from ..core.targets import check_target, describe_target, device_for
from .job import TIMINGS, LoadJob, LoadOptions, Outcome
from .measure import (
    default_interval,
    interval_table,
    lookup_benchmark,
    optimize_table,
    phase_at,
)
from .sampler import Sampler
from .strategies import Strategy, get_strategy, table_name

log = logging.getLogger(__name__)

MAX_LOOKUP_KEYS = 100_000


def run_load_index(target: str, path, files: list, out_dir, variant: str = "seed", strategy: str = "sequential",
                   load: dict | None = None, server: dict | None = None, keep_data: bool = False) -> dict:
    """Load ``files`` into a private server on ``path`` with ``strategy``, verify, measure.

    ``load`` and ``server`` are (whole or partial) config sections; missing keys take the
    schema's defaults. Writes trace.parquet, samples.parquet, intervals.parquet/.csv,
    phases.parquet and summary.json into ``out_dir``, which appears only on success (a
    previous ``out_dir`` is removed at the start). Returns the summary.
    """
    v, plan = get_variant(variant), get_strategy(strategy)
    load, server = section("load", load), section("server", server)
    options = LoadOptions.from_config(load).check()
    files = [Path(f).absolute() for f in files]
    if not files:
        raise LoadError("no input files given")
    input_bytes = sum(f.stat().st_size for f in files)
    # InnoDB needs roughly 3x the TSV size for a CHAR(28) key index, plus redo logs; the
    # sorting strategies also keep a sorted copy and DuckDB's spill files on the target.
    check_target(target, path, need_bytes=(3 + plan.scratch_copies) * input_bytes + (512 << 20))
    table = table_name(v, strategy)
    summary = {"target": target, "variant": v.name, "strategy": strategy, "table": f"{DATABASE}.{table}",
               "files": len(files), "input_bytes": input_bytes, "storage": describe_target(path),
               "options": options.as_dict()}
    with staged_output(out_dir) as work:
        with private_server(target, path, f"load_index-{v.name}-{strategy}", server["settings"],
                            binary=server["binary"], tcp=server["tcp"], start_timeout=server["start_timeout_s"],
                            keep_data=keep_data) as srv:
            run = _load_and_measure(srv, summary, v, plan, table, files, options, load, path)
        summary["server"]["timings"] = dict(srv.timings)
        _write_results(work, summary, *run, load["interval_s"])
    log.info("target %s: %s/%s: %d rows in %.1f s (%.0f rows/s); results in %s", target, v.name, strategy,
             summary["rows"], summary["seconds"], summary["rows_per_s"] or 0, out_dir)
    return summary


def _load_and_measure(srv, summary: dict, v: Variant, plan: Strategy, table: str, files: list[Path],
                      options: LoadOptions, load: dict, path):
    """The body of a load on a started server; fills ``summary``, returns what the result
    files are made of: (outcome, sampler, t0, t1)."""
    conn = srv.connect()
    try:
        summary["server"] = {"binary": srv.binary, "version": srv.version, "settings": srv.settings,
                             "variables": variables(conn)}
        cur = conn.cursor()
        cur.execute(f"CREATE DATABASE IF NOT EXISTS `{DATABASE}`")
        cur.execute(plan.table_ddl(v, DATABASE, table))
        job = LoadJob(srv, conn, DATABASE, table, v, files, options, srv.tmpdir)
        sampler = Sampler(srv, device=device_for(path), table_glob=f"{DATABASE}/{table}*.ibd",
                          interval_s=load["sample_interval_s"])
        log.info("target %s: loading %d files with strategy %s (%s)", summary["target"], len(files), plan.name,
                 options.as_dict())
        with sampler:
            t0 = time.time()
            outcome = plan.load(job)
            t1 = time.time()
        verified = _verify(conn, v, table, outcome, summary["target"])
        table_bytes = sampler.table_bytes()
        after = _optimize_and_lookups(srv, conn, v, table, outcome.infos, load)
    finally:
        conn.close()
    rows = verified["rows"]
    summary.update({
        "rows": rows, "seconds": t1 - t0, "rows_per_s": rows / (t1 - t0) if t1 > t0 else None,
        **{k: outcome.timings.get(k, 0.0) for k in TIMINGS}, "verify_seconds": verified["verify_seconds"],
        "connections": outcome.extra.get("connections", 1),
        "transaction_rows": outcome.extra.get("transaction_rows"),
        "strategy_details": {k: val for k, val in outcome.extra.items()
                             if k not in ("connections", "transaction_rows")},
        "table_bytes": table_bytes, "table_bytes_final": sampler.table_bytes(),
        **{k: verified[k] for k in ("checksum_input", "checksum_table", "checksum_ok")}, **after,
    })
    return outcome, sampler, t0, t1


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


def _optimize_and_lookups(srv, conn, v: Variant, table: str, infos: list, load: dict) -> dict:
    limit = load["optimize_limit_s"]
    opt = {"optimize_seconds": None, "optimize_stopped": False, "optimize_skipped": True}
    if limit and limit > 0:
        opt = {**optimize_table(srv, conn, table, limit), "optimize_skipped": False}
    count = load["lookup_count"]
    keys = pick_lookup_keys(infos, min(count, MAX_LOOKUP_KEYS), v)
    lookups = lookup_benchmark(srv, table, v, keys, load["lookup_threads"], count, load["lookup_seconds"])
    return {**opt, "optimize_limit_s": limit, **lookups}


def _write_table(rows: list[dict], path: Path):
    pq.write_table(pa.Table.from_pylist(rows), path)


def _write_results(work: Path, summary: dict, outcome: Outcome, sampler: Sampler, t0: float, t1: float,
                   interval_s: float | None):
    """The load-rate table (intervals with their phase), the phases, trace, samples and summary."""
    interval = interval_s or default_interval(t1 - t0)
    intervals = interval_table(outcome.trace, sampler.rows, t0, t1, interval)
    for r in intervals:
        r["phase"] = phase_at(outcome.phases, t0 + r["end_s"] - 1e-6)
    summary["interval_s"] = interval
    summary["phases"] = [{**p, "start_s": p["start"] - t0, "end_s": p["end"] - t0} for p in outcome.phases]
    _write_table(outcome.trace, work / "trace.parquet")
    sampler.to_parquet(work / "samples.parquet")
    _write_table(intervals, work / "intervals.parquet")
    _write_table(summary["phases"] or [{"phase": None, "start": t0, "end": t1, "seconds": 0.0}],
                 work / "phases.parquet")
    pacsv.write_csv(pa.Table.from_pylist(intervals), work / "intervals.csv")
    (work / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
