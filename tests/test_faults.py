"""Fault injection on the real workflow and CLI (real snakemake, real MariaDB servers, real
signals, a real size-limited tmpfs): interruptions, a server killed from outside, a full
target, stale pid/socket files, a taken TCP port, a missing or too old server binary, bad
data and bad target configs. Every test cleans up its servers, mounts and directories."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from catbench.core.server.process import Launch, Server
from support.faultkit import (
    LOAD_DIR,
    QUERY_DIR,
    RUN,
    catbench,
    copy_workdir,
    fingerprint,
    finished_before,
    incomplete_marked,
    scratch_dirs,
    snakemake,
    start_snakemake,
    start_with_server_up,
    stop_run,
    tiny_config,
    wait_no_jobs,
    wait_server_up,
)
from support.servers import server_procs, tmpfs, wait_no_servers
from support.shared_run import shared_tiny_run

pytestmark = [pytest.mark.slow, pytest.mark.server]

RES = f"results/{RUN}"
LOAD_OUT = f"{RES}/load/disk/bigint/innodb/one-file-at-a-time"
QUERY_OUT = f"{RES}/queries/disk/mysql"
LOAD_LOG = f"{RES}/logs/load/disk-bigint-innodb-one-file-at-a-time.log"
QUERY_LOG = f"{RES}/logs/queries/disk-mysql.log"


@dataclass
class Baseline:
    wd: Path
    disk: Path
    fp: dict


@pytest.fixture(scope="module")
def baseline():
    """The session's uninterrupted tiny run (every stage;
    support/shared_run.py): the reference every recovered run must match, and the finished
    workdir the other tests copy so that only the stages under test run again."""
    run = shared_tiny_run()
    fp = run["fp"]
    assert fp["load"] and fp["chunks"] and len(fp["queries"]) == 2, fp.keys()
    assert all(v[3] for v in fp["load"].values())
    assert not server_procs(run["disk"])
    return Baseline(run["wd"], run["disk"], fp)


def _fresh_copy(baseline: Baseline, wd: Path, disk: Path, **sections) -> Path:
    """The finished baseline with a new target directory: target_info, the load and the
    mysql queries run again, the catalog and partition do not."""
    copy_workdir(baseline.wd, wd)
    tiny_config(wd, {"disk": disk}, **sections)
    return wd


# ---- interruptions ------------------------------------------------------------------------

STAGES = [
    # (snakemake target, server dir on the target, job log, job output)
    ("load_index", LOAD_DIR, LOAD_LOG, LOAD_OUT),
    ("queries", QUERY_DIR, QUERY_LOG, QUERY_OUT),
]


# Each signal on the run the one before cut short (Ctrl-C, then a batch system's SIGTERM on the
# attempt after): the second attempt starts from what the first left; one re-run after both.
SIGNALS = (signal.SIGINT, signal.SIGTERM)


@pytest.mark.parametrize("group,stages", [
    (True, STAGES),        # the whole foreground process group: Ctrl-C in the terminal; kill -TERM -<pgid>,
                           # timeout(1), systemd, a batch system
    # To snakemake alone (kill -INT / kill <snakemake pid>): what it does with the signal (stop its
    # jobs, or let them finish) is the same for any job, and both stages' servers are held above.
    (False, STAGES[:1]),
], ids=["group", "snakemake"])
def test_interrupt_during_load_index_and_queries_then_resume(baseline, tmp_path, group, stages):
    """Signal snakemake while a load_index job and then a queries job has its server up, SIGINT
    and then SIGTERM on the next attempt: within 30 s no server is left, the job's output is
    absent or flagged incomplete (or, when the signal let the job finish, complete and correct),
    and a --rerun-incomplete run finishes with the checksums of the uninterrupted run."""
    with scratch_dirs() as (disk, _):
        wd = _fresh_copy(baseline, tmp_path / "wd", disk)
        for target, server_dir, job_log, out_rel in stages:
            for sig in SIGNALS:
                _interrupt(wd, disk, target, server_dir, job_log, out_rel, sig, group)
        # The stage outputs are named too: when the interrupted job failed (SIGTERM to the
        # group) Snakemake deleted its output, and the stage's summary file left by the
        # earlier complete run would otherwise hide that (see test_server_killed_during_load_index).
        snakemake(wd, "load_index", "queries", LOAD_OUT, QUERY_OUT, "--rerun-incomplete")
        assert fingerprint(wd) == baseline.fp
        assert not server_procs(disk)


def _interrupt(wd: Path, disk: Path, target: str, server_dir: str, job_log: str, out_rel: str, sig, group: bool):
    """One attempt of ``target`` cut short by ``sig`` once its server is up, and what it left."""
    proc = start_with_server_up(wd, disk / RUN / server_dir, job_log, target, out_rel, f"{target}-{sig.name}.out")
    try:
        time.sleep(0.3)  # mid-job: loading / lookups / queries
        if group:
            os.killpg(proc.pid, sig)
        else:
            os.kill(proc.pid, sig)
        t0 = time.monotonic()
        left = wait_no_servers(disk, 30)
        assert not left, f"servers still running {time.monotonic() - t0:.0f} s after " \
                         f"{sig.name}: {[p.pid for p in left]}"
        proc.wait(60)
        jobs = wait_no_jobs(wd, 30)
        assert not jobs, f"jobs still running: {[p.cmdline() for p in jobs]}"
    finally:
        stop_run(proc)
    out = wd / out_rel
    # snakemake exits non-zero: the run was cut short
    assert proc.returncode != 0, (wd / f"{target}-{sig.name}.out").read_text()[-3000:]
    if out.exists() and not incomplete_marked(wd, out_rel):
        # only a signal to snakemake alone lets the running job finish (SIGTERM: "graceful"),
        # or the job ended before the signal (a load resuming from the attempt before ends
        # fast); the output is then the real, complete one (the re-run's checksums below)
        console = (wd / f"{target}-{sig.name}.out").read_text()
        assert (not group and sig == signal.SIGTERM) or finished_before(console, out_rel), \
            f"{out_rel} survived {sig.name} as complete"
        assert (out / "summary.json").exists()
        shutil.rmtree(out)      # the next signal's attempt then has a job to cut short
    # no half-written result directory of the job is left beside it
    assert not list(out.parent.glob(f".{out.name}.partial-*"))
    # the server dir keeps at most the logs and config of the interrupted server; a
    # file-by-file load also its data and resume.json, for the re-run to resume
    sdir = disk / RUN / server_dir
    if sdir.exists() and group:
        # a load that finished may be killed while its server folder is removed (my.cnf
        # first): what is left the re-run removes and loads afresh (checked after the re-run)
        if target == "load_index" and (sdir / "data").exists() and (sdir / "my.cnf").exists():
            assert (sdir / "resume.json").exists(), sorted(p.name for p in sdir.iterdir())
        elif target != "load_index":
            assert not (sdir / "data").exists(), sorted(p.name for p in sdir.iterdir())


def test_server_killed_during_load_index(baseline, tmp_path):
    """SIGKILL the job's mariadbd mid-load: the job fails naming the target, the exit signal
    and the server's error-log tail; nothing complete-looking is left; a re-run recovers."""
    with scratch_dirs() as (disk, _):
        wd = _fresh_copy(baseline, tmp_path / "wd", disk)
        proc = start_snakemake(wd, "load_index")
        try:
            pid = wait_server_up(disk / RUN / LOAD_DIR, wd / LOAD_LOG, proc=proc)
            os.kill(pid, signal.SIGKILL)   # at once: the tiny load can end within a fraction of a second
            proc.wait(120)
        finally:
            stop_run(proc)
        assert proc.returncode != 0
        log = (wd / LOAD_LOG).read_text()
        error_log = disk / RUN / LOAD_DIR / "error.log"
        assert "target disk: the server" in log and "died during the stage" in log, log[-3000:]
        assert "killed by signal 9" in log, log[-3000:]
        assert f"last lines of {error_log}" in log, log[-3000:]
        assert "ready for connections" in log  # a line of the error log's tail
        assert "Traceback" not in log, log[-3000:]
        assert not (wd / LOAD_OUT).exists()
        assert not list((wd / LOAD_OUT).parent.glob(".one-file-at-a-time.partial-*"))
        # the one-file-at-a-time load keeps its server's data and ledger for the re-run to resume
        assert error_log.exists() and all(s in log for s in (LOAD_DIR, "re-run", "resume")), log[-3000:]
        resumable = (disk / RUN / LOAD_DIR / "resume.json").exists()  # the kill came after the load began
        # What a plain re-run plans: the failed job's output is gone while
        # load/comparison.csv of the earlier complete run (the workdir copy) still exists;
        # the stage target lists every load, so the load is redone.
        dry_run = snakemake(wd, "-n", "load_index", "--rerun-incomplete")
        assert "Nothing to be done" not in dry_run.stdout + dry_run.stderr
        assert "load_index_run" in dry_run.stdout + dry_run.stderr
        snakemake(wd, "load_index", "--rerun-incomplete")
        if resumable:  # InnoDB's crash recovery kept the ledger's files
            assert "resuming after" in (wd / LOAD_LOG).read_text()
        assert fingerprint(wd)["load"] == baseline.fp["load"]
        assert not server_procs(disk)
        assert not (disk / RUN / LOAD_DIR).exists()


