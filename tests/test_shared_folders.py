"""Files catbench writes where other users can write too (/tmp, targets under /var/tmp and
/dev/shm), whatever the umask: never through a symlink another user planted, never into a
folder or file another user owns, never a config the server would ignore, and never another
live job's output removed (docs/faults.md)."""

from __future__ import annotations

import os
import pwd
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from catbench.core.infra.config import ConfigError, validate
from catbench.core.infra.files import staged_output
from catbench.core.infra.jobs.isolation import measuring
from catbench.core.infra.targets import TargetError, open_lock
from catbench.core.server.process import Server
from support.faultkit import RUN
from support.shared_run import shared_tiny_run

NOBODY = pwd.getpwnam("nobody")


def _as_nobody(*argv: str):
    subprocess.run(list(argv), check=True, user=NOBODY.pw_uid, group=NOBODY.pw_gid, timeout=30)


@pytest.fixture
def shared(tmp):
    """A sticky, world-writable folder (as /var/tmp), a root-only file in it, and a folder
    ``nobody`` made there with a link to that file under a catbench lock's name."""
    if os.geteuid() != 0:
        pytest.skip("needs root: the planted-link attack is on a root job")
    tmp.chmod(0o1777)
    victim = tmp / "victim.dat"
    victim.write_text("root's own\n")
    victim.chmod(0o600)
    evil = tmp / "evil" / "cbfe"
    _as_nobody("mkdir", "-p", str(evil))
    _as_nobody("ln", "-s", str(victim), str(evil / ".catbench-measure.lock"))
    return tmp, victim, evil


def test_a_target_in_another_users_folder_is_refused_naming_the_key(shared, tmp):
    _, victim, evil = shared
    cfg = {"run": "t", "targets": {"disk": {"path": str(evil)}}}
    with pytest.raises(ConfigError, match=r"'targets.disk.path': .*evil/cbfe belongs to nobody .*other_owner"):
        validate(cfg)
    validate({"run": "t", "targets": {"disk": {"path": str(evil), "other_owner": True}}})
    validate({"run": "t", "targets": {"disk": {"path": str(tmp / "mine")}}})   # root's sticky folder


def test_a_planted_link_is_never_written_through(shared):
    _, victim, evil = shared
    with pytest.raises(TargetError, match=r"\.catbench-measure\.lock is a symbolic link"):
        with measuring("disk", evil):
            pass
    assert victim.read_text() == "root's own\n" and stat.S_IMODE(victim.stat().st_mode) == 0o600


def test_a_lock_file_another_user_owns_is_refused(shared, tmp):
    planted = tmp / "evil" / "cbfe" / "catbench-x.lock"
    _as_nobody("touch", str(planted))
    with pytest.raises(TargetError, match=r"catbench-x\.lock is owned by nobody"):
        open_lock(planted)
    os.close(open_lock(tmp / "mine.lock"))
    assert stat.S_IMODE((tmp / "mine.lock").stat().st_mode) == 0o644


def test_a_live_jobs_partial_output_is_never_removed(tmp):
    out = tmp / "results" / "load"
    with staged_output(out) as first:
        (first / "trace.parquet").write_text("live")
        # the folder, and the other job's partial folder that holds it
        with pytest.raises(TargetError, match=rf"^{re.escape(str(out))} .*live job \({re.escape(str(first))} is held\)"):
            with staged_output(out):
                pass
        assert (first / "trace.parquet").read_text() == "live"
    assert (out / "trace.parquet").read_text() == "live"
    left = out.parent / ".load.partial-killed"      # a killed job's: nobody holds it
    left.mkdir()
    with staged_output(out) as again:
        (again / "x").write_text("")
    assert not left.exists() and (out / "x").exists()


@pytest.mark.server
@pytest.mark.parametrize("umask", [0o000, 0o077])
def test_the_private_server_keeps_to_its_own_files_whatever_the_umask(tmp, umask):
    """Under umask 000 MariaDB would ignore a world-writable my.cnf and start on the system
    datadir; the config is 0644 and the server's paths are on its command line too."""
    old = os.umask(umask)
    try:
        with Server("um", tmp / "srv") as srv:
            assert stat.S_IMODE(srv.config_file.stat().st_mode) == 0o644
            proc = Path(f"/proc/{srv.pid}")
            assert f"--datadir={srv.datadir}" in (proc / "cmdline").read_bytes().decode().split("\0")
            opened = []
            for f in (proc / "fd").iterdir():
                try:
                    opened.append(os.readlink(f))
                except FileNotFoundError:   # closed between the listing and its read
                    pass
            assert opened and not [f for f in opened if f.startswith("/var/lib/mysql")], opened
            with srv.connect() as conn:
                cur = conn.cursor()
                cur.execute("SELECT @@datadir")
                assert cur.fetchone()[0].rstrip("/") == str(srv.datadir)
    finally:
        os.umask(old)
        shutil.rmtree(tmp / "srv", ignore_errors=True)


