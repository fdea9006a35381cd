"""Kind ``crash-during-load``: load a seeded random number of files (one autocommitted
LOAD DATA each), SIGKILL the server while the next file is mid-load, restart and time
crash recovery from the error log (recovery start, redo scan, redo apply, rollback of the
incomplete transaction, ready) with the redo volume and rate. The table must then hold
exactly the committed files (COUNT(*) and the order-independent checksum); the load
resumes from the first uncommitted file and must end equal to a clean load.
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from pathlib import Path

import psutil

from ...core.index.input import FileInfo
from ...core.index.table import DATABASE, IndexDestination, create_table, load_file
from ...core.infra.resources import read_sql
from .. import errorlog
from ..headlines import Headline, OverBaseline
from ..phases import diff, p50, recovery, row, start_phases, wait_rollback
from ..probe import global_status, observed_start, pace_mark
from ..state import TABLE

log = logging.getLogger(__name__)

KIND = "crash-during-load"
ORDER = 1   # its place in the run order (kinds/__init__.py)
HEADLINES = (Headline("crash_during_load_first_answer_s", "process_start_to_first_answer"),
             Headline("crash_during_load_recovery_s", "crash_recovery"))
OVER_BASELINE = (OverBaseline("crash_during_load_over_clean_ratio", "crash_during_load_first_answer_s"),)
REDO_MEDIAN = True   # summary.json redo_bytes_median: the redo a crash mid-load leaves


def _corrupt_redo(run):
    """Fault drill: overwrite the redo log header + checkpoint blocks with garbage."""
    lf = run.srv.datadir / "ib_logfile0"
    with open(lf, "r+b") as f:
        f.write(random.Random(run.seed).randbytes(12288))
    log.warning("target %s: fault drill: corrupted the first 12 KiB of %s", run.target, lf)


def _diagnose(run, committed: list[FileInfo], inflight: FileInfo | None) -> dict:
    """Which rows of the committed files are missing, and which rows do not belong to them."""
    conn = run.conn_()
    cur = conn.cursor()
    chk = f"{TABLE}_expected"
    create_table(conn, run.v, chk)
    for info in committed:
        load_file(conn, IndexDestination(chk, run.v, (info.path,)), info.path, info.rows)
    names = dict(database=DATABASE, table=TABLE, expected=chk, key=run.v.key)
    cur.execute(read_sql("restart", "diagnose_missing.sql").format(**names))
    missing = int(cur.fetchone()[0])
    cur.execute(read_sql("restart", "diagnose_extra.sql").format(**names))
    extra = int(cur.fetchone()[0])
    cur.execute(f"DROP TABLE `{DATABASE}`.`{chk}`")
    return {"missing_committed_rows": missing, "rows_not_from_committed_files": extra,
            "inflight_file_rows": inflight.rows if inflight else None}


def _first_row(path: Path, v) -> tuple:
    with open(path, "rb") as f:
        k, c, s = f.readline().rstrip(b"\n").split(b"\t")
    return (v.parse_key(k), int(c), int(s))


def _load_in_thread(run, info: FileInfo, result: dict) -> threading.Thread:
    """LOAD DATA of ``info`` on its own connection; ``result`` gets t_start, acked or error."""
    def load_next():
        try:
            c = run.srv.connect()
        except Exception as exc:  # noqa: BLE001
            result["error"] = str(exc)
            return
        try:
            result["t_start"] = time.time()
            load_file(c, IndexDestination(TABLE, run.v, (info.path,)), info.path, info.rows)
            result["acked"] = time.time()
        except Exception as exc:  # noqa: BLE001 - the kill lands here
            result["error"] = str(exc)[:200]
        finally:
            try:
                c.close()
            except Exception:  # noqa: BLE001
                pass

    th = threading.Thread(target=load_next, daemon=True)
    th.start()
    return th


def _kill_mid_load(run, acked: int, frac: float, median: float) -> dict:
    """Load file ``acked`` and SIGKILL the server ``frac`` x the median file time into it;
    a file that finishes first is committed and the next one is tried, killing sooner."""
    n = len(run.infos)
    attempts = []
    while True:
        inflight = run.infos[acked]
        status = pace_mark(run.conn_())
        result: dict = {}
        th = _load_in_thread(run, inflight, result)
        while "t_start" not in result and th.is_alive():
            time.sleep(0.0005)
        time.sleep(max(0.0005, frac * median))
        if not th.is_alive() and "acked" in result and acked + 1 < n:
            # the file finished before the kill point: it is committed; try the next one,
            # killing sooner (a busy machine makes file load times vary)
            attempts.append({"file": acked, "acked_before_kill": True})
            acked += 1
            frac *= 0.5
            continue
        break
    t_kill = time.time()
    run.srv.kill()
    run.drop_conn()
    th.join(30)
    inflight_acked = "acked" in result
    if inflight_acked:  # the OK reached us just before the kill
        acked += 1
        inflight = run.infos[acked] if acked < n else None
    return {"acked": acked, "inflight": inflight, "inflight_acked": inflight_acked, "status": status,
            "attempts": attempts, "t_kill": t_kill, "t_start": result.get("t_start")}


def _pace(a: dict, b: dict) -> dict:
    """The load's pace up to the file in flight: redo written and pages the page cleaners
    flushed a second, and the checkpoint age it left (predict/restarts: the age's regime)."""
    dt = max(1e-9, b["t"] - a["t"])
    redo = (b["lsn"] - a["lsn"]) if a.get("lsn") is not None and b.get("lsn") is not None else None
    age = (b["lsn"] - b["checkpoint_lsn"]) if b.get("lsn") is not None and b.get("checkpoint_lsn") is not None else None
    return {"seconds": dt, "redo_bytes": redo, "redo_Bps": redo / dt if redo is not None else None,
            "pages_flushed": b["pages_flushed"] - a["pages_flushed"],
            "pages_flushed_per_s": (b["pages_flushed"] - a["pages_flushed"]) / dt, "checkpoint_age": age}


def _verify(run, committed: list[FileInfo], inflight: FileInfo | None) -> dict:
    """The recovered table against the committed files (and the in-flight one)."""
    rows_expected = sum(i.rows for i in committed)
    sum_expected = sum(i.checksum for i in committed)
    n_found, s_found = run.checksum()
    outcome = None
    if (n_found, s_found) == (rows_expected, sum_expected):
        outcome = "rolled_back" if inflight else "no_inflight_file"
    elif inflight and (n_found, s_found) == (rows_expected + inflight.rows, sum_expected + inflight.checksum):
        outcome = "committed_before_kill_unacknowledged"
    diag = None
    if outcome is None:
        diag = _diagnose(run, committed, inflight)
        rows_lost = diag["missing_committed_rows"]
    else:
        rows_lost = 0
    return {"outcome": outcome, "diagnosis": diag, "rows_expected": rows_expected, "sum_expected": sum_expected,
            "n_found": n_found, "s_found": s_found, "rows_lost": rows_lost, "rows_found": rows_expected - rows_lost}


def _resume(run, first_missing: int) -> tuple[float, tuple[int, int], bool, int]:
    """Load the files from ``first_missing`` on; seconds, final checksum, equal to clean, and
    the whole table's pages in the pool (as the clean kind's settle reads them: the data a
    crash-only study's rungs hold, predict/restarts/runs.py)."""
    t = time.time()
    run.load_files(run.infos[first_missing:], [i.path for i in run.infos[:first_missing]])
    resume_s = time.time() - t
    final = run.checksum()
    pages = int(global_status(run.conn_(), "Innodb_buffer_pool_pages_data") or 0)
    resumed_ok = final == (run.total_rows, run.total_sum)
    run.loaded = run.fresh_load = resumed_ok
    return resume_s, final, resumed_ok, pages


def _rows(run, rep: int, phases, recovered: tuple, rb: dict, rb_events, ver: dict, resume_s) -> list[dict]:
    """The rows of one crash during a load; ``recovered``: the recovery's (phases, detail)."""
    (rb0, rb1), (rphases, rdet) = rb_events, recovered
    common = dict(rows_expected=ver["rows_expected"], rows_found=ver["rows_found"], rows_lost=ver["rows_lost"],
                  buffer_pool_load=False)
    rows = [row(run, KIND, rep, p, s, c, **common) for p, s, c in phases]
    rows += [row(run, KIND, rep, p, s, c, redo_bytes=rdet["redo_bytes"], recovery_MBps=rdet["recovery_MBps"],
                 **common) for p, s, c in rphases]
    rows.append(row(run, KIND, rep, "rollback", diff(rb0.seen if rb0 else None, rb1.seen if rb1 else None),
                    "log-observed", **common))
    rows.append(row(run, KIND, rep, "process_start_to_rollback_done", rb["client_s"], "client", **common))
    rows.append(row(run, KIND, rep, "resume_load", resume_s, "client", **common))
    return rows


def _failure(run, acked: int, ver: dict, first_missing: int, final, resumed_ok) -> str | None:
    if ver["outcome"] is None:
        diag = ver["diagnosis"]
        return (f"after a crash during load the table holds {ver['n_found']} rows (checksum {ver['s_found']}); "
                f"the {acked} committed files have {ver['rows_expected']} rows (checksum {ver['sum_expected']}): "
                f"{diag['missing_committed_rows']} committed rows lost, "
                f"{diag['rows_not_from_committed_files']} rows not from committed files "
                f"(partial in-flight file)")
    if not resumed_ok:
        return (f"resuming the load from file {first_missing} ended with {final[0]} rows "
                f"(checksum {final[1]}), a clean load has {run.total_rows} ({run.total_sum})")
    return None


def _recover(run, acked: int, probe_key, status: dict) -> tuple:
    """Restart after the kill, wait for the rollback; (obs, rollback, phases, detail...)."""
    obs = observed_start(run, f"SIGKILL during load (after {acked} committed files)", probe_key)
    try:
        rb = wait_rollback(run, obs["t_spawn"], run.spec.warm.timeout_s + 60, obs["watcher"])
        if errorlog.first(list(obs["events"]), "rollback_start") is not None:
            obs["watcher"].wait_for("rollback_done", 2)
    finally:
        obs["watcher"].stop()
    phases, det = start_phases(obs)
    rphases, rdet = recovery(obs, status)
    rdet["rss_bytes"] = _rss(run)    # the memory recovery filled (the model prices its first touch)
    return obs, rb, phases, det, rphases, rdet


def _rss(run) -> int | None:
    try:
        return psutil.Process(run.srv.pid).memory_info().rss
    except (psutil.Error, TypeError):
        return None


def run(run, rep: int) -> tuple[list[dict], dict]:
    rng = random.Random(run.seed * 1_000_003 + rep)
    n = len(run.infos)
    run.set_buffer_pool("off")
    if not run.keys:
        run.pick_keys()
    create_table(run.conn_(), run.v, TABLE)
    run.loaded = False
    lo, hi = run.spec.crash_point
    first = max(1, math.ceil(lo * (n - 1)))     # a range narrower than a file holds one file
    k = rng.randint(first, max(first, math.floor(hi * (n - 1)))) if n > 1 else 0
    frac = rng.uniform(0.2, 0.8)
    details = {"repetition": rep, "files": n, "planned_committed_files": k, "kill_fraction": frac}
    start = pace_mark(run.conn_())
    median = p50(run.load_files(run.infos[:k], [])) or 0.01
    kill = _kill_mid_load(run, k, frac, median)
    details["load_pace"] = _pace(start, kill["status"])
    acked, inflight = kill["acked"], kill["inflight"]
    committed = run.infos[:acked]
    details.update({"committed_files": acked, "inflight_file": str(inflight.path) if inflight else None,
                    "inflight_acknowledged": kill["inflight_acked"], "retries": kill["attempts"],
                    "median_file_load_s": median, "killed_at": kill["t_kill"],
                    "inflight_started_before_kill_s": (kill["t_kill"] - kill["t_start"])
                    if kill["t_start"] is not None else None})
    if run.fault == "corrupt-redo":
        _corrupt_redo(run)
    probe_key = _first_row(committed[0].path, run.v) if committed else None
    obs, rb, phases, det, rphases, rdet = _recover(run, acked, probe_key, kill["status"])
    rb0, rb1 = rdet.pop("_rollback_events")
    ver = _verify(run, committed, inflight)
    outcome = ver["outcome"]
    first_missing = acked + (1 if outcome == "committed_before_kill_unacknowledged" else 0)
    resume_s, final, resumed_ok, pages = _resume(run, first_missing) if outcome is not None else (None,) * 4
    rows = _rows(run, rep, phases, (rphases, rdet), rb, (rb0, rb1), ver, resume_s)
    details.update({**det, "recovery": rdet, "rollback": {**rb, "log_done": rb1.as_dict(obs["t_spawn"]) if rb1
                                                              else None},
                    "outcome": outcome, "diagnosis": ver["diagnosis"], "checksum_expected": ver["sum_expected"],
                    "rows_in_table": ver["n_found"], "checksum_in_table": ver["s_found"],
                    "resumed_from_file": first_missing if outcome else None,
                    "final_rows": final[0] if final else None, "final_checksum": final[1] if final else None,
                    "data_pages_after_resume": pages,
                    "clean_checksum": run.total_sum, "final_equals_clean": resumed_ok})
    failed = _failure(run, acked, ver, first_missing, final, resumed_ok)
    if failed:
        details["failed"] = failed
    return rows, details