# ---- a target that is (or becomes) too small ----------------------------------------------

def test_full_target_fails_its_jobs_and_other_targets_finish(baseline, tmp_path):
    """A 40M tmpfs as one target: its first job (target_info) fails before any server
    starts there, naming the target and the space it has and needs; with --keep-going the
    other target's loads and queries finish; nothing on the small target looks complete."""
    with scratch_dirs() as (disk, _), tmpfs("40M") as small:
        wd = tmp_path / "wd"
        copy_workdir(baseline.wd, wd)      # the catalog and partition done: the targets' jobs run
        tiny_config(wd, {"disk": disk, "small": small})
        r = snakemake(wd, "--keep-going", "load_index", "queries", check=False)
        out = r.stdout + r.stderr
        assert r.returncode != 0
        log = (wd / "results" / RUN / "logs/targets/small.log").read_text()
        assert "storage target 'small'" in log and "free but this step needs" in log, log[-3000:]
        # the console names the failed job, its first error line and its log
        failed = [ln for ln in r.stderr.splitlines() if ln.startswith("catbench: ") and " failed: " in ln]
        assert any("storage target 'small'" in ln and "logs/targets/small.log" in ln for ln in failed), out[-3000:]
        res = wd / "results" / RUN
        assert (res / "load/disk/bigint/innodb/one-file-at-a-time/summary.json").exists(), out[-3000:]
        assert (res / "queries/disk/mysql/summary.json").exists(), out[-3000:]
        assert not (res / "load/small").exists() and not (res / "queries/small").exists()
        assert not (res / "targets/small.json").exists()
        assert not list(small.rglob("my.cnf")), "a server was set up on the full target"
        assert not server_procs(disk) and not server_procs(small)