@pytest.mark.slow
@pytest.mark.server
def test_a_whole_run_passes_under_a_careless_umask():
    """Every stage of the tiny config under umask 000 (the session's shared run), where MariaDB
    ignores a world-writable my.cnf; no server ever read the system's files (its error log would
    name /var/lib/mysql). A strict umask is the server's own test above: every file a job writes
    is its user's."""
    run = shared_tiny_run()     # made under support/shared_run.py's UMASK, 000
    logs = [p for p in (run["wd"] / "results" / RUN / "logs").rglob("*.log")] + list(run["disk"].rglob("*.log"))
    said = [p for p in logs if re.search(r"/var/lib/mysql|World-writable config", p.read_text(errors="replace"))]
    assert logs and not said, said
    assert (run["wd"] / "results" / RUN / "report" / "index.html").is_file()
    assert list((run["wd"] / "results" / RUN / "restart").glob("*/summary.json"))


@pytest.mark.parametrize("said", [
    "1005 (HY000): Can't create table `catbench`.`bigint_sorted` (errno: 135 \"No more room in record file\")",
    "3 (HY000): Error writing file './ddl_recovery.log' (Errcode: 28 \"No space left on device\")"])
def test_a_statement_that_failed_on_a_full_disk_is_named_so(tmp, said):
    """What MariaDB says when CREATE TABLE meets a full disk: the first line says out of space."""
    from catbench.core.server.logs import out_of_space
    line = out_of_space("disk", tmp, tmp / "no-error.log", said=said)
    assert line and line.startswith(f"target disk: out of space on {tmp}")
    assert out_of_space("disk", tmp, said="1146 (42S02): Table 'catbench.x' doesn't exist") is None


@pytest.mark.server
def test_create_table_on_a_full_disk_is_named_and_its_data_not_kept(tmp):
    """A real server on a tmpfs that fills before CREATE TABLE: the load's first line says out of
    space (a LoadError, so its half-made datadir is not kept for a resume)."""
    from catbench.core.server.loaddata import LoadError
    from catbench.load.load_index import _full_disk_named
    from support.servers import tmpfs
    with tmpfs("160m") as d:
        with Server("full", d / "srv", {"innodb_buffer_pool_size": "8M", "innodb_log_file_size": "8M"}) as srv:
            conn = srv.connect()
            filler = d / "filler"
            st = os.statvfs(d)
            with open(filler, "wb") as f:   # every free block, then a little more to be sure
                try:
                    f.write(b"\0" * (st.f_bavail * st.f_frsize))
                    f.flush()
                except OSError:
                    pass
            with pytest.raises(LoadError, match=r"^target disk: out of space on "):
                with _full_disk_named("disk", srv):
                    cur = conn.cursor()
                    cur.execute("CREATE DATABASE IF NOT EXISTS catbench")
                    cur.execute("CREATE TABLE catbench.t (id BIGINT PRIMARY KEY, c INT) ENGINE=InnoDB")
                    cur.execute("INSERT INTO catbench.t SELECT seq, seq FROM seq_1_to_200000")
            conn.close()
            filler.unlink()


# ---- catbench's own folders in a shared targets.<t>.tmpdir ----

def _keys(n0: int, n: int, tmp: Path) -> Path:
    f = tmp / f"in-{n0}.tsv"
    f.write_text("".join(f"{k}\t{k % 7}\t1\n" for k in range(n0 + n - 1, n0 - 1, -1)))
    return f


def _sort(files, tmpdir):
    from catbench.core.index.table import get_variant
    from catbench.load.job import LoadOptions
    from catbench.load.sorted_stream import SortedStream
    opts = LoadOptions(connections=1, transaction_rows=0, batch_files=1, consolidate=False,
                       sort_memory="64MB", sort_threads=1, chunk_rows=2)
    return SortedStream(files, get_variant("bigint"), tmpdir, opts).start()


