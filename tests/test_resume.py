"""Loads that survive hours, with real private servers: a file-by-file load killed at a
random file resumes from its ledger with the uninterrupted checksum, and load.time_limit_s
stops a load cleanly and reports it as stopped."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import mysql.connector
import pyarrow.parquet as pq
import pytest
from catbench.core.index.input import scan_file
from catbench.cli.storage import load_spec
from catbench.core.infra.targets import StorageTarget
from catbench.load.load_index import run_load_index
from catbench.load.spec import LoadCase
from support.indexinput import write_files
from support.text import line_with

pytestmark = pytest.mark.server
VENV_BIN = Path(sys.executable).parent


def _ledger_files(basedir: Path, table: str) -> int:
    try:
        conn = mysql.connector.connect(unix_socket=str(basedir / "mysqld.sock"), user="root",
                                       connection_timeout=2)
    except mysql.connector.Error:
        return 0
    try:
        cur = conn.cursor()
        cur.execute("SELECT COUNT(*) FROM secondary_index.catbench_ledger WHERE tbl = %s", (table,))
        return cur.fetchone()[0]
    except mysql.connector.Error:
        return 0
    finally:
        conn.close()


def _freeze(proc, basedir: Path, table: str) -> int:
    """Stops the job's threads (SIGSTOP; its server keeps running) and returns the ledger's
    count once no commit already sent is still landing. A parallel load commits several files
    between two polls, so the count seen by the poll is only a lower bound."""
    os.kill(proc.pid, signal.SIGSTOP)
    counts = [_ledger_files(basedir, table)]
    while len(counts) < 3 or len(set(counts[-3:])) > 1:
        time.sleep(0.2)
        counts.append(_ledger_files(basedir, table))
    return counts[-1]


def _innodb_load(files, out: Path, target: Path, *flags) -> list:
    """The command of a one-file-at-a-time BIGINT load on InnoDB of ``files``, with ``flags``."""
    return [str(VENV_BIN / "catbench"), "load-index", "--target", "tmpdisk", "--path", str(target),
            "--out", str(out), "--input-dir", str(files[0].parent), "--variant", "bigint", "--engine", "innodb",
            "--strategy", "one-file-at-a-time", "--optimize-limit-s", "0", "--lookup-count", "100", *flags]


def _kill_after_repetitions(cmd: list, basedir: Path, log: Path, finished: int):
    """Runs the load ``cmd`` and kills it (SIGSTOP, then SIGKILL: its server stops with it)
    as soon as its ledger's resume.json has ``finished`` repetitions completed."""
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 180
        while True:
            try:
                done = json.loads((basedir / "resume.json").read_text()).get("completed") or []
            except (OSError, ValueError):
                done = []
            if len(done) >= finished:
                os.kill(proc.pid, signal.SIGSTOP)
                break
            assert proc.poll() is None, "finished before it could be stopped: " + log.read_text()[-2000:]
            assert time.time() < deadline, log.read_text()[-2000:]
            time.sleep(0.005)
    finally:  # on every path, so a failed wait leaves no job or server behind
        proc.kill()
        proc.wait()


def _input_checksum(files) -> tuple[int, int]:
    infos = [scan_file(f, _variant("bigint")) for f in files]
    return sum(i.rows for i in infos), sum(i.checksum for i in infos)


def _variant(name):
    from catbench.core.index.table import get_variant
    return get_variant(name)


@pytest.mark.slow
@pytest.mark.parametrize("engine,strategy", [("innodb", "one-file-at-a-time"), ("innodb", "parallel"),
                                             ("rocksdb", "one-file-at-a-time")])
def test_load_killed_at_a_random_file_resumes_with_the_same_checksum(scratch, engine, strategy):
    files = write_files(scratch / "in", "bigint", 60, 4000)
    rows, checksum = _input_checksum(files)
    out, target = scratch / "results" / "load", scratch / "target"
    basedir = target / f"catbench-load_index-bigint-{engine}-{strategy}"
    from catbench.load.strategies import table_name
    table = table_name(_variant("bigint"), strategy)
    cmd = [str(VENV_BIN / "catbench"), "load-index", "--target", "tmpdisk", "--path", str(target),
           "--out", str(out), "--input-dir", str(files[0].parent), "--variant", "bigint",
           "--engine", engine, "--strategy", strategy, "--optimize-limit-s", "0", "--lookup-count", "100", "--repetitions", "1"]
    kill_at = random.Random().randrange(3, 40)
    log = scratch / "first.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 120
        while _ledger_files(basedir, table) < kill_at:
            assert proc.poll() is None, f"finished before file {kill_at}: " + log.read_text()[-2000:]
            assert time.time() < deadline, log.read_text()[-2000:]
            time.sleep(0.02)
        committed = _freeze(proc, basedir, table)
    finally:  # on every path, so a failed wait leaves no job or server behind
        proc.kill()  # the job (SIGKILL), not the server: PDEATHSIG stops the server
        proc.wait()
    assert not out.exists()
    assert (basedir / "resume.json").exists()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "resuming after" in r.stderr or "resuming after" in r.stdout
    s = json.loads((out / "summary.json").read_text())
    assert s["rows"] == rows and s["checksum_ok"] and s["checksum_table"] == checksum
    rep = s["repetitions"][0]
    # every file committed before the kill was kept, and only those: the one in flight is loaded again
    assert kill_at <= committed == rep["resumed_at_file"]
    trace = pq.read_table(out / "trace.parquet").to_pylist()
    assert len(trace) == len(files) and trace[-1]["cumulative_rows"] == rows
    assert not s["stopped"] and not basedir.exists()