def test_full_target_cli_stages_refuse_before_starting_a_server(baseline, tmp_path):
    """The stage commands check the space themselves (targets on SLURM nodes are checked
    there, not at DAG time): load-index and queries on a 40M tmpfs fail naming the target,
    start no server, and leave no output."""
    res = baseline.wd / RES
    cfg = json.dumps(yaml.safe_load((baseline.wd / "config.yaml").read_text()))
    with tmpfs("40M") as small:
        r = catbench("load-index", "--target", "small", "--path", small / RUN, "--input-dir", res / "index/input",
                     "--variant", "bigint", "--out", tmp_path / "load")
        assert r.returncode == 1
        assert "storage target 'small'" in r.stderr and "free but this step needs" in r.stderr, r.stderr
        r = catbench("queries", "--query-engine", "mysql", "--target", "small", "--path", small / RUN, "--results", res,
                     "--config", cfg, "--out", tmp_path / "q")
        assert r.returncode == 1
        assert "storage target 'small'" in r.stderr and "free but this step needs" in r.stderr, r.stderr
        assert not (tmp_path / "load").exists() and not list(tmp_path.glob(".q.partial-*"))
        assert not (tmp_path / "q").exists()
        assert not server_procs(small)


# ---- stale state, ports, binaries ---------------------------------------------------------

