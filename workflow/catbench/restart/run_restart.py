"""Restart stage: how long a storage target takes to bring the secondary index back.

Per target, in the restart job's own private server (``core.server.session.private_server``,
datadir on the target), the kinds of ``kinds/`` (one module each) run in their order, each
``repetitions`` times (``clean``, ``crash-during-load``, ``crash-under-queries``, ...). Every
knob comes from the job's spec (spec.py, built from the config's ``restart`` and ``server``
sections at the command line); each kind gives its headline figures (headlines.py).

Clocks: ``client`` = this process's ``time.time()`` around the server (process spawned,
first successful connect, first correct answer); ``log-observed`` = when a marker line
appeared in the error log (polled every 2 ms, see errorlog.py); ``log-timestamp`` = the
server's own whole-second timestamps, kept in the detail for reference.

Output: ``<out_dir>/<kind>.json`` = {"rows": [...], "detail": [...], ...}, written
atomically; rows_lost > 0 or a wrong answer fails the stage after the file is written.
A server that does not come back fails with the target named and the error-log tail;
the evidence goes to ``<out_dir>/<kind>.error.json`` (``"interrupted": true`` there when
the job was stopped by a signal, not failed). The server's error log is copied to
``<out_dir>/server-error.log``. No server is ever left running.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path

import mysql.connector

from ..core.index.input import scan_file
from ..core.index.table import get_variant
from ..core.infra.settings import ServerError
from ..core.infra.targets import describe_target
from ..core.server.loaddata import LoadError
from ..core.server.session import Datadir, private_server, restart_server
from ..core.server.status import variables
from . import errorlog
from .headlines import summarize
from .memory import large_pages_short, lookup_curve, lookup_sizes, touch_curve
from .kinds import KINDS as KIND_FUNCS
from .kinds import MODULES
from .options import BUFFER_POOL_MODES, FAULTS, KINDS, RestartError
from .results import clear_results, write_json
from .spec import RestartSpec
from .state import RestartRun

__all__ = ["BUFFER_POOL_MODES", "FAULTS", "KINDS", "KIND_FUNCS", "RestartError", "RestartSpec", "run_restart"]

log = logging.getLogger(__name__)

_VARIABLES = ("version", "innodb_buffer_pool_size", "innodb_log_file_size", "innodb_flush_log_at_trx_commit",
              "innodb_flush_method", "innodb_doublewrite", "innodb_page_size", "datadir",
              "innodb_io_capacity", "innodb_io_capacity_max", "innodb_adaptive_flushing_lwm", "large_pages")


def _run_kinds(run: RestartRun, meta: dict, out_dir: Path, results: dict):
    """Every kind x repetition; ``<kind>.json`` per kind, RestartError after writing a failed one.
    With ``restart.max_repetitions`` a kind's first repetitions are a pilot whose spread alone
    sets how many follow (core/infra/jobs/repeat.py); its rows go under ``pilot``, not judged."""
    repeats = run.spec.repeats
    for kind in run.spec.kinds:
        run.kind = kind
        res = results[kind] = {**meta, "kind": kind, "rows": [], "detail": []}
        figures, elapsed = [], 0.0
        while repeats.more(figures, elapsed):
            rep = len(figures)
            log.info("target %s: restart kind %s, repetition %d", run.target, kind, rep)
            t0 = time.monotonic()
            rows, det = KIND_FUNCS[kind](run, rep)
            elapsed += time.monotonic() - t0
            res["rows"] += rows
            res["detail"].append(det)
            figures.append(_pilot_figure(kind, rows))
            lost = sum(r["rows_lost"] or 0 for r in rows)
            failed = det.get("failed")
            if lost and not failed:
                failed = f"{lost} rows lost"
            if failed:
                res["failed"] = failed
                write_json(out_dir / f"{kind}.json", res)
                raise RestartError(f"target {run.target}: restart kind {kind}, repetition {rep}: {failed}; "
                                   f"evidence in {out_dir / (kind + '.json')}")
            if repeats.adaptive and rep + 1 == repeats.min_n:
                log.info("target %s: restart kind %s: the pilot's %d repetitions ask for %d more (within ±%g %%, "
                         "at most %d in all)", run.target, kind, rep + 1, repeats.after(figures),
                         100 * repeats.precision, repeats.max_n)
        _keep_after_pilot(res, len(figures) - len(repeats.kept(figures)))
        write_json(out_dir / f"{kind}.json", res)


def _pilot_figure(kind: str, rows: list) -> tuple:
    """What a repetition gives the pilot: the seconds of the kind's first headline phase, one
    per buffer-pool mode it ran (NaN where the phase has no figure)."""
    phase, by = MODULES[kind].HEADLINES[0].phase, {}
    for r in rows:
        if r["phase"] == phase:
            by.setdefault(r["buffer_pool_load"], r["seconds"])
    ordered = [by[mode] for mode in sorted(by, key=str)]
    return tuple(float("nan") if v is None else v for v in ordered) or (float("nan"),)


def _keep_after_pilot(res: dict, pilot: int):
    """Moves the pilot's rows and detail (its first ``pilot`` repetitions) under ``pilot``."""
    if not pilot:
        return
    res["pilot"] = {"rows": [r for r in res["rows"] if r["repetition"] < pilot], "detail": res["detail"][:pilot]}
    res["rows"] = [r for r in res["rows"] if r["repetition"] >= pilot]
    res["detail"] = res["detail"][pilot:]


