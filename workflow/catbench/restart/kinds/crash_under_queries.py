"""Kind ``crash-under-queries``: SIGKILL the server while HV-style queries (the mini-suite
in ``resources/sql/restart/hv_*.sql``) run from concurrent connections; after the restart
every answer, and the table's checksum, must equal the answer before the crash. The kill
point (a seeded delay scaled by the suite's own duration) lands mid-query.
"""

from __future__ import annotations

import random
import threading
import time
import zlib

import mysql.connector

from ...core.index.table import DATABASE
from ...core.infra.resources import read_sql
from ..headlines import Headline, OverBaseline
from ..phases import diff, recovery, row, start_phases
from ..probe import innodb_status, observed_start
from ..state import TABLE

KIND = "crash-under-queries"
ORDER = 2   # its place in the run order (kinds/__init__.py)
HEADLINES = (Headline("crash_under_queries_first_answer_s", "process_start_to_first_answer"),
             Headline("crash_under_queries_all_answers_s", "process_start_to_all_answers_equal"))
# the goal: a crash under queries answers within twice a clean restart's time
OVER_BASELINE = (OverBaseline("crash_over_clean_ratio", "crash_under_queries_first_answer_s",
                              goal="goal_crash_within_2x_clean"),)
HV_NAMES = ("count", "chunk_counts", "sums")


def hv_queries(run) -> dict[str, str]:
    """The HV mini-suite on the restart table, name -> SQL."""
    return {name: read_sql("restart", f"hv_{name}.sql").format(database=DATABASE, table=TABLE, key=run.v.key)
            for name in HV_NAMES}


def _fetch(conn, sql: str) -> list[tuple]:
    cur = conn.cursor()
    cur.execute(sql)
    return [tuple(int(x) if isinstance(x, int) else str(x) for x in r) for r in cur.fetchall()]


def _answers(conn, queries: dict) -> dict:
    return {name: _fetch(conn, sql) for name, sql in queries.items()}


def _digest(answers: dict) -> dict:
    return {k: {"rows": len(v), "crc32": zlib.crc32(repr(v).encode())} for k, v in answers.items()}


class _QueryLoad:
    """``threads`` connections running the suite round-robin until the kill (or ``stop``),
    each answer compared with ``before``."""

    def __init__(self, run, queries: dict, before: dict):
        self.run, self.queries, self.before = run, queries, before
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.stats = {"completed": 0, "wrong": [], "errors": 0}
        self.threads = [threading.Thread(target=self._worker, args=(w,), daemon=True)
                        for w in range(run.spec.query_threads)]

    def start(self):
        for th in self.threads:
            th.start()

    def halt(self):
        self.stop.set()
        for th in self.threads:
            th.join(30)

    def completed(self) -> int:
        with self.lock:
            return self.stats["completed"]

    def _worker(self, w: int):
        try:
            c = self.run.srv.connect()
        except Exception:  # noqa: BLE001 - the kill may come first
            return
        names = list(self.queries)
        i = w
        try:
            while not self.stop.is_set():
                name = names[i % len(names)]
                i += 1
                try:
                    got = _fetch(c, self.queries[name])
                except mysql.connector.Error:
                    with self.lock:
                        self.stats["errors"] += 1
                    return
                with self.lock:
                    self.stats["completed"] += 1
                    if got != self.before[name]:
                        self.stats["wrong"].append(name)
        finally:
            try:
                c.close()
            except Exception:  # noqa: BLE001
                pass


def _kill_under_load(run, rng: random.Random, queries: dict, before: dict, query_s: float) -> dict:
    """Start the query load, SIGKILL the server after a seeded delay; what was seen then."""
    load = _QueryLoad(run, queries, before)
    load.start()
    delay = rng.uniform(0.3, 1.0) + rng.uniform(0.5, 1.5) * query_s
    time.sleep(delay)
    status = innodb_status(run.conn_())
    completed = load.completed()
    t_kill = time.time()
    run.srv.kill()
    run.drop_conn()
    load.halt()
    return {"delay": delay, "status": status, "completed": completed, "t_kill": t_kill,
            "wrong": load.stats["wrong"]}


def run(run, rep: int) -> tuple[list[dict], dict]:
    fresh = run.fresh_load
    details = {"repetition": rep, **run.ensure_full()}
    fresh = fresh or bool(details.get("initial_load_s"))
    run.fresh_load = False
    rng = random.Random(run.seed * 104729 + rep)
    run.set_buffer_pool("off")
    queries = hv_queries(run)
    t = time.time()
    before = _answers(run.conn_(), queries)
    query_s = time.time() - t
    n_before, sum_before = run.checksum()
    kill = _kill_under_load(run, rng, queries, before, query_s)
    status = kill["status"]
    obs = observed_start(run, "SIGKILL under HV queries")
    obs["watcher"].stop()
    phases, det = start_phases(obs)
    rphases, rdet = recovery(obs, status)
    rdet.pop("_rollback_events")
    after = _answers(run.conn_(), queries)
    t_all = time.time()
    n_after, sum_after = run.checksum()
    equal = after == before and (n_after, sum_after) == (n_before, sum_before)
    common = dict(rows_expected=n_before, rows_found=n_after, rows_lost=max(0, n_before - n_after),
                  buffer_pool_load=False)
    rows = [row(run, KIND, rep, p, s, c, **common) for p, s, c in phases]
    rows += [row(run, KIND, rep, p, s, c, redo_bytes=rdet["redo_bytes"], recovery_MBps=rdet["recovery_MBps"],
                 **common) for p, s, c in rphases]
    rows.append(row(run, KIND, rep, "process_start_to_all_answers_equal",
                    diff(obs["t_spawn"], t_all) if equal else None, "client", **common))
    total = obs["t_answer"] - obs["t_spawn"]
    clean = run.clean_first_answer_s.get("off")
    lsn, ckpt = status.get("lsn"), status.get("checkpoint_lsn")
    details.update({**det, "recovery": rdet, "kill_after_s": kill["delay"], "killed_at": kill["t_kill"],
                    "checkpoint_age_at_kill_bytes": (lsn - ckpt) if lsn is not None and ckpt is not None else None,
                    "table_state": "freshly loaded" if fresh else "settled (restarted before)",
                    "queries_completed_before_kill": kill["completed"], "query_threads": run.spec.query_threads,
                    "wrong_answers_during_run": kill["wrong"][:10], "answers_before": _digest(before),
                    "answers_after": _digest(after), "answers_equal": equal,
                    "crash_to_clean_first_answer_ratio": (total / clean) if clean else None})
    if not equal:
        details["failed"] = ("after a crash under queries the answers differ from before: " + ", ".join(
            k for k in before if before[k] != after.get(k)) + (" (checksum differs)" if (n_after, sum_after) != (
                n_before, sum_before) else ""))
    return rows, details
