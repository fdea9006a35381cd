"""Private MariaDB/MySQL server: lifecycle, failures, stale state, networking, auth (real server)."""

import logging
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from catbench.core.server.process import Launch, Server
from catbench.core.infra.settings import ServerError, validate_settings
from catbench.core.server.binaries import find_server_binary, server_version
from catbench.core.server.status import status_counters, variables
from support.faultkit import foreground_signals
from support.servers import cgroup_paths, no_memory_cgroup, server_procs

pytestmark = pytest.mark.server


def test_binary_and_version():
    binary = find_server_binary()
    assert Path(binary).name in ("mariadbd", "mysqld")
    assert "Ver" in server_version(binary)


def test_missing_binary_says_what_to_install():
    with pytest.raises(ServerError, match="apt-get install mariadb-server"):
        find_server_binary("/nonexistent/mariadbd")


def test_lifecycle_and_timings(tmp):
    with Server("life", tmp) as s:
        pid = s.pid
        conn = s.connect()
        cur = conn.cursor()
        cur.execute("SELECT 1")
        assert cur.fetchall() == [(1,)]
        assert s.socket.exists() and s.pid_file.exists()
    assert s.timings["init_s"] > 0 and s.timings["start_s"] > 0 and s.timings["stop_s"] > 0
    assert not psutil.pid_exists(pid)
    assert not s.socket.exists()
    # a second start reuses the initialised datadir
    with s:
        assert s.running
    assert not server_procs(tmp)


def test_bad_setting_fails_with_log_tail(tmp):
    # a value only the server can judge (sizes are refused before: see below)
    s = Server("badtarget", tmp, {"innodb_flush_method": "banana"})
    with pytest.raises(ServerError) as err:
        with s:
            pass
    msg = str(err.value)
    assert "badtarget" in msg and "banana" in msg  # the log tail names the bad value
    assert not server_procs(tmp)


@pytest.mark.parametrize("settings", [{"innodb buffer": 1}, {"Innodb_X": 1}, {"x": "1; DROP"},
                                      {"x": "a\nb"}, {"datadir": "/elsewhere"}, {"x": [1]},
                                      {"rocksdb_default_cf_options": "cf_paths=/elsewhere"}])
def test_settings_are_validated(settings):
    with pytest.raises(ServerError):
        validate_settings(settings)


@pytest.mark.parametrize("key", [
    "loose-skip-networking", "loose-port", "loose-bind-address", "skip-grant-tables", "skip_grant_tables",
    "maximum-port", "enable-local-infile", "plugin-load-add", "ssl-key", "bind", "data", "init-file",
    "secure-file-priv", "innodb-data-home-dir", "wsrep-provider", "LOOSE_PORT"])
def test_reserved_options_are_refused_in_every_spelling(key):
    # the bypasses found by trying: each would open the server to other local users or move
    # its files; the error names the config key
    with pytest.raises(ServerError, match=rf"config key 'server\.settings\.{key}'"):
        validate_settings({key: 0})


def test_sizes_are_checked_before_the_job():
    with pytest.raises(ServerError, match="innodb_buffer_pool_size.*not a size"):
        validate_settings({"innodb_buffer_pool_size": "banana"})
    assert validate_settings({"innodb_buffer_pool_size": "1.5G"}) == {"innodb_buffer_pool_size": "1.5G"}


def test_an_option_list_is_a_setting():
    opts = "write_buffer_size=6554k;max_bytes_for_level_base=26214k;level0_file_num_compaction_trigger=4"
    assert validate_settings({"rocksdb_default_cf_options": opts}) == {"rocksdb_default_cf_options": opts}


def test_setting_rendering():
    assert validate_settings({"innodb_doublewrite": False, "innodb_log_file_size": "1G", "x": 2}) == {
        "innodb_doublewrite": "0", "innodb_log_file_size": "1G", "x": "2"}


def test_no_server_left_after_exception_inside_with(tmp):
    with pytest.raises(RuntimeError, match="boom"):
        with Server("boom", tmp) as s:
            pid = s.pid
            raise RuntimeError("boom")
    assert not psutil.pid_exists(pid)
    assert not server_procs(tmp)


def test_stale_dead_pid_and_socket(tmp, caplog):
    s = Server("stale", tmp)
    s.initialize()
    s.start()
    s.kill()  # crash: pid file and socket stay behind
    assert s.pid_file.exists() and s.socket.exists()
    with caplog.at_level(logging.WARNING, logger="catbench.core.server.process"):
        s.start()
    try:
        assert "stale pid file" in caplog.text and "stale socket" in caplog.text
        assert s.connect().is_connected()
    finally:
        s.stop()


