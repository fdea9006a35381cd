"""Initialised datadirs kept to copy (``CATBENCH_DATADIR_TEMPLATES``, a folder; unset: none).
``mariadb-install-db`` bootstraps a server to write the system tables: ~0.4 s of CPU a private
server, where a copy of the same files takes ~0.05. Where many short-lived servers start with
the same binary, settings and authentication (a test suite's), the first one's fresh datadir is
kept under a key of those, and the next ones copy it. A template is taken before its server
ever starts; a copy that fails leaves nothing and the server is initialised as without it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
from pathlib import Path

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


def initialise_from_template(srv, install) -> bool:
    """Fill ``srv.datadir`` from the template of its key, or run ``install()`` and keep what it
    wrote as that template; False where no template folder is set (``install`` not run)."""
    root = os.environ.get(ENV)
    if not root or not srv.mariadb:
        return False
    root = Path(root)
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = _key(srv)
    tpl = root / key
    with open(root / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)    # one install a key; the others wait and copy
        if not (tpl / "mysql").is_dir():
            install()
            part = root / f"{key}.partial-{os.getpid()}"
            shutil.rmtree(part, ignore_errors=True)
            try:
                _copy(srv.datadir, part)
                part.rename(tpl)
            except OSError:
                shutil.rmtree(part, ignore_errors=True)   # no template this time; the server has its datadir
            return True
    try:
        _copy(tpl, srv.datadir)
        (srv.basedir / "install.log").write_text(f"copied from the initialised datadir {tpl} ({ENV})\n")
    except OSError:
        shutil.rmtree(srv.datadir, ignore_errors=True)   # e.g. a full target: the install says so itself
        srv.datadir.mkdir(parents=True, exist_ok=True)
        install()
    return True