@pytest.mark.parametrize("strategy", ["one-file-at-a-time", "trans-partitioned"])
def test_time_limit_stops_the_load_and_reports_it_stopped(scratch, strategy):
    files = write_files(scratch / "in", "bigint", 40, 20000)
    out = scratch / "results" / strategy
    s = run_load_index(load_spec({"load": {"time_limit_s": 0.4, "optimize_limit_s": 0, "lookup_count": 50,
                                           "repetitions": 3, "batch_files": 4}}, checked=False),
                       StorageTarget("tmpdisk", scratch / "target"), files, out, LoadCase("bigint", strategy))
    # each repetition stopped, and repeated: the rows by the limit are a figure with its n
    assert s["stopped"] and s["n"] == 3 and all(r["stopped"] for r in s["repetitions"])
    assert all(0 < r["files_loaded"] < len(files) for r in s["repetitions"])
    assert all(r["rows"] == 20000 * r["files_loaded"] for r in s["repetitions"]) and s["checksum_ok"]
    assert s["time_limit_s"] == 0.4 and s["seconds"] < 30
    assert s["table_pool_ratio"] is not None and s["table_pool_ratio"] > 0
    intervals = pq.read_table(out / "intervals.parquet").to_pylist()
    for rep in s["repetitions"]:  # each repetition's rate curve until its stop
        mine = [r for r in intervals if r["repetition"] == rep["repetition"]]
        assert mine and sum(r["rows"] for r in mine) == rep["rows"]


def test_time_limit_is_not_applied_to_one_stream_strategies(scratch):
    files = write_files(scratch / "in", "bigint", 4, 2000)
    s = run_load_index(load_spec({"load": {"time_limit_s": 0.001, "optimize_limit_s": 0, "lookup_count": 10,
                                           "repetitions": 1, "sort_memory": "64MB"}}, checked=False),
                       StorageTarget("tmpdisk", scratch / "target"), files, scratch / "results" / "b", LoadCase("bigint", "bulk"))
    assert not s["stopped"] and s["time_limit_s"] is None and s["rows"] == 8000


