"""Kind ``clean``: load the index, measure the warm p50 of random point lookups, shut
down cleanly, start again and time the phases: shutdown; process start -> storage engine
ready; engine ready -> accepting connections; -> first correct LV1 answer; -> lookups
warm again. Done with the InnoDB buffer-pool dump/load at shutdown/startup off and on;
the table must hold the same rows and checksum after each restart.
"""

from __future__ import annotations

import functools
import random

from .. import errorlog
from ..headlines import Headline
from ..phases import diff, row, start_phases
from ..probe import observed_start
from ..warm import settle, wait_warm, warm_p50

KIND = "clean"
ORDER = 0   # its place in the run order (kinds/__init__.py)
# summary.json: first answer and warm per buffer-pool mode; the first answer with it off is
# the baseline the crash kinds are compared with
HEADLINES = (Headline("clean_first_answer_s", "process_start_to_first_answer", by_mode=True),
             Headline("clean_warm_s", "process_start_to_warm", by_mode=True),
             Headline("clean_shutdown_s", "shutdown"))
BASELINE = "clean_first_answer_s"


def _shutdown(run, mode: str) -> tuple[float, list, object]:
    """Clean shutdown: seconds, the shutdown's error-log events and the dump file."""
    dump = run.srv.datadir / "ib_buffer_pool"
    run.drop_conn()
    offset = run.srv.error_log.stat().st_size
    stop_s = run.srv.stop()
    if stop_s is None:
        raise run.fail(f"clean shutdown (buffer pool {mode}) did not finish; the server was killed")
    shut_ev = errorlog.last_start(errorlog.parse_lines(run.srv.error_log.read_bytes()[offset:].decode(
        "utf-8", "replace")))
    return stop_s, shut_ev, dump


def _dump_pages(dump) -> int | None:
    """Pages the buffer-pool dump names (one ``space,page`` line each): what the load at
    startup reads."""
    try:
        with open(dump, "rb") as f:
            return sum(1 for line in f if line.strip())
    except FileNotFoundError:
        return None


def _restart_rows(at, mode: str, settled: dict, stop_s: float, phases: list, obs: dict, w: dict) -> list[dict]:
    """The rows of one clean restart; ``at(phase, seconds, clock)`` makes one."""
    rows = [at("flush_dirty_pages_before_shutdown", settled["seconds"], "client"), at("shutdown", stop_s, "client")]
    rows += [at(p, s, c) for p, s, c in phases]
    if mode == "on":
        rows.append(at("process_start_to_buffer_pool_loaded", diff(obs["t_spawn"], w["t_bp_loaded"]), "log-observed"))
    rows.append(at("first_answer_to_warm", diff(obs["t_answer"], w["t_warm"]), "client"))
    rows.append(at("process_start_to_warm", diff(obs["t_spawn"], w["t_warm"]), "client"))
    return rows


def _restart_once(run, rep: int, mode: str) -> tuple[list[dict], dict]:
    """One clean restart with the buffer-pool dump/load ``mode``: its rows and detail."""
    rng = random.Random(run.seed * 7919 + rep * 31 + (mode == "on"))
    run.set_buffer_pool(mode)
    n_before, sum_before = run.checksum()
    settled = settle(run)
    table_bytes = run.table_file_bytes()
    warm = warm_p50(run, rng)
    stop_s, shut_ev, dump = _shutdown(run, mode)
    if mode == "off":
        dump.unlink(missing_ok=True)
    obs = observed_start(run, f"a clean shutdown (buffer pool dump/load {mode})")
    phases, det = start_phases(obs)
    try:
        w = wait_warm(run, rng, warm, obs["t_answer"], mode == "on", obs["events"])
    finally:
        obs["watcher"].stop()
    if mode == "on" and w["t_bp_loaded"] is None:
        evs = errorlog.last_start(errorlog.parse_lines(run.srv.error_log.read_text(errors="replace")))
        e = errorlog.first(evs, "buffer_pool_load_done")
        w["buffer_pool_load_log_time"] = e.log_time if e else None
    n_after, sum_after = run.checksum()
    common = dict(rows_expected=n_before, rows_found=n_after, rows_lost=max(0, n_before - n_after),
                  buffer_pool_load=mode == "on")
    rows = _restart_rows(functools.partial(row, run, KIND, rep, **common), mode, settled, stop_s, phases, obs, w)
    if obs["t_answer"] is not None:
        run.clean_first_answer_s.setdefault(mode, obs["t_answer"] - obs["t_spawn"])
    sts = {e.name: e.log_time for e in shut_ev}
    detail = {
        **det, "warm_p50_before_s": warm, "warm": w, "settle": settled, "table_file_bytes": table_bytes,
        "shutdown": {"client_s": stop_s, "dump_file_bytes": dump.stat().st_size if dump.exists() else None,
                     "dump_pages": _dump_pages(dump),
                     "log_timestamp_s": diff(sts.get("shutdown_start"), sts.get("shutdown_done")),
                     "events": [e.as_dict() for e in shut_ev]},
        "checksum_before": sum_before, "checksum_after": sum_after,
        "checksum_equal": (n_before, sum_before) == (n_after, sum_after)}
    if not detail["checksum_equal"]:
        detail["failed"] = (f"after a clean restart (buffer pool {mode}) the table holds {n_after} rows "
                            f"(checksum {sum_after}), before it held {n_before} ({sum_before})")
    return rows, detail


def run(run, rep: int) -> tuple[list[dict], dict]:
    rows, details = [], {"repetition": rep, "modes": {}}
    for mode in run.spec.buffer_pool_modes:
        details.update(run.ensure_full())
        mode_rows, mode_detail = _restart_once(run, rep, mode)
        rows += mode_rows
        failed = mode_detail.pop("failed", None)
        details["modes"][mode] = mode_detail
        if failed:
            details["failed"] = failed
            break
    run.set_buffer_pool("off")
    return rows, details