def test_stale_live_server_is_stopped(tmp, caplog):
    first = Server("live", tmp)
    first.initialize()
    first.start()
    old = first.pid
    second = Server("live", tmp)
    with caplog.at_level(logging.WARNING, logger="catbench.core.server.process"):
        second.start()
    try:
        assert f"stopped leftover server pid {old}" in caplog.text
        assert not psutil.pid_exists(old) or psutil.Process(old).status() == psutil.STATUS_ZOMBIE
        assert second.connect().is_connected()
    finally:
        second.stop()
        first.kill()  # reaps the old child, no-op otherwise
    assert not server_procs(tmp)


def test_socket_only_by_default(srv):
    listening = [c for c in psutil.Process(srv.pid).net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
    assert listening == []
    assert "skip-networking" in srv.config_file.read_text()


def test_tcp_listens_on_localhost_only(tmp):
    with Server("tcp", tmp, launch=Launch(tcp=True)) as s:
        listening = [c for c in psutil.Process(s.pid).net_connections(kind="inet")
                     if c.status == psutil.CONN_LISTEN]
        assert listening, "no TCP listener"
        assert {c.laddr.ip for c in listening} == {"127.0.0.1"}
        assert {c.laddr.port for c in listening} == {s.port}


def test_password_auth_credentials_file(tmp):
    with Server("pw", tmp, auth="password") as s:
        assert stat.S_IMODE(os.stat(s.credentials_file).st_mode) == 0o600
        conn = s.connect()
        cur = conn.cursor()
        cur.execute("SELECT CURRENT_USER()")
        assert cur.fetchall()[0][0].startswith(s.user + "@")
        pw = s._password()
    assert pw and all(pw not in f.read_text(errors="replace")
                      for f in (s.config_file, s.error_log, tmp / "install.log"))
    with s:  # restart reads the stored password
        assert s.connect().is_connected()


def test_socket_path_too_long():
    with pytest.raises(ServerError, match="107"):
        Server("long", "/tmp/" + "x" * 120)


def test_counters_and_variables(srv):
    conn = srv.connect()
    c = status_counters(conn)
    assert c["Innodb_buffer_pool_pages_total"] > 0 and "Innodb_data_written" in c
    v = variables(conn, ["innodb_buffer_pool_size", "datadir"])
    assert int(v["innodb_buffer_pool_size"]) == 64 << 20
    assert v["datadir"].rstrip("/") == str(srv.datadir)
    conn.close()


def test_handler_write_counts_a_running_statements_rows(srv, tmp_path):
    """The scale model's rate windows inside one file read Handler_write while the file's
    statement runs: it must count that statement's rows as they go, not at its end."""
    import threading

    rows = 1_500_000
    data = tmp_path / "rows.tsv"
    data.write_text("".join(f"{i}\t{i * 7 % 1000003}\n" for i in range(rows)))
    conn, watch = srv.connect(), srv.connect()
    cur = conn.cursor()
    cur.execute("CREATE DATABASE IF NOT EXISTS hw")
    cur.execute("CREATE TABLE hw.t (id BIGINT PRIMARY KEY, v BIGINT) ENGINE=InnoDB")
    h0 = status_counters(watch)["Handler_write"]
    load = threading.Thread(target=lambda: cur.execute(f"LOAD DATA LOCAL INFILE '{data}' INTO TABLE hw.t"))
    load.start()
    seen = []
    while load.is_alive():
        seen.append(status_counters(watch)["Handler_write"] - h0)
    load.join()
    final = status_counters(watch)["Handler_write"] - h0
    cur.execute("DROP DATABASE hw")
    conn.close(), watch.close()
    assert final >= rows
    assert any(0 < v < rows for v in seen), f"no value between 0 and {rows:,} while the load ran: {seen[:5]}…"


CHILD = """
import sys, time
from catbench.core.server.process import Server
s = Server("sig", sys.argv[1])
s.__enter__()
print(s.pid, flush=True)
time.sleep(120)
"""


def _gone(pid: int, timeout: float = 30) -> bool:
    import time
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT", "SIGKILL"])
def test_killed_job_leaves_no_server(tmp, sig):
    """SIGTERM/SIGINT: the handler stops the server; SIGKILL: the parent-death signal does."""
    import signal
    import subprocess
    import sys
    # SIGINT at its default, as in a foreground job: a suite started in the background inherits it ignored
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp)], stdout=subprocess.PIPE, text=True,
                             preexec_fn=foreground_signals)
    try:
        server_pid = int(child.stdout.readline())
        assert psutil.pid_exists(server_pid)
        child.send_signal(getattr(signal, sig))
        child.wait(60)
        assert _gone(server_pid), f"server {server_pid} survived {sig} of its job"
        if sig == "SIGTERM":
            assert child.returncode == 128 + signal.SIGTERM
        # every path ends in a clean InnoDB shutdown, not a crash
        assert "Shutdown complete" in (tmp / "error.log").read_text()
    finally:
        child.kill()
        child.wait()
    assert not [p for p in server_procs(tmp) if p.status() != psutil.STATUS_ZOMBIE]


