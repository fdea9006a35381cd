"""One private server for one job on one target: the only place that decides where a
server lives, who owns it, what a new one removes and what a finished one leaves.

``private_server`` takes ``<target>/catbench-<name>/`` for the job: an exclusive lock
(``flock``) on ``catbench-<name>.lock`` beside it marks the directory as owned by a live
process, so a second job (another run, checkout or user with the same run name) fails at
once naming the owner instead of stopping the first job's server. Only with the lock
held are a leftover server and the previous directory removed. The socket moves to
``/tmp`` when the target path is too long for a unix socket. On every exit path the
server is stopped; its data and tmpdir are removed unless ``keep_data`` (a failed job
keeps its error log and config for diagnosis).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import shutil
import socket as socketlib
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..infra.files import dir_bytes
from ..infra.settings import ServerError
from ..infra.targets import check_target, open_lock, server_bytes
from .address import SOCKET_PATH_MAX
from .loaddata import LoadError
from .process import Launch, Server
from .scratch import own_folder

log = logging.getLogger(__name__)


@contextlib.contextmanager
def owned_dir(basedir: Path, target: str):
    """Hold ``<basedir>.lock`` exclusively for the body; ServerError naming the owner if
    another live process holds it."""
    fd = open_lock(basedir.with_name(basedir.name + ".lock"))
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(fd, 4096, 0).decode(errors="replace").strip() or "(unknown)"
            raise ServerError(
                f"target {target}: {basedir} is in use by another live job ({owner}); it was left "
                f"untouched. Wait for that job, or give this run another name (config key 'run')"
            ) from None
        me = {"pid": os.getpid(), "host": socketlib.gethostname(), "cwd": os.getcwd(),
              "command": " ".join(sys.argv[:3]), "since": time.strftime("%Y-%m-%dT%H:%M:%S")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me).encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock; the file stays (removing it would race a new owner)


def _socket_path(basedir: Path) -> tuple[Path, Path | None]:
    sock = basedir / "mysqld.sock"
    if len(os.fsencode(str(sock))) <= SOCKET_PATH_MAX:
        return sock, None
    sock_dir = Path(tempfile.mkdtemp(prefix="cb-", dir="/tmp"))  # socket I/O is not what we measure
    return sock_dir / "mysqld.sock", sock_dir


def _stop(srv: Server):
    if srv.running:
        try:
            srv.stop(timeout=120)
        except Exception:  # noqa: BLE001 - never leave a server behind
            srv.kill()
    srv.cleanup_stale()  # a killed server's pid and socket files go too


def server_dir(root, name: str) -> Path:
    return Path(root).absolute() / f"catbench-{name}"


def execute_alone(srv, sql: str) -> None:
    """``sql`` on a connection of its own, closed whatever happens (a DROP between
    repetitions, a KILL QUERY from beside a running statement)."""
    conn = srv.connect()
    try:
        conn.cursor().execute(sql)
    finally:
        conn.close()


def load_server(variant: str, engine: str, strategy: str) -> str:
    """The private server's name (its folder: ``server_dir``) of one load of the index."""
    return f"load_index-{variant}-{engine}-{strategy}"


def restart_server(variant: str) -> str:
    """The private server's name of a restart job."""
    return f"restart-{variant}"


@dataclass(frozen=True)
class Datadir:
    """What becomes of a private server's data: ``keep`` it afterwards (--keep-data);
    ``reuse`` the previous directory's data (started again, not removed: a resumed load);
    keep it when the job fails (``keep_on_failure``: the re-run resumes, unless the job
    failed with a LoadError)."""
    keep: bool = False
    reuse: bool = False
    keep_on_failure: bool = False


@contextlib.contextmanager
def private_server(target: str, root, name: str, settings: dict | None = None, launch: Launch | None = None, *,
                   data: Datadir = Datadir(), start: bool = True, data_bytes: int = 0):
    """A fresh private server in ``<root>/catbench-<name>``, started as ``launch`` says; yields
    the Server, started (initialised first) unless ``start=False`` (then the body starts and
    stops it, and the session still stops it on exit). The target must have room for
    ``data_bytes`` plus what the server itself takes with these settings (redo log, datadir),
    checked before anything is created. ``data``: what becomes of its data."""
    keep_data, reuse, keep_on_failure = data.keep, data.reuse, data.keep_on_failure
    basedir = server_dir(root, name)
    own_folder(basedir, f"targets.{target}.path", make=False)   # before it is removed or entered
    with owned_dir(basedir, target):
        sock, sock_dir = _socket_path(basedir)
        srv, ok = None, False
        try:
            srv = Server(target, basedir, settings, launch, socket_path=sock)
            srv.cleanup_stale()
            srv.remove_tmpdir(left=True)
            if reuse and srv.initialized:
                log.info("target %s: resuming with the interrupted run's data in %s", target, basedir)
            elif basedir.exists():
                log.info("target %s: removing the previous run's %s", target, basedir)
                shutil.rmtree(basedir)
            # a resumed server's files are already there: only the rest must still fit
            kept = dir_bytes(basedir) if reuse and srv.initialized else 0
            check_target(target, root, max(0, data_bytes + server_bytes(settings or {}) - kept))
            if start:
                with srv:
                    yield srv
            else:
                try:
                    yield srv
                finally:
                    _stop(srv)
            ok = True
        except LoadError:  # wrong input or a wrong load: a re-run would fail the same way
            keep_on_failure = False
            raise
        finally:
            if srv is not None:
                _stop(srv)
            if sock_dir:
                shutil.rmtree(sock_dir, ignore_errors=True)
            if srv is not None and not keep_data:
                srv.remove_tmpdir()
                if ok:   # its config first: a folder that still has my.cnf was not half removed by a kill
                    srv.config_file.unlink(missing_ok=True)
                    shutil.rmtree(basedir, ignore_errors=True)
                elif keep_on_failure:
                    log.warning("target %s: the server's data stays in %s: re-run the same job to resume "
                                "the load, or remove that directory", target, basedir)
                else:  # a failed job keeps its error log and config for diagnosis, not the data
                    shutil.rmtree(srv.datadir, ignore_errors=True)