def _dead_pid() -> int:
    pid = 4_000_000
    while psutil.pid_exists(pid):
        pid -= 1
    return pid


def test_stale_pid_socket_and_partial_files_are_handled(baseline, tmp_path):
    """A crashed earlier run left pid files (one naming a live, unrelated process: the pid
    was reused), dead sockets and a half-written result dir: the next run removes them,
    leaves the unrelated process alone and finishes with the reference checksums."""
    with scratch_dirs() as (disk, _):
        wd = _fresh_copy(baseline, tmp_path / "wd", disk)
        bystander = subprocess.Popen(["sleep", "300"])
        try:
            for sub, pid in ((LOAD_DIR, bystander.pid), (QUERY_DIR, _dead_pid())):
                d = disk / RUN / sub
                d.mkdir(parents=True)
                (d / "mysqld.pid").write_text(f"{pid}\n")
                s = socket.socket(socket.AF_UNIX)
                s.bind(str(d / "mysqld.sock"))
                s.close()  # the socket file stays, nobody listens
                assert stat.S_ISSOCK((d / "mysqld.sock").stat().st_mode)
            partial = wd / LOAD_OUT
            partial = partial.parent / f".{partial.name}.partial-crashed"
            partial.mkdir(parents=True)
            (partial / "summary.json").write_text("{}")
            snakemake(wd, "load_index", "queries")
            assert bystander.poll() is None, "catbench killed an unrelated process named by a stale pid file"
            log = (wd / LOAD_LOG).read_text()
            assert f"named pid {bystander.pid}, now an unrelated process" in log, log[-2000:]
            assert not partial.exists()
            assert fingerprint(wd) == baseline.fp
        finally:
            bystander.kill()
            bystander.wait()


def test_tcp_port_taken_before_the_server_binds_it(tmp_path):
    """server.tcp: the port is picked free, but another process takes it before the server
    binds it (also possible between two restarts of the cold-query loop): the start is
    retried on a new free port, still on 127.0.0.1 only."""
    with scratch_dirs() as (disk, _):
        s = Server("tcprace", disk / "srv", {"innodb_buffer_pool_size": "32M"}, Launch(tcp=True))
        s.initialize()
        taken = s.port
        assert taken
        thief = socket.socket()
        thief.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        thief.bind(("127.0.0.1", taken))
        thief.listen()
        try:
            s.start()
            try:
                assert s.port != taken
                listening = {(c.laddr.ip, c.laddr.port) for c in psutil.Process(s.pid).net_connections("inet")
                             if c.status == psutil.CONN_LISTEN}
                assert listening == {("127.0.0.1", s.port)}
                assert s.connect().is_connected()
            finally:
                s.stop()
        finally:
            thief.close()
        assert "Address already in use" in (disk / "srv" / "error.log").read_text()


@pytest.mark.parametrize("kind", ["missing", "old", "not-a-server"])
def test_bad_server_binary_fails_the_stage_clearly(baseline, tmp_path, kind):
    """server.binary missing, too old (a script answering 'Ver 5.1') or not a server at all:
    the load job fails before any server starts, naming the binary and what to do."""
    if kind == "missing":
        binary, expect = "/nonexistent/mariadbd", "server binary '/nonexistent/mariadbd' not found"
    else:
        binary = tmp_path / "mysqld"
        line = ("/opt/old/mysqld  Ver 5.1.73 for redhat-linux-gnu on x86_64 (Source distribution)"
                if kind == "old" else "hello")
        binary.write_text(f"#!/bin/sh\necho '{line}'\n")
        binary.chmod(0o755)
        expect = ("is MySQL 5.1.73; catbench needs MySQL >= 8.0" if kind == "old"
                  else "does not look like a MariaDB/MySQL server")
    with scratch_dirs() as (disk, _):
        wd = _fresh_copy(baseline, tmp_path / "wd", disk, server={"binary": str(binary)})
        r = snakemake(wd, "load_index", check=False)
        assert r.returncode != 0
        log = (wd / LOAD_LOG).read_text()
        assert expect in log and "server.binary" in log, log[-2000:]
        assert "Traceback" not in log
        assert not (wd / LOAD_OUT).exists()
        assert not server_procs(disk)


