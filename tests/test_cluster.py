"""Cluster stage with a real 3-node Galera cluster on this machine (small data): every
restart kind runs, its phases come in order, no acknowledged insert is lost, all nodes
agree, nothing listens beyond 127.0.0.1 and no node or SST helper is left behind, also
when the job is stopped by SIGTERM; bad input fails at once naming the config key."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import psutil
import pytest
from catbench.cli.cluster import cluster_spec
from catbench.core.infra.config import ConfigError
from catbench.restart.cluster.options import ClusterError
from catbench.restart.cluster.run_cluster import run_cluster
from catbench.restart.cluster.session import OwnListeners, proc_net_listeners, listening_sockets

from support import indexinput
from support.servers import tmpfs
from support.runs import REPORT

REPO = Path(__file__).resolve().parent.parent
SETTINGS = {"innodb_buffer_pool_size": "64M", "innodb_log_file_size": "48M"}
SMALL = {"gcache_size": "32M", "settings": SETTINGS, "lookup_count": 500, "start_timeout_s": 120,
         "load": {"before_s": 1, "down_s": 1, "after_s": 1, "lookup_rate": 100, "insert_rate": 300}}
HELPERS = ("mariadbd", "socat", "mbstream", "mariadb-backup", "mariabackup", "rsync", "wsrep_sst")

needs_galera = pytest.mark.skipif(not os.path.exists("/usr/lib/galera/libgalera_smm.so")
                                  or not shutil.which("wsrep_sst_mariabackup"),
                                  reason="galera-4 and mariadb-backup not installed (make test installs them as root)")


def left_behind(root: Path) -> list[str]:
    """Node servers or SST helpers that still name ``root`` (or run below it)."""
    out = []
    for p in psutil.process_iter(["pid", "name", "cmdline", "cwd"]):
        cmd = " ".join(p.info["cmdline"] or [])
        where = f"{cmd} {p.info.get('cwd') or ''}"
        if str(root) in where and any(h in cmd or h in (p.info["name"] or "") for h in HELPERS):
            out.append(f"{p.info['pid']} {cmd[:120]}")
    return out


def listening(ports: set[int]) -> list:
    return [c for c in psutil.net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN and c.laddr.port in ports]


class ListenerWatch(threading.Thread):
    """Every TCP listener (address, port) of this process's descendants, sampled every 0.1 s (the
    cluster job's own sampler: a socket's owner looked up once, when it first listens)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.seen, self.halt, self.own = set(), threading.Event(), OwnListeners()

    def run(self):
        while not self.halt.is_set():
            self.seen |= {(address, port) for address, port, _ in self.own.sample()}
            self.halt.wait(0.1)


@pytest.fixture(scope="module")
def galera_run():
    d = Path(tempfile.mkdtemp(prefix="cbcl-", dir="/tmp"))
    watch = ListenerWatch()
    watch.start()
    try:
        files = indexinput.write_files(d / "in", "bigint", 8, 1500, seed=7)
        out = d / "out" / "cluster" / "t1"
        result = run_cluster("t1", d / "target", files, out, cluster_spec(SMALL, None, 11))
        watch.halt.set()
        watch.join(5)
        yield d, out, result, watch.seen
    finally:
        watch.halt.set()
        shutil.rmtree(d, ignore_errors=True)


pytestmark = [pytest.mark.server, needs_galera]


def _kind(out: Path, kind: str) -> dict:
    data = json.loads((out / f"{kind}.json").read_text())
    assert data["kind"] == kind and data["target"] == "t1" and data["nodes"] == 3
    return data


def _phases(data: dict) -> dict[str, dict]:
    return {r["phase"]: r for r in data["rows"] if r["repetition"] == 0}