@pytest.mark.skipif(bool(no_memory_cgroup()), reason=no_memory_cgroup() or "-")
def test_ram_puts_the_server_and_its_page_cache_in_a_memory_cgroup(tmp):
    ram = 300 << 20
    with Server("ramcage", tmp, {"innodb_buffer_pool_size": "16M"}, Launch(ram=ram)) as s:
        cage = s.cage
        assert cage.holds(s.pid), "the server runs outside its cgroup"
        limit = (cage.path / ("memory.max" if cage.version == 2 else "memory.limit_in_bytes")).read_text()
        assert int(limit) == ram
        conn = s.connect()
        cur = conn.cursor()
        cur.execute("SELECT @@innodb_buffer_pool_size")
        assert cur.fetchall()[0][0] == 16 << 20
        conn.close()
        own, cache = cage.split()
        rss = psutil.Process(s.pid).memory_info().rss
        assert 0.5 * rss <= own <= ram and 0 <= cache <= ram, (own, cache, rss)
    assert s.cage is None and not cage.path.exists() and not cgroup_paths("ramcage"), "cgroup left behind"
    assert 0 < s.ram_peak <= ram


@pytest.mark.skipif(bool(no_memory_cgroup()), reason=no_memory_cgroup() or "-")
def test_page_cache_holds_the_limit_at_the_servers_own_bytes_and_that_many_more(tmp):
    from catbench.core.server.memory import HOLD_MARGIN, HOLD_S
    page = 8 << 20
    with Server("pagecage", tmp, {"innodb_buffer_pool_size": "16M"}, Launch(page_cache_hold=page)) as s:
        cage = s.cage
        assert cage.holds(s.pid) and s.ram is None
        big = tmp / "big"
        big.write_bytes(os.urandom(48 << 20))
        conn = s.connect()     # the server reads 48 MiB of file: its page cache keeps at most ~8 MiB
        cur = conn.cursor()
        cur.execute(f"SELECT LENGTH(LOAD_FILE('{big}'))")
        cur.fetchall()
        conn.close()
        time.sleep(3 * HOLD_S)
        own, cache, dirty, writeback = cage.split(dirty=True)
        limit = int((cage.path / ("memory.high" if cage.version == 2 else "memory.limit_in_bytes")).read_text())
        held = own + dirty + writeback + page + HOLD_MARGIN
        assert abs(limit - held) < 16 << 20 and cache <= dirty + writeback + page + HOLD_MARGIN + (4 << 20), \
            (own, cache, limit)
    assert not cage.path.exists() and not cgroup_paths("pagecage"), "cgroup left behind"


@pytest.mark.skipif(bool(no_memory_cgroup()), reason=no_memory_cgroup() or "-")
def test_a_ram_too_small_for_the_servers_start_names_the_oom_killer_and_the_key(tmp):
    s = Server("oomstart", tmp, {"innodb_buffer_pool_size": "16M"}, Launch(ram=24 << 20))
    s.initialize()
    # when, what killed it, and the key and its value
    with pytest.raises(ServerError, match=r"during start, .*OOM killer.*'server\.ram' of 25,165,824 bytes"):
        s.start()
    assert not s.running and not server_procs(s.datadir) and not cgroup_paths("oomstart")


@pytest.mark.skipif(bool(no_memory_cgroup()), reason=no_memory_cgroup() or "-")
def test_a_sigkilled_owners_cgroup_is_removed_by_the_next_catbench_command():
    # the owner makes a page-cache hold (v1: the OOM killer off) and is killed before remove()
    code = ("import os, sys, time\nfrom catbench.core.server.memory import MemoryCage\n"
            "c = MemoryCage('sweeptest', None, hold=1 << 30)\nprint(c.path, flush=True)\ntime.sleep(60)\n")
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    path = Path(owner.stdout.readline().strip())
    owner.kill()
    owner.wait()
    assert path.is_dir() and path.name == f"catbench-sweeptest-{owner.pid}"
    p = subprocess.run([sys.executable, "-m", "catbench", "estimate", "--help"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert not path.exists(), "a dead owner's cgroup outlived the next catbench command"


def test_ram_is_refused_naming_the_key_where_no_cgroup_can_be_set(tmp, monkeypatch):
    from catbench.core.server import memory
    monkeypatch.setattr(memory, "ROOT", tmp / "no-cgroups")
    (tmp / "no-cgroups").mkdir()
    s = Server("nocage", tmp / "srv", {}, Launch(ram=1 << 30))
    s.initialize()
    with pytest.raises(memory.MemoryLimitError, match="config key 'server.ram'"):
        s.start()
    assert not s.running and not server_procs(s.datadir)
