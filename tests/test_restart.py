"""Restart stage with a real private server: phases, no lost rows, equal answers, faults named."""

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from catbench.cli.restart import add_subcommands
from catbench.restart import errorlog
from catbench.cli.restart import restart_spec
from catbench.restart.run_restart import RestartError, RestartSpec, run_restart
from support import indexinput
from support.servers import servers_under

SETTINGS = {"innodb_buffer_pool_size": "64M", "innodb_log_file_size": "48M"}


def write_files(d: Path, nfiles: int, rows: int, seed: int = 3) -> list[Path]:
    return indexinput.write_files(d, "bigint", nfiles, rows, seed=seed)


@pytest.fixture(scope="module")
def restarted():
    d = Path(tempfile.mkdtemp(prefix="cbr-", dir="/tmp"))
    try:
        files = write_files(d / "in", 20, 2000)
        out = d / "out" / "restart" / "t1"
        result = run_restart("t1", d / "target", files, out, restart_spec({
            "variant": "bigint", "repetitions": 2, "lookup_count": 2000, "warm_timeout_s": 10, "warm_batch": 100,
            "query_threads": 3, "start_timeout_s": 60, "memory_probe": "512M", "lookup_probe": "1M"},
            {"settings": SETTINGS}, seed=5))
        assert not servers_under(d)
        yield d, out, result
    finally:
        shutil.rmtree(d, ignore_errors=True)


pytestmark = pytest.mark.server


def _rows(out: Path, kind: str) -> list[dict]:
    data = json.loads((out / f"{kind}.json").read_text())
    assert data["kind"] == kind and data["target"] == "t1"
    return data["rows"]