# ---- bad data -----------------------------------------------------------------------------

def _load_cli(input_dir: Path, target: Path, out: Path):
    return catbench("load-index", "--target", "bad", "--path", target, "--input-dir", input_dir,
                    "--variant", "bigint", "--out", out, "--lookup-count", "10", "--optimize-limit-s", "0",
                    "--settings-json", json.dumps({"innodb_buffer_pool_size": "32M"}))


@pytest.mark.parametrize("fault", ["malformed", "duplicate-in-file", "duplicate-across-files"])
def test_bad_index_input_names_file_and_line(baseline, tmp_path, fault):
    src = baseline.wd / RES / "index" / "input"
    inp = tmp_path / "in"
    shutil.copytree(src, inp)
    # input a user brings (no manifest): every line is validated; with the partition
    # stage's manifest the changed file would be refused before (test_partition)
    (inp / "manifest.json").unlink()
    files = sorted(inp.glob("*.tsv"))
    lines1 = files[1].read_text().splitlines(keepends=True)
    if fault == "malformed":
        lines1[4] = lines1[4].replace("\t", "\tx", 1)       # chunkId 'x...'
        expect = [f"{files[1]}: line 5", "chunkId"]
    elif fault == "duplicate-in-file":
        lines1[9] = lines1[2]
        expect = [str(files[1]), "line 10", "line 3", "duplicate key"]
    else:
        key = files[0].read_text().splitlines()[6].split("\t")[0]
        lines1[7] = f"{key}\t{lines1[7].split(chr(9), 1)[1]}"
        expect = [str(files[1]), "line 8", f"{files[0]} line 7", "duplicate key"]
    files[1].write_text("".join(lines1))
    with scratch_dirs() as (disk, _):
        r = _load_cli(inp, disk, tmp_path / "out")
        assert r.returncode == 1
        for e in expect:
            assert e in r.stderr, (e, r.stderr[-2000:])
        assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.partial-*"))
        assert not server_procs(disk)


def test_empty_index_input_dir(tmp_path):
    (tmp_path / "in").mkdir()
    r = _load_cli(tmp_path / "in", tmp_path / "t", tmp_path / "out")
    assert r.returncode == 1
    assert f"no *.tsv files in {tmp_path / 'in'}" in r.stderr, r.stderr


def _map_cli(baseline, objects: Path, sources: Path, tmp_path: Path):
    cfg = json.dumps(yaml.safe_load((baseline.wd / "config.yaml").read_text()))
    return catbench("partition-map", "--config", cfg, "--objects", objects, "--sources", sources,
                    "--out", tmp_path / "staging", "--groups", "1", "--metrics", tmp_path / "m.json")


@pytest.mark.parametrize("column,value,row", [("decl_PS", 95.0, 17), ("ra_PS", -3.0, 42), ("ra_PS", 720.0, 3)])
def test_out_of_range_coordinates_name_file_and_row(baseline, tmp_path, column, value, row):
    part = baseline.wd / RES / "catalog" / "Object" / "part-00000.parquet"
    t = pq.read_table(part)
    col = t[column].to_numpy().copy()
    col[row] = value
    bad = tmp_path / "part-00000.parquet"
    pq.write_table(t.set_column(t.schema.get_field_index(column), column, pa.array(col)), bad)
    r = _map_cli(baseline, bad, baseline.wd / RES / "catalog" / "Source" / "part-00000.parquet", tmp_path)
    assert r.returncode == 1
    assert str(bad) in r.stderr and f"row {row}" in r.stderr, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "m.json").exists() and not (tmp_path / "staging" / "Object.parquet").exists()


