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
from support.faultkit import ENV, RUN, scratch_dirs, snakemake_cmd, tiny_config

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
        with pytest.raises(TargetError, match=r"being written by another live job .*left untouched"):
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
            opened = [os.readlink(f) for f in (proc / "fd").iterdir()]
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
@pytest.mark.parametrize("umask", [0o000, 0o077])
def test_a_whole_run_passes_whatever_the_umask(tmp_path, umask):
    """Every stage of the tiny config under a careless and a strict umask; no server ever read
    the system's files (its error log would name /var/lib/mysql)."""
    with scratch_dirs() as (disk, _):
        tiny_config(tmp_path, {"disk": disk})
        r = subprocess.run(snakemake_cmd(tmp_path), env=ENV, capture_output=True, text=True, timeout=900,
                           preexec_fn=lambda: os.umask(umask))
        assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-4000:])
        logs = [p for p in (tmp_path / "results" / RUN / "logs").rglob("*.log")] + list(disk.rglob("*.log"))
        said = [p for p in logs if re.search(r"/var/lib/mysql|World-writable config", p.read_text(errors="replace"))]
        assert logs and not said, said
        assert (tmp_path / "results" / RUN / "report" / "index.html").is_file()


@pytest.mark.parametrize("said", [
    "1005 (HY000): Can't create table `catbench`.`bigint_sorted` (errno: 135 \"No more room in record file\")",
    "3 (HY000): Error writing file './ddl_recovery.log' (Errcode: 28 \"No space left on device\")"])
def test_a_statement_that_failed_on_a_full_disk_is_named_so(tmp, said):
    """What MariaDB says when CREATE TABLE meets a full disk: the first line says out of space."""
    from catbench.core.server.tools import out_of_space
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
