"""A fresh datadir's system tables: written by ``mariadb-install-db`` (MySQL:
``--initialize-insecure``), or copied from an initialised datadir kept for it
(``CATBENCH_DATADIR_TEMPLATES``, a folder; unset: none). The install bootstraps a server: ~0.4 s
of CPU a private server, where a copy of the same files takes ~0.05. Where many short-lived servers start with
the same binary, settings and authentication (a test suite's), the first one's fresh datadir is
kept under a key of those, and the next ones copy it. A template is taken before its server
ever starts; a copy that fails leaves nothing and the server is initialised as without it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from ..infra.settings import ServerError
from .binaries import install_db_tool
from .logs import log_tail as _tail
from .logs import out_of_space as _out_of_space

ENV = "CATBENCH_DATADIR_TEMPLATES"


def _umask() -> str:
    """This process's umask (the modes a fresh install gives its files), read without setting it."""
    try:
        return next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("Umask:"))
    except (OSError, StopIteration):
        return ""


def _key(srv) -> str:
    """What a fresh datadir depends on: the binary, its version, the user and authentication,
    the umask, and the rendered options with this server's own paths and port taken out."""
    text = srv.config_file.read_text()
    for own in sorted({str(srv.basedir), str(srv.socket), str(srv.tmpdir)}, key=len, reverse=True):
        text = text.replace(own, "@")
    if srv.port:
        text = text.replace(f"port={srv.port}", "port=@")
    ident = "\n".join([os.path.realpath(srv.binary), srv.version, srv.auth, srv.user, _umask(), text])
    return hashlib.sha256(ident.encode()).hexdigest()[:24]


CHUNK = 1 << 20


def _sparse_copy(src: str, dst: str) -> str:
    """A file copied with its zero MiBs left as holes: a fresh redo log and system tablespace
    are mostly zeros, which a plain copy would write out for every server."""
    with open(src, "rb") as fi, open(dst, "wb") as fo:
        size = 0
        while chunk := fi.read(CHUNK):
            size += len(chunk)
            if chunk == bytes(len(chunk)):
                fo.seek(len(chunk), os.SEEK_CUR)
            else:
                fo.write(chunk)
        fo.truncate(size)
    shutil.copymode(src, dst)
    return dst


def _copy(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True, copy_function=_sparse_copy)


def install(srv) -> None:
    """The system tables written into ``srv.datadir`` by the server's own tool."""
    install_log = srv.basedir / "install.log"
    user = srv._user_args()
    if srv.mariadb:
        method = "socket" if srv.auth == "socket" else "normal"
        cmd = [install_db_tool(srv.binary), f"--defaults-file={srv.config_file}", *user,
               f"--basedir={Path(srv.binary).resolve().parent.parent}",
               f"--datadir={srv.datadir}", f"--auth-root-authentication-method={method}", "--skip-test-db"]
    else:
        cmd = [srv.binary, f"--defaults-file={srv.config_file}", *user, *srv._own_paths(), "--initialize-insecure"]
    rc = _run_watched(srv, cmd, install_log)
    if rc != 0:
        full = _out_of_space(srv.name, srv.datadir, install_log, srv.error_log,
                             # a full disk keeps its own logs from saying so
                             said="No space left on device" if _free(srv.datadir) < FULL_BYTES else "")
        raise ServerError((full + "\n" if full else "") +
                          f"target {srv.name}: initialising {srv.datadir} failed (exit {rc}); "
                          f"last lines of {install_log} and {srv.error_log}:\n"
                          f"{_tail(install_log)}\n{_tail(srv.error_log)}")


POLL_S = 0.2
GROUP_GONE_S = 10.0     # a killed group's last process reaped by init
FULL_BYTES = 1 << 20     # free bytes under which a waiting install is taken to wait for room
FULL_FOR_S = 1.0         # ... once they have stayed there this long


def _free(path: Path) -> int:
    probe = next((a for a in [path, *path.parents] if a.exists()), path)
    st = os.statvfs(probe)
    return st.f_bavail * st.f_frsize if st.f_blocks else FULL_BYTES * 2   # ramfs reports no size


def _run_watched(srv, cmd: list, install_log: Path) -> int:
    """The install in a process group of its own (the tool is a script that starts the server
    in bootstrap mode); stopped, the whole group, when its target has stayed full (MariaDB
    then waits for room, for ever, and its logs on that disk can say nothing) or past the
    server's start limit (``server.start_timeout_s``, shared with the start that follows:
    ``srv.start_budget``). Returns its exit code; ServerError when it was stopped."""
    limit = srv.start_timeout
    with open(install_log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    t0 = full_since = time.monotonic()
    try:
        while (rc := proc.poll()) is None:
            time.sleep(POLL_S)
            now = time.monotonic()
            if _free(srv.datadir) >= FULL_BYTES:
                full_since = now
            elif now - full_since >= FULL_FOR_S:
                raise ServerError(_out_of_space(srv.name, srv.datadir, said="No space left on device",
                                                who="the server's install") +
                                  f"\ntarget {srv.name}: initialising {srv.datadir} was stopped: it waited for room "
                                  f"to write; last lines of {install_log}:\n{_tail(install_log)}")
            if now - t0 > limit:
                raise ServerError(f"target {srv.name}: initialising {srv.datadir} did not finish within {limit:.0f} s "
                                  f"(config key 'server.start_timeout_s', which the install and the start share); "
                                  f"last lines of {install_log}:\n{_tail(install_log)}")
        return rc
    finally:
        # the group even after the script ended: the server it started in bootstrap mode can
        # outlive it (waiting for room on a full target)
        _kill_group(proc)
        srv.start_budget = max(0.0, limit - (time.monotonic() - t0))


def _kill_group(proc: subprocess.Popen) -> None:
    """Every process of the install's group killed and gone (SIGKILL lands asynchronously)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    deadline = time.monotonic() + GROUP_GONE_S
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(POLL_S / 5)


def initialise(srv) -> None:
    """``srv.datadir`` filled from the template of its key, or installed (and, with a template
    folder set, kept as that key's template before the server first starts)."""
    root = os.environ.get(ENV)
    if not root or not srv.mariadb:
        install(srv)
        return
    root = Path(root)
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = _key(srv)
    tpl = root / key
    with open(root / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)    # one install a key; the others wait and copy
        if not (tpl / "mysql").is_dir():
            install(srv)
            part = root / f"{key}.partial-{os.getpid()}"
            shutil.rmtree(part, ignore_errors=True)
            try:
                _copy(srv.datadir, part)
                part.rename(tpl)
            except OSError:
                shutil.rmtree(part, ignore_errors=True)   # no template this time; the server has its datadir
            return
    try:
        _copy(tpl, srv.datadir)
        (srv.basedir / "install.log").write_text(f"copied from the initialised datadir {tpl} ({ENV})\n")
    except OSError:
        shutil.rmtree(srv.datadir, ignore_errors=True)   # e.g. a full target: the install says so itself
        srv.datadir.mkdir(parents=True, exist_ok=True)
        install(srv)