def test_truncated_parquet_names_the_path(baseline, tmp_path):
    part = baseline.wd / RES / "catalog" / "Object" / "part-00000.parquet"
    bad = tmp_path / "part-00000.parquet"
    data = part.read_bytes()
    bad.write_bytes(data[: len(data) // 2])
    r = _map_cli(baseline, bad, baseline.wd / RES / "catalog" / "Source" / "part-00000.parquet", tmp_path)
    assert r.returncode == 1
    assert f"{bad}: not a readable Parquet file" in r.stderr, r.stderr[-2000:]
    assert not (tmp_path / "m.json").exists()


def test_empty_catalog_part(baseline, tmp_path):
    """A catalog part with no rows partitions to nothing; the index step then says the
    catalog has no objects instead of writing empty index files."""
    o = pq.read_table(baseline.wd / RES / "catalog" / "Object" / "part-00000.parquet").slice(0, 0)
    s = pq.read_table(baseline.wd / RES / "catalog" / "Source" / "part-00000.parquet").slice(0, 0)
    pq.write_table(o, tmp_path / "o.parquet")
    pq.write_table(s, tmp_path / "s.parquet")
    r = _map_cli(baseline, tmp_path / "o.parquet", tmp_path / "s.parquet", tmp_path)
    assert r.returncode == 0, r.stderr
    # a map job writes each part's staging files into a dir named after its Object file
    r = catbench("index-input", "--staging", tmp_path / "staging" / "o", "--files", "3", "--out", tmp_path / "i",
                 "--out-char28", tmp_path / "j", "--metrics", tmp_path / "m2.json")
    assert r.returncode == 1
    assert "the catalog has no objects" in r.stderr, r.stderr
    assert not list((tmp_path / "i").glob("*.tsv")) if (tmp_path / "i").exists() else True


def test_a_target_with_the_room_the_run_estimate_asks_is_accepted_by_the_load_job(baseline, tmp_path):
    """One space model: a target with just the room the run-level estimate (printed before the
    run) asks for a load is accepted by that load's own check, which counts a resumed load's
    kept data as already there."""
    from catbench.core.infra.config import validate
    from catbench.load.estimate import estimate
    from catbench.load.spec import EstimateSpec
    cfg = validate(yaml.safe_load((baseline.wd / "config.yaml").read_text()))
    est = estimate(EstimateSpec.of(cfg), baseline.wd / RES)
    job = max((j for j in est["jobs"] if j["job"].startswith("load ")), key=lambda j: j["need_bytes"])
    _, variant, engine, strategy = job["job"].replace("/", " ").split()
    size_mib = job["need_bytes"] // 2**20 + 4
    folder = {"char28": "input_char28", "bigint": "input"}[variant]
    with tmpfs(f"{size_mib}M") as small:
        r = catbench("load-index", "--target", "small", "--path", small / RUN, "--input-dir",
                     baseline.wd / RES / "index" / folder, "--variant", variant, "--engine", engine,
                     "--strategy", strategy, "--config", json.dumps(cfg), "--out", tmp_path / "load")
        assert "free but this step needs" not in r.stderr, (job, r.stderr[-2000:])
        assert r.returncode == 0, r.stderr[-3000:]
        assert not server_procs(small)


ADDRESS_LIMITED = """
import re, resource, sys
from catbench.cli.main import main
import catbench.cli.prepare  # noqa: its libraries (pyarrow, numpy) mapped before the limit
vm = int(re.search(r"VmSize:\\s+(\\d+)", open("/proc/self/status").read()).group(1)) << 10
resource.setrlimit(resource.RLIMIT_AS, (vm + (96 << 20), resource.getrlimit(resource.RLIMIT_AS)[1]))
sys.exit(main(sys.argv[1:]))
"""


def test_an_address_space_limit_is_named_not_a_traceback(tmp_path):
    """Under ulimit -v with too little room for polars' library (177 MB), the patch job that
    formats the rows' text fails in one line naming the limit and what to do, rather than
    polars' "binary is missing" warning and a NameError traceback."""
    import sys
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-c", ADDRESS_LIMITED, "patch", "--config",
                        json.dumps({"run": "x", "seed": 7, "catalog": {"patch": {"objects": 200}}}),
                        "--objects", str(out / "o.parquet"), "--sources", str(out / "s.parquet"),
                        "--metrics", str(out / "m.json"), "--text", str(out / "a"), str(out / "b")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert "catbench patch: error: " in r.stderr and "(ulimit -v, RLIMIT_AS)" in r.stderr, r.stderr[-2000:]
    assert "ulimit -v unlimited" in r.stderr.splitlines()[-1]