def _chunk_keys(path: Path) -> list[int]:
    return [int(line.split("\t")[0]) for line in path.read_text().splitlines()]


def test_a_sorted_chunk_on_a_full_disk_is_named_with_its_folder(tmp):
    """A `sorted` or `bulk` load whose sort fills its folder fails with the out-of-space line,
    naming that folder and its free bytes (it ended in a Python traceback: OSError 28 from the
    TSV writer of the sort's thread)."""
    from types import SimpleNamespace

    from catbench.core.server.loaddata import LoadError
    from catbench.load.load_index import _full_disk_named
    from support.servers import tmpfs
    files = [_keys(0, 200_000, tmp)]
    with tmpfs("1m") as small:
        stream = _sort(files, small)
        srv = SimpleNamespace(datadir=tmp / "srv", error_log=tmp / "no-such.log")   # the server's disk is not full
        try:
            with pytest.raises(LoadError, match=rf"^target disk: out of space on {small}/sort-[^/]+/sorted "
                                                 r"\(\d+ MiB free\).*sorted-\d{6}\.tsv"):
                with _full_disk_named("disk", srv):
                    for _ in stream.chunks():
                        pass
        finally:
            stream.close()


@pytest.fixture
def shared_tmpdir(tmp, monkeypatch):
    """A scratch folder anyone may write to (0777, no sticky bit) as the targets' tmpdir, and
    root's own 0700 folder holding files in ``sorted/`` and ``duckdb/`` (as a sort's)."""
    shared, victim = _open_folder_and_victim(tmp, "scratch", 0o777, ("sorted/keep.tsv", "duckdb/keep.tsv"))
    monkeypatch.setenv("CATBENCH_TMPDIR", str(shared))
    return shared, victim


def _open_folder_and_victim(tmp, name: str, mode: int, files) -> tuple:
    """``tmp/name`` anyone may write to (``mode``), and root's own 0700 folder holding ``files``;
    skipped unless root: the planted-link attack is on a root job."""
    if os.geteuid() != 0:
        pytest.skip("needs root: the planted-link attack is on a root job")
    tmp.chmod(0o755)
    public, victim = tmp / name, tmp / "victim"
    public.mkdir()
    public.chmod(mode)
    for f in files:
        (victim / f).parent.mkdir(parents=True, exist_ok=True)
        (victim / f).write_text("root's own\n")
    victim.chmod(0o700)
    return public, victim


@pytest.mark.server
def test_a_link_planted_in_a_shared_tmpdir_is_never_followed(shared_tmpdir, tmp):
    """``nobody`` links the name a server's temporary folder would have had to root's folder: the
    server's config and a sort go to a fresh folder of their own, the victim keeps its mode and
    files, and only catbench's own folder is removed afterwards."""
    from catbench.core.server.session import private_server
    shared, victim = shared_tmpdir
    _as_nobody("ln", "-s", str(victim), str(shared / "catbench-x"))
    with private_server("disk", tmp / "disk", "x", start=False) as srv:
        srv._write_config()
        assert not srv.tmpdir.is_symlink() and srv.tmpdir.parent == shared
        assert stat.S_IMODE(srv.tmpdir.stat().st_mode) == 0o700
        stream = _sort([_keys(1, 5, tmp)], srv.tmpdir)
        assert [k for path, _, _ in stream.chunks() for k in _chunk_keys(path)] == [1, 2, 3, 4, 5]
    assert stat.S_IMODE(victim.stat().st_mode) == 0o700
    assert [(victim / s / "keep.tsv").read_text() for s in ("sorted", "duckdb")] == ["root's own\n"] * 2
    assert sorted(os.listdir(victim)) == ["duckdb", "sorted"]
    assert os.listdir(shared) == ["catbench-x"] and os.readlink(shared / "catbench-x") == str(victim)


@pytest.mark.server
def test_two_jobs_sharing_a_tmpdir_keep_to_their_own_folders(tmp, monkeypatch):
    """Two servers of one name (two runs, two targets) sharing a tmpdir: two folders, and each
    server's end removes its own only."""
    from catbench.core.server.session import private_server
    shared = tmp / "scratch"
    monkeypatch.setenv("CATBENCH_TMPDIR", str(shared))
    with private_server("a", tmp / "a", "x", start=False) as a:
        a._write_config()
        (a.tmpdir / "mine").write_text("a")
        with private_server("b", tmp / "b", "x", start=False) as b:
            b._write_config()
            (b.tmpdir / "mine").write_text("b")
            b_tmp = b.tmpdir
            assert a.tmpdir != b_tmp and f"tmpdir={b_tmp}\n" in b.config_file.read_text()
        assert (a.tmpdir / "mine").read_text() == "a" and not b_tmp.exists()
    assert os.listdir(shared) == []


