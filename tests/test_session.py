"""The private-server session: one owner per server directory, room checked from the
server's own settings, a full disk named as such, nothing left behind."""

import multiprocessing as mp
import os
import time

import psutil
import pytest
from catbench.core.server.process import Server
from catbench.core.infra.settings import ServerError
from catbench.core.server.session import private_server
from catbench.core.infra.targets import TargetError

from support.servers import server_procs, tmpfs

pytestmark = pytest.mark.server


def _hold(root, ready, release):
    with private_server("first", root, "shared") as srv:
        conn = srv.connect()
        conn.cursor().execute("CREATE DATABASE keepme")
        conn.close()
        ready.set()
        release.wait(120)


def _wait_ready(first, ready, timeout: float):
    """Until the holder's server is up; a holder that died is named at once, not after the timeout."""
    deadline = time.monotonic() + timeout
    while not ready.wait(0.5):
        assert first.is_alive(), f"the first owner exited ({first.exitcode}) before its server was up"
        assert time.monotonic() < deadline, f"the first owner's server not up within {timeout} s"


def test_second_owner_fails_fast_and_touches_nothing(tmp_path):
    # two runs with one run name (two checkouts, two users) once stopped each other's
    # servers; now the second fails at once naming the first, whose server lives on
    # spawn, not fork: a fork of this threaded test worker can inherit a lock held by another
    # thread and hang before the holder's server starts
    ctx = mp.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    first = ctx.Process(target=_hold, args=(tmp_path, ready, release))
    first.start()
    try:
        _wait_ready(first, ready, 180)
        pids = [p.pid for p in server_procs(tmp_path)]
        with pytest.raises(ServerError, match=rf"in use by another live job .*\"pid\": {first.pid}"):
            with private_server("second", tmp_path, "shared"):
                pass
        assert [p.pid for p in server_procs(tmp_path)] == pids and pids  # untouched, still up
        assert (tmp_path / "catbench-shared" / "data" / "keepme").is_dir()
    finally:
        release.set()
        first.join(120)
    assert first.exitcode == 0
    assert not server_procs(tmp_path)
    # the lock is free again: a new owner may clean up and start
    with private_server("third", tmp_path, "shared") as srv:
        assert srv.running


def test_room_for_the_servers_own_files_is_checked_first():
    # a 600 MiB target with a 1 GiB redo log used to pass the check and then fail inside
    # mariadb-install-db with 74 lines of boilerplate
    with tmpfs("600M") as small:
        with pytest.raises(TargetError, match=r"storage target 'small'.*free but this step needs"):
            with private_server("small", small, "room", {"innodb_log_file_size": "1G"}):
                pass
        assert not (small / "catbench-room").exists() and not server_procs(small)


def test_a_full_disk_is_named_on_the_first_line(tmp_path):
    with tmpfs("20M") as small:
        with pytest.raises(ServerError) as err:
            with Server("tiny", small / "srv", {"innodb_log_file_size": "64M"}):
                pass
        first = str(err.value).splitlines()[0]
        assert first.startswith("target tiny: out of space on ") and "errno 28" in first, str(err.value)[:2000]
        assert not server_procs(small)


def test_an_install_that_waits_for_room_on_a_full_disk_is_stopped_and_named(tmp_path):
    """30 MiB with a 4 MiB redo log: the bootstrap fills the disk, then waits for room for ever
    (it once sat 10 minutes with no word; its logs, on that disk, cannot say why)."""
    from catbench.core.server.process import Launch
    with tmpfs("30M") as small:
        t0 = time.monotonic()
        with pytest.raises(ServerError) as err:
            with Server("tiny", small / "srv", {"innodb_log_file_size": "4M"}, Launch(start_timeout_s=60)):
                pass
        assert time.monotonic() - t0 < 15
        first = str(err.value).splitlines()[0]
        assert first.startswith("target tiny: out of space on ") and "errno 28" in first, str(err.value)[:2000]
        assert not server_procs(small)


def test_session_removes_data_and_leaves_no_files_of_a_killed_server(tmp_path):
    with private_server("k", tmp_path, "kill", start=False) as srv:
        srv.initialize()
        srv.start()
        pid = srv.pid
        srv.kill()  # a crash leaves its pid and socket files behind...
        assert srv.pid_file.exists() or srv.socket.exists()
    assert not psutil.pid_exists(pid)
    assert not (tmp_path / "catbench-kill").exists()  # ...the session removes them with the rest


def test_failed_job_keeps_its_error_log_not_its_data(tmp_path):
    with pytest.raises(RuntimeError, match="boom"):
        with private_server("f", tmp_path, "fail") as srv:
            raise RuntimeError("boom")
    base = tmp_path / "catbench-fail"
    assert srv.error_log.exists() and not (base / "data").exists()
    assert not server_procs(tmp_path)
    assert os.listdir(tmp_path)  # the lock file may stay; nothing else is required
