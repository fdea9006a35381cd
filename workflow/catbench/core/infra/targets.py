"""Storage targets: check them before any work starts, and describe them for provenance."""

from __future__ import annotations

import errno
import os
import re
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psutil

from .config import estimated_objects, target_dir
from .config.owner import user_name
from .errors import TargetError
from .sizes import human, parse_size  # noqa: F401 - where most callers find them


@dataclass(frozen=True)
class StorageTarget:
    """A job's storage target: its name in the config and the directory on it the job uses."""
    name: str
    path: Path


def open_lock(path) -> int:
    """A lock file's descriptor (read and write, created 0644 when missing), never through a
    symlink and never a file another user owns: the lock files sit in shared folders (/tmp, a
    target under /var/tmp or /dev/shm), where a planted link would make a root job truncate
    whatever it points at. TargetError naming the file otherwise."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise TargetError(f"{path} is a symbolic link (to {os.readlink(path)}); catbench never writes "
                          f"through one: remove it if you did not make it") from exc
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
        os.close(fd)
        what = "not a regular file" if not stat.S_ISREG(st.st_mode) else f"owned by {user_name(st.st_uid)}"
        raise TargetError(f"{path} is {what}; catbench writes its lock files only into its own: "
                          f"remove it if you did not make it")
    return fd


def check_target(name: str, path, need_bytes: int = 0, create: bool = True, why: str = "",
                 key: str = "path") -> dict:
    """Make sure ``path`` (config key targets.<name>.<key>) is a writable directory with
    ``need_bytes`` free (``why``: what needs them, for the message); returns
    describe_target(). ``create=False`` (a dry run) creates nothing: a missing ``path`` is
    judged by its nearest existing parent."""
    p = Path(path)
    where = f"storage target '{name}' ({p})" if key == "path" else f"targets.{name}.{key} ({p})"
    if p.exists() and not p.is_dir():
        raise TargetError(f"{where} is not a directory; point targets.{name}.{key} at a directory")
    missing = not p.exists()
    if missing and not create:
        p = next(a for a in p.absolute().parents if a.exists())  # judged by where it would go
    elif missing:
        try:
            p.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise TargetError(f"{where} does not exist and cannot be created ({exc.strerror}); "
                              f"create it or fix targets.{name}.{key}") from exc
    try:
        if not p.is_dir():
            raise NotADirectoryError(20, "a parent is not a directory")
        with tempfile.NamedTemporaryFile(dir=p, prefix=".catbench-write-test-"):
            pass
    except OSError as exc:
        # os.access() is not enough: root passes it on any mode, only a real write tells.
        if missing and not create:
            raise TargetError(f"{where} does not exist and cannot be created ({p}: {exc.strerror}); "
                              f"create it or fix targets.{name}.{key}") from exc
        raise TargetError(f"{where} is not writable ({exc.strerror}); fix its permissions or mount "
                          f"options, or choose another path") from exc
    st = os.statvfs(p)
    free = st.f_bavail * st.f_frsize
    # f_blocks == 0: the filesystem reports no size at all (ramfs); nothing to check against
    if need_bytes and st.f_blocks and free < need_bytes:
        raise TargetError(f"{where} has {human(free)} free but this step needs {human(need_bytes)}"
                          f"{f' ({why})' if why else ''}; "
                          f"free space there, use a bigger disk or lower the scale in the config")
    return describe_target(p)


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as \ooo
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mount_of(path) -> dict:
    """The /proc/self/mountinfo entry whose mount point holds ``path`` (longest match)."""
    real = os.path.realpath(path)
    best = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.rstrip("\n").partition(" - ")
            lf, rf = left.split(), right.split()
            mnt = _unescape(lf[4])
            inside = real == mnt or real.startswith(mnt.rstrip("/") + "/")
            # later lines win on equal length: the top of a stack of mounts on one point
            if inside and (best is None or len(mnt) >= len(best["mount_point"])):
                best = {"mount_point": mnt, "major_minor": lf[2], "fstype": rf[0],
                        "source": _unescape(rf[1]) if len(rf) > 1 else None,
                        "options": lf[5], "read_only": "ro" in lf[5].split(",")}
    return best or {"mount_point": "/", "major_minor": None, "fstype": None, "source": None,
                    "options": "", "read_only": False}


def _block_name(major: int, minor: int) -> str | None:
    link = Path(f"/sys/dev/block/{major}:{minor}")
    return link.resolve().name if link.exists() else None


def device_for(path) -> str | None:
    """Block device name as in ``psutil.disk_io_counters(perdisk=True)``; None (tmpfs, overlay, NFS...)."""
    known = set((psutil.disk_io_counters(perdisk=True) or {}).keys())
    st = os.stat(path)
    candidates = [_block_name(os.major(st.st_dev), os.minor(st.st_dev))]
    src = mount_of(path)["source"]
    if src and src.startswith("/dev/"):
        # btrfs and friends report an anonymous st_dev; the mount source names the device
        candidates.append(Path(os.path.realpath(src)).name)
    for name in candidates:
        if name and name in known:
            return name
    return None


def _sys_block(dev: str, leaf: str) -> str | None:
    for base in (Path(f"/sys/class/block/{dev}"), Path(f"/sys/class/block/{dev}/..")):
        f = base / leaf
        if f.exists():
            try:
                return f.read_text().strip()
            except OSError:
                return None
    return None


def describe_target(path) -> dict:
    """Filesystem type, device, mount point, total/free bytes of the filesystem holding ``path``."""
    p = Path(path)
    st = os.statvfs(p)
    m = mount_of(p)
    dev = device_for(p)
    return {
        "path": str(p.absolute()),
        "mount_point": m["mount_point"],
        "fstype": m["fstype"],
        "source": m["source"],
        "read_only": m["read_only"],
        "device": dev,
        "rotational": _sys_block(dev, "queue/rotational") if dev else None,
        "model": _sys_block(dev, "device/model") if dev else None,
        "total_bytes": st.f_blocks * st.f_frsize,
        "free_bytes": st.f_bavail * st.f_frsize,
    }


# ---- the run's targets as the workflow sees them ----------------------------------

# The smallest table per index row the estimate knows (load/estimate.md: bigint keys,
# deferred-pk): a target's first job (target_info, on its node) checks this floor, which
# stays under the full estimate of a run with loads (load/estimate.py: checked while the
# DAG is built for targets without a node, and by each load at its start).
INDEX_BYTES_PER_ROW = 36
# A fresh datadir before any table: system tables, ibdata1, undo tablespaces, temp tablespace.
SERVER_BASE_BYTES = 160 << 20


def need_bytes(cfg: dict) -> int:
    """The least one run writes on a target at its peak (the floor a first job checks):
    its fio file (when fio is among the stages: load/estimate.py counts it the same way), or a
    fresh server with the smallest index table. Jobs on a target run one at a time and each
    removes its files, so the larger one counts."""
    fio = parse_size(cfg["fio"]["size"]) + (16 << 20) if "fio" in cfg.get("stages", ["fio"]) else 0
    return max(fio, SERVER_BASE_BYTES + estimated_objects(cfg) * INDEX_BYTES_PER_ROW)


def server_bytes(settings: dict) -> int:
    """Disk a private server takes on its target before any data, from its settings: the
    redo log (innodb_log_file_size x innodb_log_files_in_group, MariaDB default 96M), the
    buffer-pool dump (~1% of the pool, page ids) and the fresh datadir."""
    def size(key, default):
        return parse_size(str(settings.get(key, default)))
    redo = size("innodb_log_file_size", "96M") * int(settings.get("innodb_log_files_in_group", 1))
    return SERVER_BASE_BYTES + redo + size("innodb_buffer_pool_size", "128M") // 100


def settings_mb(settings: dict) -> int:
    """Memory the server settings ask for (buffer pool and log buffer), in MiB."""
    total = 0
    for key in ("innodb_buffer_pool_size", "innodb_log_buffer_size"):
        if key in settings:
            total += parse_size(str(settings[key])) // 2**20
    return total


def check_targets(cfg: dict, names=None, space: bool = True, create: bool = True,
                  need: dict | None = None) -> dict:
    """check_target() for each named target (default: all); returns their descriptions.
    ``space=False`` checks only that each is a writable directory; ``need`` = {target:
    (bytes, why)} (the run's estimate, load/estimate.py) replaces need_bytes()."""
    out = {}
    for name in names or cfg["targets"]:
        if name not in cfg["targets"]:
            raise TargetError(f"storage target '{name}' is not in the config (targets: "
                              f"{', '.join(cfg['targets'])})")
        bytes_, why = (need or {}).get(name) or ((need_bytes(cfg) if space else 0), "")
        out[name] = check_target(name, target_dir(cfg, name), bytes_, create, why)
        tmpdir = cfg["targets"][name].get("tmpdir")
        if tmpdir:    # the server's sort files: a bad one would fail every load of the target
            check_target(name, Path(tmpdir).expanduser(), 0, create, key="tmpdir")
    return out