def _evidence(run: RestartRun, exc: BaseException, meta: dict, results: dict, out_dir: Path):
    """``<kind>.error.json`` for the kind that did not finish: the error and the log tail,
    or ``interrupted: true`` when a signal or Ctrl-C stopped the job."""
    kind = run.kind
    if not isinstance(exc, Exception):
        log.warning("target %s: restart interrupted (%s) during %s", run.target, type(exc).__name__,
                    f"kind {kind}" if kind else "setup")
    if kind is None or (out_dir / f"{kind}.json").exists():
        return
    res = results.get(kind, {**meta, "kind": kind, "rows": [], "detail": []})
    if isinstance(exc, Exception):
        write_json(out_dir / f"{kind}.error.json", {**res, "error": str(exc),
                                                      "error_log_tail": errorlog.tail(run.srv.error_log, 60)})
    else:
        write_json(out_dir / f"{kind}.error.json", {**res, "interrupted": True, "by": type(exc).__name__})


def _keep_error_log(srv, out_dir: Path):
    """The server's error log (every phase's evidence) beside the results."""
    if srv.running:  # its shutdown lines belong in the copy; the session still guards the stop
        try:
            srv.stop(timeout=120)
        except Exception as exc:  # noqa: BLE001 - must not hide the job's own error
            log.warning("target %s: stopping the server failed: %s", srv.name, exc)
    if srv.error_log.exists():
        try:
            shutil.copyfile(srv.error_log, out_dir / "server-error.log")
        except OSError as exc:
            log.warning("could not copy %s: %s", srv.error_log, exc)


def _meta(target, path, v, infos, input_bytes, spec: RestartSpec) -> dict:
    return {"target": target, "variant": v.name, "files": len(infos), "rows": sum(i.rows for i in infos),
            "input_bytes": input_bytes, "seed": spec.seed, "repetitions": spec.repeats.min_n,
            "max_repetitions": spec.repeats.max_n if spec.repeats.adaptive else None,
            "storage": describe_target(path),
            "options": {"lookup_count": spec.lookup_count, "warm_timeout_s": spec.warm.timeout_s,
                        "warm_factor": spec.warm.factor, "warm_batch": spec.warm.batch,
                        "buffer_pool_modes": list(spec.buffer_pool_modes),
                        "buffer_pool_dump_pct": spec.buffer_pool_dump_pct, "query_threads": spec.query_threads,
                        "fault": spec.fault}}


def run_restart(target: str, path, input_files, out_dir, spec: RestartSpec) -> dict:
    """Run the restart kinds on one target; writes ``<out_dir>/<kind>.json`` and summary.json.

    ``spec``: the job's knobs, the seed and the fault drill (spec.py). Returns {"summary": ...,
    kind: {"rows": [...], "detail": [...]}}. Raises RestartError (target named, error-log
    tail included) when the server does not come back, rows of committed files are lost
    or answers change; the evidence is written first.
    """
    v = get_variant(spec.variant)
    files = [Path(f).absolute() for f in input_files]
    if not files:
        raise LoadError("no input files given")
    input_bytes = sum(f.stat().st_size for f in files)
    out_dir = Path(out_dir)
    clear_results(out_dir, KINDS, ("server-error.log",))
    t0 = time.time()
    infos = [scan_file(f, v) for f in files]
    log.info("target %s: scanned %d files (%d rows) in %.1f s", target, len(infos), sum(i.rows for i in infos),
             time.time() - t0)
    short = large_pages_short(spec.settings)
    if short:
        raise RestartError(f"target {target}: {short}")
    with private_server(target, path, restart_server(v.name), spec.settings, spec.launch,
                        data=Datadir(keep=spec.keep_data), start=False,
                        data_bytes=3 * input_bytes) as srv:  # the table, its redo and the diagnosis copy
        run = RestartRun(target, srv, infos, v, spec)
        meta = _meta(target, path, v, infos, input_bytes, spec)  # the session made ``path``
        results: dict = {}
        try:
            if spec.memory_probe:   # before any server holds memory: the machine as the kinds find it
                meta["memory_touch"] = touch_curve(spec.memory_probe)
                log.info("target %s: first touch of fresh memory, s a 256 MiB chunk: %s", target,
                         meta["memory_touch"]["seconds"])
            if "crash-during-load" in spec.kinds and spec.lookup_probe:   # before any server holds the CPU's cache
                meta["page_lookup"] = lookup_curve(lookup_sizes(spec.lookup_probe))
                log.info("target %s: a lookup in an ordered map, ns at %s nodes: %s", target,
                         meta["page_lookup"]["nodes"], meta["page_lookup"]["ns"])
            run.setup()
            meta["server"] = {"binary": srv.binary, "version": srv.version, "settings": run.base_settings,
                              "variables": variables(run.conn_(), _VARIABLES)}
            _run_kinds(run, meta, out_dir, results)
            summary = {**meta, "kinds": list(results), "summary": summarize(results, MODULES)}
            write_json(out_dir / "summary.json", summary)
            run.drop_conn()
            srv.stop()
        except BaseException as exc:
            _evidence(run, exc, meta, results, out_dir)
            if isinstance(exc, (ServerError, mysql.connector.Error)) and not isinstance(exc, RestartError):
                raise run.fail(f"restart {f'kind {run.kind}' if run.kind else 'setup'} failed", exc) from exc
            raise
        finally:
            run.drop_conn()
            _keep_error_log(srv, out_dir)
    log.info("target %s: restart results in %s: %s", target, out_dir, json.dumps(summary["summary"], default=str))
    return {"summary": summary["summary"], **results}