def test_clean_restart_phases(restarted):
    d, out, result = restarted
    rows = _rows(out, "clean")
    for bp in (False, True):
        for rep in (0, 1):
            mine = {r["phase"]: r for r in rows if r["buffer_pool_load"] is bp and r["repetition"] == rep}
            want = {"flush_dirty_pages_before_shutdown", "shutdown", "process_start_to_engine_ready", "engine_ready_to_accepting",
                    "accepting_to_first_answer", "process_start_to_first_answer", "first_answer_to_warm",
                    "process_start_to_warm"} | ({"process_start_to_buffer_pool_loaded"} if bp else set())
            assert set(mine) == want
            for p in want - {"first_answer_to_warm", "process_start_to_warm"}:
                assert mine[p]["seconds"] is not None and mine[p]["seconds"] >= 0, p
            assert mine["process_start_to_first_answer"]["seconds"] >= mine["process_start_to_engine_ready"]["seconds"]
            for r in mine.values():
                assert r["rows_lost"] == 0 and r["rows_expected"] == r["rows_found"] == 40_000
                assert r["redo_bytes"] is None and r["recovery_MBps"] is None
                assert r["clock"] in ("client", "log-observed")
    det = json.loads((out / "clean.json").read_text())["detail"][0]["modes"]
    assert det["on"]["shutdown"]["dump_file_bytes"] > 0
    assert det["off"]["checksum_equal"] and det["on"]["checksum_equal"]
    assert det["off"]["settle"]["dirty_pages_after"] <= max(16, det["off"]["settle"]["data_pages"] // 1000)
    assert det["off"]["table_file_bytes"] >= 40_000 * 8       # the table at rest: its tablespace file
    names = [e["event"] for e in det["off"]["events"]]
    assert "engine_ready" in names and "ready" in names and "recovery_start" not in names


def test_crash_during_load_loses_nothing_and_resumes(restarted):
    d, out, result = restarted
    rows = _rows(out, "crash-during-load")
    assert all(r["rows_lost"] == 0 for r in rows)
    data = json.loads((out / "crash-during-load.json").read_text())
    for det in data["detail"]:
        assert det["outcome"] in ("rolled_back", "committed_before_kill_unacknowledged")
        assert det["final_equals_clean"] is True and det["final_rows"] == 40_000
        assert det["recovery"]["recovered"] and det["recovery"]["redo_bytes"] > 0
        assert det["recovery"]["recovery_seconds"] is not None and det["recovery"]["recovery_MBps"] > 0
        assert 1 <= det["committed_files"] <= 19
        assert det["recovery"]["rss_bytes"] > 10 * 2 ** 20     # the memory recovery filled, for the model
        assert det["data_pages_after_resume"] > 0               # the data a crash-only rung holds
    touch = data["memory_touch"]     # the probe: two 256 MiB chunks, each first-touched and timed
    assert touch["chunk_bytes"] == 256 * 2 ** 20 and len(touch["seconds"]) == 2 and all(s > 0 for s in touch["seconds"])
    lookup = data["page_lookup"]     # the lookup probe: a map's lookup at each size, for the redo scan's model
    assert lookup["nodes"] == [2 ** k for k in range(10, 15)] and all(ns > 0 for ns in lookup["ns"])   # up to 1 MiB
    rec = [r for r in rows if r["phase"] == "crash_recovery"]
    assert len(rec) == 2 and all(r["redo_bytes"] > 0 and r["seconds"] is not None for r in rec)
    for r in rows:
        assert r["seconds"] is None or r["seconds"] >= 0
    # both repetitions drew their own kill point (file and fraction of it) from the seed
    kill_points = [(det["planned_committed_files"], det["kill_fraction"]) for det in data["detail"]]
    assert len(kill_points) == 2 and len(set(kill_points)) == len(kill_points)


def test_crash_under_queries_answers_equal(restarted):
    d, out, result = restarted
    data = json.loads((out / "crash-under-queries.json").read_text())
    for det in data["detail"]:
        assert det["answers_equal"] is True
        assert det["answers_before"] == det["answers_after"]
        assert det["queries_completed_before_kill"] > 0
    assert data["detail"][0]["table_state"] == "freshly loaded"
    rows = data["rows"]
    assert all(r["rows_lost"] == 0 for r in rows)
    assert all(r["seconds"] is not None for r in rows if r["phase"] == "process_start_to_all_answers_equal")
    summary = json.loads((out / "summary.json").read_text())["summary"]
    assert summary["rows_lost_total"] == 0 and summary["crash_over_clean_ratio"] > 0
    assert "ready for connections" in (out / "server-error.log").read_text()


def test_damaged_redo_log_fails_with_log_tail(tmp_path_factory):
    d = Path(tempfile.mkdtemp(prefix="cbf-", dir="/tmp"))
    try:
        files = write_files(d / "in", 6, 1000)
        out = d / "out"
        with pytest.raises(RestartError) as ei:
            run_restart("broken", d / "target", files, out, restart_spec({
                "kinds": ["crash-during-load"], "lookup_count": 100, "start_timeout_s": 60},
                {"settings": SETTINGS}, fault="corrupt-redo"))
        msg = str(ei.value)
        assert "target broken" in msg and "did not come back" in msg
        assert "last lines of" in msg and "[ERROR] InnoDB" in msg
        assert not servers_under(d)
        ev = json.loads((out / "crash-during-load.error.json").read_text())
        assert "[ERROR]" in ev["error_log_tail"]
        assert not (out / "crash-during-load.json").exists()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_unknown_kind_is_rejected():
    from catbench.core.infra.config import validate
    cfg = validate({"restart": {}, "server": {}}, whole=False)
    with pytest.raises(RestartError, match="unknown restart kind"):
        RestartSpec.of({**cfg, "restart": {**cfg["restart"], "kinds": ["warm"]}})
    with pytest.raises(RestartError, match="unknown fault drill"):
        RestartSpec.of(cfg, fault="no-such-drill")
    with pytest.raises(RestartError, match=r"restart.crash_point must be \[low, high\]"):
        RestartSpec.of({**cfg, "restart": {**cfg["restart"], "crash_point": [0.9, 0.6]}})
    assert RestartSpec.of(cfg).crash_point == (0.0, 1.0)
    with pytest.raises(RestartError, match=r"restart\.lookup_probe .*0K.*128K, not 64K"):    # the key, bounds, value
        RestartSpec.of({**cfg, "restart": {**cfg["restart"], "lookup_probe": "64K"}})
    from catbench.restart.memory import lookup_sizes
    assert lookup_sizes(128 * 1024) == (1024, 2048) and lookup_sizes(RestartSpec.of(cfg).lookup_probe)[-1] == 2 ** 22


LOG = """\
2026-11-22  0:06:15 0 [Note] Starting MariaDB 10.11.19-MariaDB-0+deb12u1 source revision x server_uid y as process 26532
2026-11-22  0:06:15 0 [Note] InnoDB: Completed initialization of buffer pool
2026-11-22  0:06:15 0 [Note] InnoDB: Starting crash recovery from checkpoint LSN=44404
2026-11-22  0:06:15 0 [Note] InnoDB: End of log at LSN=95765653
2026-11-22  0:06:15 0 [Note] InnoDB: To recover: 4141 pages
2026-11-22  0:06:16 0 [Note] InnoDB: 128 rollback segments are active.
2026-11-22  0:06:16 0 [Note] InnoDB: log sequence number 95765653; transaction id 226
2026-11-22  0:06:16 0 [Note] InnoDB: Starting in background the rollback of recovered transactions
2026-11-22  0:06:17 0 [Note] /usr/sbin/mariadbd: ready for connections.
2026-11-22  0:06:18 0 [Note] InnoDB: Rollback of non-prepared transactions completed
2026-11-22  0:12:05 0 [Note] InnoDB: log sequence number 199317727 (memory-mapped); transaction id 525
2023-01-02T03:04:05.250000Z 0 [System] [MY-010931] [Server] /usr/sbin/mysqld: ready for connections.
"""


def test_errorlog_parsing():
    ev = errorlog.parse_lines(LOG)
    names = [e.name for e in ev]
    assert names == ["process_start", "buffer_pool_init", "recovery_start", "end_of_log", "to_recover",
                     "undo_ready", "engine_ready", "rollback_start", "ready", "rollback_done", "engine_ready", "ready"]
    rs, eol = errorlog.first(ev, "recovery_start"), errorlog.first(ev, "end_of_log")
    assert eol.numbers[0] - rs.numbers[0] == 95765653 - 44404
    assert errorlog.first(ev, "engine_ready").numbers == [95765653, 226]
    assert errorlog.first(ev, "ready").log_time - errorlog.first(ev, "process_start").log_time == 2
    assert ev[-1].log_time == pytest.approx(1672628645.25)
    assert ev[-2].numbers == [199317727, 525]
    old = errorlog.parse_lines("2020-01-01 10:00:00 0 [Note] InnoDB: 10.5.8 started; log sequence number 1; "
                               "transaction id 2\n")
    assert old[0].name == "engine_ready" and old[0].numbers == [1, 2]


def test_cli_parses(tmp_path):
    import argparse
    parser = argparse.ArgumentParser()
    add_subcommands(parser.add_subparsers(dest="command"))
    a = parser.parse_args(["restart", "--target", "t", "--path", str(tmp_path), "--input-dir", str(tmp_path),
                           "--out", str(tmp_path / "o"), "--kinds", "clean", "crash-under-queries",
                           "--repetitions", "3", "--settings-json", '{"innodb_buffer_pool_size": "64M"}',
                           "--buffer-pool-dump", "on"])
    assert a.kinds == ["clean", "crash-under-queries"] and a.repetitions == 3 and callable(a.func)
    assert a.buffer_pool_dump == ["on"]
    # no input files: a clean error, exit code 1
    assert a.func(a) == 1


def test_cli_config_with_flag_overrides(tmp_path, capsys):
    import argparse

    from catbench.cli.restart import sections
    parser = argparse.ArgumentParser()
    add_subcommands(parser.add_subparsers(dest="command"))
    base = ["restart", "--target", "t", "--path", str(tmp_path), "--input-dir", str(tmp_path), "--out", str(tmp_path)]
    cfg = json.dumps({"restart": {"repetitions": 2, "settings": {"innodb_log_file_size": "48M"}},
                      "server": {"binary": "/x/mariadbd", "settings": {"innodb_buffer_pool_size": "1G"}},
                      "seed": 7})
    a = parser.parse_args(base + ["--config", cfg, "--kinds", "clean", "--settings-json",
                                  '{"innodb_buffer_pool_size": "64M"}'])
    restart, server, seed = sections(a)
    assert restart == {"repetitions": 2, "kinds": ["clean"],
                       "settings": {"innodb_log_file_size": "48M", "innodb_buffer_pool_size": "64M"}}
    assert server["binary"] == "/x/mariadbd" and seed == 7
    # no config, no flags: nothing given, so every value is the schema's default
    a = parser.parse_args(base)
    assert sections(a) == ({}, {}, None)
    assert a.func(a) == 1
    assert "catbench restart: error:" in capsys.readouterr().err


def test_settings_and_job_memory_come_from_the_schema():
    from catbench.cli.restart import restart_spec
    from catbench.core.infra.config import ConfigError, defaults
    from catbench.core.infra.jobs.requests import server_job_mb
    rs, sv = defaults("restart"), defaults("server")
    spec = restart_spec(None, None)
    assert spec.kinds == tuple(rs["kinds"]) and spec.repeats.min_n == rs["repetitions"]
    assert spec.warm.factor == rs["warm_factor"] and spec.warm.timeout_s == rs["warm_timeout_s"]
    assert spec.buffer_pool_modes == tuple(rs["buffer_pool_dump"]) and spec.lookup_count == rs["lookup_count"]
    assert spec.launch.binary == sv["binary"] and spec.launch.start_timeout_s == rs["start_timeout_s"]
    spec = restart_spec({"repetitions": 3}, None)
    assert spec.repeats.min_n == 3 and spec.warm.factor == rs["warm_factor"]
    with pytest.raises(ConfigError, match="restart"):
        restart_spec({"repetition": 3}, None)
    spec = restart_spec({"settings": {"innodb_buffer_pool_size": "1G"}},
                        {"settings": {"innodb_buffer_pool_size": "64M", "innodb_log_buffer_size": "16M"}})
    assert spec.settings == {"innodb_buffer_pool_size": "1G", "innodb_log_buffer_size": "16M"}
    assert server_job_mb(spec.settings) == 1500 + 1024 + 16


def test_interrupted_run_is_not_recorded_as_a_failure(tmp_path):
    from types import SimpleNamespace

    from catbench.restart.run_restart import _evidence
    run = SimpleNamespace(kind="clean", target="t", srv=SimpleNamespace(error_log=tmp_path / "error.log"))
    _evidence(run, KeyboardInterrupt(), {"target": "t"}, {}, tmp_path)
    ev = json.loads((tmp_path / "clean.error.json").read_text())
    assert ev["interrupted"] is True and "error" not in ev
    _evidence(run, RuntimeError("boom"), {"target": "t"}, {}, tmp_path)
    ev = json.loads((tmp_path / "clean.error.json").read_text())
    assert ev["error"] == "boom" and "interrupted" not in ev


def test_summary_headlines_come_from_the_kind_modules():
    from catbench.restart.headlines import summarize
    from catbench.restart.kinds import MODULES
    assert all(mod.HEADLINES for mod in MODULES.values())   # each of ours declares its figures
    rows = {"clean": [{"phase": "process_start_to_first_answer", "seconds": 2.0, "buffer_pool_load": False,
                       "recovery_MBps": None, "redo_bytes": None, "rows_lost": 0}],
            "crash-under-queries": [{"phase": "process_start_to_first_answer", "seconds": 3.0,
                                     "buffer_pool_load": False, "recovery_MBps": None, "redo_bytes": None,
                                     "rows_lost": 0}]}
    out = summarize({k: {"rows": r} for k, r in rows.items()}, MODULES)
    assert set(out) == {
        "clean_first_answer_s", "clean_warm_s", "clean_shutdown_s", "crash_under_queries_first_answer_s",
        "crash_under_queries_all_answers_s", "crash_during_load_first_answer_s", "crash_during_load_recovery_s",
        "recovery_MBps_median", "redo_bytes_median", "rows_lost_total", "crash_over_clean_ratio",
        "crash_during_load_over_clean_ratio", "goal_crash_within_2x_clean"}
    assert out["clean_first_answer_s"]["off"] == {"median": 2.0, "max": 2.0, "n": 1}
    assert out["crash_over_clean_ratio"] == 1.5 and out["goal_crash_within_2x_clean"] is True
    assert out["crash_during_load_over_clean_ratio"] is None


def test_adaptive_restarts_keep_the_repetitions_after_their_pilot(tmp_path):
    """With restart.max_repetitions a kind's first restart.repetitions are a pilot whose
    spread alone sets how many follow (here the most, 3 in all: any spread asks for at least
    one more); the rows judged are those after it, the pilot's stay under ``pilot``."""
    files = write_files(tmp_path / "in", 4, 1000)
    out = tmp_path / "out"
    result = run_restart("t1", tmp_path / "target", files, out, restart_spec({
        "kinds": ["clean"], "buffer_pool_dump": ["off"], "variant": "bigint", "repetitions": 2,
        "max_repetitions": 3, "precision": 10.0,
        "lookup_count": 500, "warm_timeout_s": 10, "warm_batch": 100, "start_timeout_s": 60},
        {"settings": SETTINGS}, seed=5))
    doc = json.loads((out / "clean.json").read_text())
    assert {r["repetition"] for r in doc["rows"]} == {2} and len(doc["detail"]) == 1
    assert {r["repetition"] for r in doc["pilot"]["rows"]} == {0, 1} and len(doc["pilot"]["detail"]) == 2
    assert (doc["repetitions"], doc["max_repetitions"]) == (2, 3)
    assert result["summary"]["clean_first_answer_s"]["off"]["n"] == 1
    assert not servers_under(tmp_path)


def test_a_clean_restarts_pilot_figure_is_its_first_answer_in_each_buffer_pool_mode():
    from catbench.restart.run_restart import _pilot_figure
    rows = [{"phase": "shutdown", "seconds": 9.0, "buffer_pool_load": False},
            {"phase": "process_start_to_first_answer", "seconds": 0.2, "buffer_pool_load": True},
            {"phase": "process_start_to_first_answer", "seconds": 0.1, "buffer_pool_load": False}]
    assert _pilot_figure("clean", rows) == (0.1, 0.2)          # off, then on
    assert np.isnan(_pilot_figure("clean", rows[:1])[0])     # no first answer: the most runs
    crash = [{"phase": "process_start_to_first_answer", "seconds": None, "buffer_pool_load": None}]
    assert np.isnan(_pilot_figure("crash-during-load", crash)[0])