@pytest.mark.slow
def test_every_kind_runs_in_order_and_transfers_as_expected(galera_run):
    d, out, result, _ = galera_run
    want_transfer = {"node-restart-ist": "IST", "node-restart-sst": "SST", "node-crash": "IST"}
    for kind, transfer in want_transfer.items():
        ph = _phases(_kind(out, kind))
        order = ["process_start_to_primary", "process_start_to_transfer_start", "process_start_to_transfer_end",
                 "process_start_to_joined", "process_start_to_synced"]
        secs = [ph[p]["seconds"] for p in order]
        assert all(s is not None for s in secs), (kind, secs)
        assert secs == sorted(secs), (kind, dict(zip(order, secs)))
        assert ph["process_start_to_engine_ready"]["seconds"] <= ph["process_start_to_synced"]["seconds"]
        assert ph["process_start_to_first_answer"]["seconds"] >= ph["process_start_to_engine_ready"]["seconds"]
        assert ph["down_to_synced"]["seconds"] >= ph["process_start_to_synced"]["seconds"]
        assert ph["shutdown" if kind != "node-crash" else "kill"]["seconds"] >= 0
        st = ph["state_transfer"]
        assert st["transfer"] == transfer and st["donor"] in ("node1", "node2"), st
        assert st["transfer_bytes"] and st["transfer_bytes"] > 0 and st["transfer_MBps"] > 0, st
    sst = _phases(_kind(out, "node-restart-sst"))
    assert sst["wipe_datadir"]["seconds"] >= 0 and sst["sst_receive"]["transfer_bytes"] > 1e6
    assert sst["sst_stream"]["transfer_MBps"] > 0  # mariabackup's own phases, from the donor's log
    tr = _kind(out, "node-restart-sst")["detail"][0]["transfer"]
    assert tr["sst_redo_bytes"] >= 0 and tr["sst_stream_bytes"] == tr["sst_estimate_bytes"] + tr["sst_redo_bytes"]
    assert sst["sst_prepare"]["transfer_bytes"] == tr["sst_redo_bytes"]   # the redo the joiner's prepare applies
    got, fresh = tr["sst_parts"], tr["fresh_parts"]   # the joiner's files split, and the node's before the load
    assert got["tables"] > fresh["tables"] and got["tables"] > 0 and got["server"] > 0, (got, fresh)
    assert got["system"] + got["undo"] >= fresh["system"] + fresh["undo"] > 0, (got, fresh)
    copy = tr["sst_copy"]     # the joiner's staging grew while the donor streamed
    assert copy["bytes"] > 1e6 and 0 < copy["busy_s"] <= sst["sst_stream"]["seconds"] and copy["MBps"] > 0, copy
    crash = _kind(out, "node-crash")
    assert crash["detail"][0]["recovered_position"]  # --wsrep-recover found it: IST, not SST
    assert _phases(crash)["wsrep_recover"]["seconds"] > 0
    assert set(result["summary"]["kinds"]) == set(want_transfer)