@pytest.mark.slow
def test_a_committed_file_changed_in_place_stops_the_resume_naming_it(scratch):
    """The ledger keeps each committed file's rows and checksum: a resume reads them again, so
    a file changed without changing its size is named, never reported with the old checksum."""
    files = write_files(scratch / "in", "bigint", 40, 4000)
    out, target = scratch / "results" / "load", scratch / "target"
    basedir = target / "catbench-load_index-bigint-innodb-one-file-at-a-time"
    cmd = [str(VENV_BIN / "catbench"), "load-index", "--target", "tmpdisk", "--path", str(target),
           "--out", str(out), "--input-dir", str(files[0].parent), "--variant", "bigint",
           "--engine", "innodb", "--strategy", "one-file-at-a-time", "--optimize-limit-s", "0", "--lookup-count", "100",
           "--repetitions", "1"]
    with open(scratch / "first.log", "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 120
        while _ledger_files(basedir, "bigint_one_file_at_a_time") < 5:
            assert proc.poll() is None and time.time() < deadline, (scratch / "first.log").read_text()[-2000:]
            time.sleep(0.02)
        _freeze(proc, basedir, "bigint_one_file_at_a_time")
    finally:
        proc.kill()
        proc.wait()
    text = files[0].read_bytes()
    end = text.index(b"\n")                       # the first line's last digit (its subChunkId)
    files[0].write_bytes(text[:end - 1] + str((int(text[end - 1:end]) + 1) % 10).encode() + text[end:])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and not (out / "summary.json").exists()
    said = r.stdout + r.stderr
    assert line_with(said, "cannot resume", f"input file {files[0]} changed"), said[-3000:]


@pytest.mark.slow
def test_a_load_killed_after_its_last_repetition_finished_writes_its_results_on_the_rerun(scratch):
    """Killed between the ledger's last repetition and its output (its server stopping): the
    re-run runs no repetition and once failed with KeyError 'server' (its description was
    filled only by a repetition)."""
    files = write_files(scratch / "in", "bigint", 8, 2000)
    rows, checksum = _input_checksum(files)
    out, target = scratch / "results" / "load", scratch / "target"
    basedir = target / "catbench-load_index-bigint-innodb-one-file-at-a-time"
    cmd = _innodb_load(files, out, target, "--repetitions", "1")
    _kill_after_repetitions(cmd, basedir, scratch / "first.log", 1)
    assert not out.exists()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    s = json.loads((out / "summary.json").read_text())
    assert s["rows"] == rows and s["checksum_ok"] and s["checksum_table"] == checksum and s["server"]["variables"]
    assert not basedir.exists()


def test_a_load_stopped_before_its_table_was_made_resumes_from_its_first_file(scratch):
    """A job stopped with its server's data kept but no index table in it (the server killed as
    it came up, before CREATE TABLE; here the table dropped while the job was frozen): the re-run
    makes the table and loads every file, where it had failed on the missing table (1146)."""
    files = write_files(scratch / "in", "bigint", 12, 4000)
    rows, checksum = _input_checksum(files)
    out, target = scratch / "results" / "load", scratch / "target"
    strategy = "one-file-at-a-time"
    basedir = target / f"catbench-load_index-bigint-innodb-{strategy}"
    from catbench.load.strategies import table_name
    table = table_name(_variant("bigint"), strategy)
    cmd = [str(VENV_BIN / "catbench"), "load-index", "--target", "tmpdisk", "--path", str(target),
           "--out", str(out), "--input-dir", str(files[0].parent), "--variant", "bigint",
           "--strategy", strategy, "--optimize-limit-s", "0", "--lookup-count", "100", "--repetitions", "1"]
    log = scratch / "first.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 120
        while _ledger_files(basedir, table) < 2:
            assert proc.poll() is None and time.time() < deadline, log.read_text()[-2000:]
            time.sleep(0.02)
        _freeze(proc, basedir, table)
        conn = mysql.connector.connect(unix_socket=str(basedir / "mysqld.sock"), user="root")
        cur = conn.cursor()
        cur.execute("SET SESSION lock_wait_timeout = 10")   # an error, not a hang, if a lock stays
        cur.execute("SELECT id FROM information_schema.processlist WHERE id <> CONNECTION_ID() AND user = 'root'")
        for (thread,) in cur.fetchall():   # the frozen job's: its open transaction holds the table
            cur.execute(f"KILL {int(thread)}")
        cur.execute(f"DROP TABLE secondary_index.`{table}`")
        conn.close()
    finally:
        proc.kill()
        proc.wait()
    assert (basedir / "resume.json").exists()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    said = r.stdout + r.stderr
    assert r.returncode == 0, said[-3000:]
    assert line_with(said, "resuming after 0 of 12 committed files", "table was not made"), said[-3000:]
    s = json.loads((out / "summary.json").read_text())
    assert s["rows"] == rows and s["checksum_ok"] and s["checksum_table"] == checksum
    assert s["repetitions"][0]["resumed_at_file"] == 0 and not basedir.exists()


def test_an_adaptive_load_killed_after_its_pilot_resumes_to_the_same_number_of_loads(scratch):
    """load.max_repetitions: killed in the first load after the pilot, the re-run takes the
    pilot its ledger kept (the same figures, so the same n) and keeps only the loads after it."""
    files = write_files(scratch / "in", "bigint", 30, 2000)
    rows, checksum = _input_checksum(files)
    out, target = scratch / "results" / "load", scratch / "target"
    basedir = target / "catbench-load_index-bigint-innodb-one-file-at-a-time"
    cmd = _innodb_load(files, out, target, "--repetitions", "2", "--max-repetitions", "3", "--precision", "10")
    _kill_after_repetitions(cmd, basedir, scratch / "first.log", 2)
    pilot = [d["figures"]["rows_per_s"] for d in json.loads((basedir / "resume.json").read_text())["completed"][:2]]
    assert not out.exists()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    s = json.loads((out / "summary.json").read_text())
    assert [p["rows_per_s"] for p in s["pilot"]] == pilot
    assert s["n"] == 1 and [x["repetition"] for x in s["repetitions"]] == [2]
    assert s["rows"] == rows and s["checksum_ok"] and s["checksum_table"] == checksum and not basedir.exists()