def test_two_sorts_in_one_tmpdir_keep_to_their_own_chunks(tmp):
    """A sort started while another one's chunks wait to be loaded, in the same tmpdir: each
    stream's chunks hold its own keys, and each stream removes only its own files."""
    first = _sort([_keys(1, 6, tmp)], tmp)
    chunks = first.chunks()
    got = _chunk_keys(next(chunks)[0])
    second = _sort([_keys(101, 6, tmp)], tmp)
    assert [k for path, _, _ in second.chunks() for k in _chunk_keys(path)] == list(range(101, 107))
    got += [k for path, _, _ in chunks for k in _chunk_keys(path)]
    assert got == list(range(1, 7))
    kept = sorted(p for p in tmp.rglob("*.tsv") if p.parent.name == "sorted")
    first.close()
    left = sorted(p for p in tmp.rglob("*.tsv") if p.parent.name == "sorted")
    assert len(kept) == 6 and len(left) == 3 and all(p.exists() for p in left)
    second.close()
    assert not [p for p in tmp.iterdir() if p.is_dir()]


def test_a_temporary_folder_replaced_since_is_neither_used_nor_removed(tmp):
    """Where others may rename catbench's folder away (a 0777 folder without the sticky bit) and
    put a link in its place: the next use fails naming the key, and the link's target stays."""
    from catbench.core.server.scratch import ScratchDir
    from catbench.core.infra.settings import ServerError
    victim = tmp / "victim"
    victim.mkdir()
    (victim / "f").write_text("x")
    d = ScratchDir(tmp / "shared", "catbench-x-")
    p = d.path
    p.rename(tmp / "moved")
    p.symlink_to(victim)
    with pytest.raises(ServerError, match=r"was replaced by a symbolic link since; .*'targets.<target>.tmpdir'"):
        d.path
    d.remove()
    assert (victim / "f").read_text() == "x" and p.is_symlink() and (tmp / "moved").is_dir()


@pytest.mark.server
def test_a_killed_servers_temporary_folder_goes_with_the_next_server_of_its_directory(tmp, monkeypatch):
    from catbench.core.server.session import Datadir, private_server
    shared = tmp / "scratch"
    monkeypatch.setenv("CATBENCH_TMPDIR", str(shared))
    with private_server("disk", tmp / "disk", "x", start=False, data=Datadir(keep=True)) as srv:
        srv._write_config()
        first = srv.tmpdir
    (shared / "catbench-x-other").mkdir()   # not named by this directory's my.cnf: not ours to remove
    with private_server("disk", tmp / "disk", "x", start=False) as srv:
        assert not first.exists()
        srv._write_config()
        assert srv.tmpdir != first
    assert os.listdir(shared) == ["catbench-x-other"]


@pytest.mark.parametrize("plant", ["link", "folder"])
def test_a_server_folder_planted_in_a_target_others_write_to_is_left_alone(tmp, plant):
    """A target in a folder others may write to (``/tmp``): ``nobody`` links (or makes) the name of
    a server's folder, ``<target>/catbench-<name>``, before root's job: the job fails naming the
    target's key; root's folder keeps its mode and files, the planted name stays."""
    from catbench.core.server.session import private_server
    from catbench.core.infra.settings import ServerError
    target, victim = _open_folder_and_victim(tmp, "public", 0o1777, ("keep.txt",))
    planted = target / "catbench-x"
    if plant == "link":
        _as_nobody("ln", "-s", str(victim), str(planted))
    else:
        _as_nobody("mkdir", str(planted))
    with pytest.raises(ServerError, match=rf"{planted} is (a symbolic link|another user's folder).*'targets.disk.path'"):
        with private_server("disk", target, "x", start=False) as srv:
            srv._write_config()
    assert stat.S_IMODE(victim.stat().st_mode) == 0o700 and os.listdir(victim) == ["keep.txt"]
    assert planted.is_symlink() if plant == "link" else os.listdir(planted) == []