@pytest.mark.slow
def test_the_real_restarts_reach_the_tables_and_the_findings(galera_run):
    """The stage's own files (not a fixture's) build cluster_restart.csv and its finding."""
    import csv

    from catbench.report.tables import make_tables
    d, out, result, _ = galera_run
    make_tables(d / "out", require=("cluster",), report=REPORT)
    with open(d / "out" / "tables" / "cluster_restart.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["kind"] for r in rows} == {"node-restart-ist", "node-restart-sst", "node-crash"}
    assert {r["acked_lost"] for r in rows} == {"0"}
    answers = [r for r in rows if r["phase"] == "process_start_to_first_answer"]
    assert len(answers) == 3 and all(float(r["seconds"]) > 0 and int(r["n"]) >= 1 for r in answers)
    md = (d / "out" / "tables" / "summary.md").read_text()
    assert "Acknowledged inserts lost: 0 of" in md and "t1" in md


@pytest.mark.slow
def test_no_acknowledged_insert_lost_and_all_nodes_agree(galera_run):
    d, out, result, _ = galera_run
    total = 0
    for kind in ("node-restart-ist", "node-restart-sst", "node-crash"):
        data = _kind(out, kind)
        ver = data["verify"][0]
        assert ver["checksums_equal"] and ver["acked_lost"] == 0 and not ver["failed"], ver
        assert ver["acked_inserts"] > total  # the workload kept inserting through every restart
        total = ver["acked_inserts"]
        for node, v in ver["nodes"].items():
            assert v["index_intact"] and v["index_rows"] == 12_000, (node, v)
            assert v["inserted_rows"] >= ver["acked_inserts"] and v["phantom_rows"] == 0, (node, v)
        assert all(r["acked_lost"] == 0 and r["checksums_equal"] for r in data["rows"])
    assert result["summary"]["rows_lost_total"] == 0


@pytest.mark.slow
def test_lookups_and_inserts_are_measured_per_window(galera_run):
    d, out, result, _ = galera_run
    for kind in ("node-restart-ist", "node-restart-sst", "node-crash"):
        load = _kind(out, kind)["load"]
        during = {r["node"]: r for r in load if r["window"] == "during"}
        assert during["node3"]["role"] == "restarted" and during["node3"]["lookups_failed"] > 0
        assert during["node1"]["lookups_ok"] > 0 and during["node2"]["lookups_ok"] > 0
        assert "insert" in during["node1"]["role"].split("+")
        before = next(r for r in load if r["window"] == "before" and r["node"] == "node1")
        assert before["insert_rows"] > 0 and before["inserts_per_s"] > 0


@pytest.mark.slow
def test_only_loopback_listeners_and_nothing_left(galera_run):
    d, out, result, seen = galera_run
    assert seen and {ip for ip, _ in seen} == {"127.0.0.1"}, seen
    assert not left_behind(d)
    for kind in ("node-restart-ist", "node-restart-sst", "node-crash"):
        assert all(x["address"] == "127.0.0.1" for x in _kind(out, kind)["detail"][0]["listeners"])
    assert sorted(p.name for p in out.glob("node*-error.log")) == ["node1-error.log", "node2-error.log",
                                                                    "node3-error.log"]
    assert not any((d / "target").glob("catbench-*/data"))  # the nodes' data is removed


def test_a_cluster_of_one_node_is_refused_naming_the_key(tmp_path):
    files = indexinput.write_files(tmp_path / "in", "bigint", 1, 10)
    with pytest.raises(ConfigError, match=r"config key 'cluster\.nodes': 1 .*minimum of 2"):   # the key, value, bound
        run_cluster("t1", tmp_path / "target", files, tmp_path / "out", cluster_spec({"nodes": 1}, None))
    assert not (tmp_path / "target").exists()


def test_a_target_without_room_for_every_nodes_copy_is_refused(tmp_path):
    files = indexinput.write_files(tmp_path / "in", "bigint", 1, 10)
    with tmpfs("300M") as small:
        with pytest.raises(ClusterError, match=r"config key 'cluster.nodes'.*targets.t1.path.*full copy"):
            run_cluster("t1", small, files, tmp_path / "out", cluster_spec({**SMALL, "gcache_size": "64M"}, None))
        assert not list(small.glob("catbench-*")) and not left_behind(small)


def test_a_port_already_taken_is_named_with_its_key(tmp_path):
    files = indexinput.write_files(tmp_path / "in", "bigint", 1, 10)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        taken = s.getsockname()[1]
        # the key, the port, the node and its use, the address
        with pytest.raises(ClusterError, match=rf"config key 'cluster\.base_port': port {taken} \(node1 .*\) "
                                               r"on 127\.0\.0\.1 .*in use"):
            run_cluster("t1", tmp_path / "target", files, tmp_path / "out",
                        cluster_spec({**SMALL, "base_port": taken}, None))
    assert not left_behind(tmp_path) and not list((tmp_path / "target").glob("catbench-*/data"))


@pytest.mark.skipif(os.geteuid() != 0, reason="rsync works for an ordinary user")
def test_rsync_as_root_is_refused_before_anything_starts(tmp_path):
    files = indexinput.write_files(tmp_path / "in", "bigint", 1, 10)
    with pytest.raises(ClusterError, match=r"config key 'cluster\.sst_method': rsync\b.*\broot\b"):
        run_cluster("t1", tmp_path / "target", files, tmp_path / "out",
                    cluster_spec({**SMALL, "sst_method": "rsync"}, None))
    assert not (tmp_path / "target").exists()


@pytest.mark.slow
def test_sigterm_during_the_sst_stops_every_node_and_helper(tmp_path):
    root = Path(tempfile.mkdtemp(prefix="cbst-", dir="/tmp"))
    try:
        indexinput.write_files(root / "in", "bigint", 4, 1000)
        out, logf = root / "out", root / "job.log"
        cfg = {"cluster": {**SMALL, "kinds": ["node-restart-sst"], "load": {**SMALL["load"], "down_s": 0}}}
        env = {**os.environ, "PATH": f"{REPO / '.venv' / 'bin'}:{os.environ.get('PATH', '')}"}
        with open(logf, "w") as lf:
            job = subprocess.Popen(["catbench", "cluster", "--target", "t1", "--path", str(root / "target"),
                                    "--input-dir", str(root / "in"), "--out", str(out), "--config", json.dumps(cfg)],
                                   stdout=lf, stderr=subprocess.STDOUT, env=env)
        try:
            deadline = time.monotonic() + 120
            while "down; starting it again" not in logf.read_text() and time.monotonic() < deadline:
                assert job.poll() is None, logf.read_text()[-3000:]
                time.sleep(0.1)
            cnf = (root / "target" / "catbench-cluster-bigint-node3" / "my.cnf").read_text()
            ports = {int(x) for x in re.findall(r"127\.0\.0\.1:(\d+)", cnf)}
            time.sleep(2)  # the joiner is mid-SST: its socat listens, the donor sleeps or streams
            job.send_signal(signal.SIGTERM)
            rc = job.wait(120)
        finally:
            if job.poll() is None:
                job.kill()
        assert rc != 0, logf.read_text()[-3000:]
        assert not left_behind(root), left_behind(root)
        assert not listening(ports), listening(ports)
        err = json.loads((out / "node-restart-sst.error.json").read_text())
        assert err["interrupted"] is True
        assert not (out / "summary.json").exists()
    finally:
        shutil.copy(root / "job.log", "/tmp/cbproto/sigterm_job.log") if os.environ.get("CB_KEEP") else None
        shutil.rmtree(root, ignore_errors=True)


def test_wsrep_options_stay_catbench_own(tmp_path):
    # the user's settings may not touch Galera or the ports; catbench's own options go in
    # as the server's trusted internal options, after the user's, [sst] as a group of its own
    from catbench.core.infra.config import validate
    from catbench.core.server.process import Server
    with pytest.raises(ConfigError, match=r"config key 'cluster.settings.wsrep_provider_options'"):
        validate({**yaml_config(), "cluster": {"settings": {"wsrep_provider_options": "gmcast.listen_addr=0"}}})
    srv = Server("n", tmp_path / "n", {"innodb_buffer_pool_size": "64M"})
    srv.internal = {"wsrep_on": "ON", "wsrep-new-cluster": None, "sst": {"sockopt": '",bind=127.0.0.1"'}}
    text = srv.render_config()
    assert text.index("innodb_buffer_pool_size=64M") < text.index("wsrep_on=ON") < text.index("[sst]")
    assert "\nwsrep-new-cluster\n" in text and text.rstrip().endswith('sockopt=",bind=127.0.0.1"')


def yaml_config() -> dict:
    import yaml
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def test_galera_log_lines_name_the_transfer():
    from catbench.restart.cluster import galera_log as gl
    lines = [
        (1.0, "2026-11-23  7:17:04 0 [Note] Starting MariaDB 10.11.19-MariaDB as process 19521"),
        (2.0, "2026-11-23  7:17:05 0 [Note] WSREP: Shifting OPEN -> PRIMARY (TO: 3008)"),
        (2.5, "2026-11-23  7:17:07 2 [Note] WSREP: ####### IST uuid:00000000-0000-0000-0000-000000000000 f: 0, "
              "l: 3008, STRv: 3"),
        (2.6, "2026-11-23  7:17:07 0 [Note] WSREP: Member 2.0 (node3) requested state transfer from '*any*'. "
              "Selected 1.0 (node2)(SYNCED) as donor."),
        (2.7, "2026-11-23  7:17:07 0 [Note] WSREP: Shifting PRIMARY -> JOINER (TO: 3008)"),
        (9.0, "2026-11-23  7:17:19 3 [Note] WSREP: SST received"),
        (9.5, "2026-11-23  7:17:19 0 [Note] InnoDB: log sequence number 637251; transaction id 4048"),
        (9.6, "2026-11-23  7:17:19 0 [Note] WSREP: Receiving IST... 100.0% (60/60 events) complete."),
        (9.9, "2026-11-23  7:17:19 0 [Note] WSREP: Shifting JOINED -> SYNCED (TO: 3008)"),
    ]
    ev = gl.scan(lines)
    assert [e.name for e in ev] == ["process_start", "primary", "ist_range", "donor_selected", "joiner",
                                    "sst_received", "engine_ready", "ist_events", "synced"]
    assert gl.transfer_kind(ev) == "SST" and gl.donor_name(ev) == "node2" and gl.ist_writesets(ev) == 60
    ist = [(1.0, "x WSREP: ####### IST uuid:d20a9d22-e70d-11f1-982d-5271bf543d01 f: 2006, l: 3007, STRv: 3"),
           (2.0, "x WSREP: Receiving IST: 1002 writesets, seqnos 2006-3007")]
    ev = gl.scan(ist)
    assert gl.transfer_kind(ev) == "IST" and gl.ist_writesets(ev) == 1002


def test_the_listeners_the_kernel_reports_are_those_of_proc_net():
    # the sampler asks the kernel's socket diagnostics; /proc/net/tcp and tcp6 say the same of
    # this test's own listeners (v4 and v6), known by their inodes
    with socket.socket() as v4, socket.socket(socket.AF_INET6) as v6:
        v4.bind(("127.0.0.1", 0))
        v6.bind(("::1", 0))
        v4.listen()
        v6.listen()
        ours = {os.fstat(s.fileno()).st_ino: (host, s.getsockname()[1]) for s, host in ((v4, "127.0.0.1"), (v6, "::1"))}
        got, proc = listening_sockets(), proc_net_listeners()
    assert {i: got.get(i) for i in ours} == {i: proc.get(i) for i in ours} == ours
