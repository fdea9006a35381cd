"""What catbench needs to know about a MariaDB/MySQL server before and beside running one:
finding the binary, its version, the settings a config may pass, the storage-engine
plugins catbench loads itself, its error log, and the status counters and variables read
for metrics and provenance."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

from ..infra.settings import ServerError, option_name, validate_settings  # noqa: F401  (the server's own)

# sun_path is 108 bytes including the terminating NUL.
SOCKET_PATH_MAX = 107
LOG_TAIL_LINES = 30
INSTALL_HINT = ("install MariaDB (Debian/Ubuntu: apt-get install mariadb-server; conda: "
                "conda install -c conda-forge mariadb) or set server.binary in the config")


class _PortTaken(Exception):
    """The chosen TCP port was taken by someone else before the server could bind it."""

    def __init__(self, port):
        super().__init__(port)
        self.port = port


def find_server_binary(override: str | None = None) -> str:
    """Path of ``mariadbd`` or ``mysqld``; ``override`` (path or name) wins."""
    if override:
        found = shutil.which(override) or (override if os.access(override, os.X_OK) else None)
        if not found:
            raise ServerError(f"server binary {override!r} not found or not executable; "
                              f"fix server.binary in the config or {INSTALL_HINT}")
        return str(found)
    search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/libexec",
                              "/usr/local/sbin", "/usr/local/libexec"])
    for name in ("mariadbd", "mysqld"):
        found = shutil.which(name, path=search)
        if found:
            return found
    raise ServerError(f"no mariadbd or mysqld found in PATH, /usr/sbin or /usr/libexec; {INSTALL_HINT}")


def server_version(binary: str) -> str:
    """The ``--version`` line of the server binary."""
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ServerError(f"cannot run `{binary} --version` ({exc}); {INSTALL_HINT}") from exc
    return (out.stdout or out.stderr).strip()


# Oldest servers catbench supports: unix_socket auth, ALTER USER, InnoDB defaults (MariaDB);
# --initialize-insecure and caching_sha2 clients (MySQL).
MIN_VERSION = {"MariaDB": (10, 3), "MySQL": (8, 0)}


def check_version(version: str, binary: str) -> tuple[str, tuple[int, ...]]:
    """(flavour, version) from a ``--version`` line; ServerError if too old or not a server."""
    m = re.search(r"\bVer\s+(\d+)\.(\d+)(?:\.(\d+))?", version)
    if not m:
        raise ServerError(f"{binary} does not look like a MariaDB/MySQL server: `{binary} --version` "
                          f"printed {version[:200]!r}; {INSTALL_HINT}")
    ver = tuple(int(x) for x in m.groups() if x is not None)
    flavour = "MariaDB" if "mariadb" in version.lower() else "MySQL"
    need = MIN_VERSION[flavour]
    if ver[:2] < need:
        raise ServerError(f"{binary} is {flavour} {'.'.join(map(str, ver))}; catbench needs {flavour} >= "
                          f"{'.'.join(map(str, need))} (MariaDB >= 10.3 or MySQL >= 8.0); {INSTALL_HINT}")
    return flavour, ver


# Storage-engine plugins catbench loads itself when a load asks for their engine (a config
# cannot: plugin options are reserved). name -> (library in the server's plugin_dir, the
# Debian/Ubuntu package that installs it).
PLUGINS = {"rocksdb": ("ha_rocksdb", "mariadb-plugin-rocksdb")}


def plugin_dir(binary: str) -> Path | None:
    """The server's compiled-in plugin_dir (None when it does not say)."""
    try:
        out = subprocess.run([binary, "--no-defaults", "--verbose", "--help"], capture_output=True, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"^plugin[-_]dir\s+(\S+)", out, re.M)
    return Path(m.group(1)) if m else None


def plugin_options(binary: str, plugins) -> dict[str, str]:
    """catbench's own server options that load ``plugins`` (names in PLUGINS), each with
    FORCE so that the server refuses to start without it rather than start and lack the
    engine; ServerError naming the package when a plugin's library is not installed."""
    if not plugins:
        return {}
    where, libs = plugin_dir(binary), []
    for name in plugins:
        if name not in PLUGINS:
            raise ServerError(f"unknown server plugin {name!r}; catbench loads {', '.join(PLUGINS)}")
        lib, package = PLUGINS[name]
        if where is None or not (where / f"{lib}.so").is_file():
            raise ServerError(f"storage engine {name} needs the server plugin {lib}.so, which is not in "
                              f"{where or 'the plugin_dir'} of {binary}; install it (Debian/Ubuntu: apt-get "
                              f"install {package}; `make run` with this config does it as root) or remove {name} from the "
                              f"config key load.engines")
        libs.append(lib)
    return {"plugin_load_add": ";".join(libs), **{name: "FORCE" for name in plugins}}


def plugin_setting(key: str, plugins) -> str:
    """``key`` as my.cnf gets it: an option of a plugin this server does not load (e.g.
    ``rocksdb_block_cache_size`` in ``load.settings``, read by the InnoDB loads too) gets
    ``loose-``, so that the server ignores it instead of refusing to start."""
    name = option_name(key)
    if any(p not in plugins and name.startswith(p + "_") for p in PLUGINS) and not key.startswith("loose"):
        return f"loose-{key}"
    return key


def log_tail(path: Path, n: int = LOG_TAIL_LINES) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"(no log at {path})"
    return "\n".join(lines[-n:])


# errno 28; a handler's 135 (no more room in a record file): what a DDL on a full disk says
_NO_SPACE = re.compile(r"No space left on device|(?:errno|error|errcode|OS error):? ?(?:28|135)\b|disk is full", re.I)


def out_of_space(name: str, where: Path, *logs: Path, said: str = "") -> str | None:
    """The first line of a failure that is really a full disk, or None: from the server's
    ``logs`` and the failed statement's own message (``said``)."""
    text = "\n".join([said, *(log_tail(p, 200) for p in logs)])
    if not _NO_SPACE.search(text):
        return None
    probe = next((a for a in [where, *where.parents] if a.exists()), where)
    st = os.statvfs(probe)
    return (f"target {name}: out of space on {probe} ({st.f_bavail * st.f_frsize / 2**20:.0f} MiB free): "
            f"the server could not write there (errno 28); free space, use a bigger disk or "
            f"lower the scale or server settings (redo log, buffer pool) in the config")


def free_tcp_port() -> int:
    """A currently free port on 127.0.0.1 (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


STATUS_COUNTERS = (
    "Innodb_buffer_pool_reads", "Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_write_requests",
    "Innodb_buffer_pool_pages_dirty", "Innodb_buffer_pool_pages_data", "Innodb_buffer_pool_pages_total",
    "Innodb_buffer_pool_pages_flushed", "Innodb_data_read", "Innodb_data_written", "Innodb_data_fsyncs",
    "Innodb_os_log_written", "Innodb_log_waits", "Innodb_pages_written", "Innodb_rows_read",
    "Innodb_checkpoint_age",
    # rows written by every engine so far, running statements included: a load's progress
    # inside one file (the scale model's rate windows, predict/runs.py)
    "Handler_write",
    # MyRocks (load.engines rocksdb; None on a server without it): what its LSM tree writes
    # (WAL, memtable flushes, compactions) and how its block cache serves reads.
    "Rocksdb_wal_bytes", "Rocksdb_flush_write_bytes", "Rocksdb_compact_write_bytes",
    "Rocksdb_compact_read_bytes", "Rocksdb_block_cache_hit", "Rocksdb_block_cache_miss",
    # and when its write controller held the writers back (L0 files, pending compaction bytes,
    # memtables): stops, slowdowns and the microseconds they took
    "Rocksdb_stall_micros", "Rocksdb_stall_total_stops", "Rocksdb_stall_total_slowdowns",
    # an SST's index block the block cache lost (each miss reads and decompresses the whole
    # block: one larger than a cache shard, capacity / 64, is lost again at once, so every key
    # check re-reads it)
    "Rocksdb_block_cache_index_miss", "Rocksdb_block_cache_index_bytes_insert",
    # MyISAM's key cache (load.engines myisam): index block reads and writes, requested and
    # done on disk (its data blocks go through the OS, which the device counters see).
    "Key_reads", "Key_read_requests", "Key_writes", "Key_write_requests",
)

PROVENANCE_VARIABLES = (
    "version", "version_comment", "innodb_buffer_pool_size", "innodb_log_file_size",
    "innodb_flush_log_at_trx_commit", "innodb_doublewrite", "innodb_flush_method", "innodb_page_size",
    "innodb_io_capacity", "datadir", "tmpdir", "rocksdb_block_cache_size", "rocksdb_max_row_locks",
    "key_buffer_size", "myisam_sort_buffer_size",
)


def status_counters(conn, names=STATUS_COUNTERS) -> dict[str, int | None]:
    """Global status counters as ints (None where the server lacks one)."""
    cur = conn.cursor()
    cur.execute(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({', '.join(['%s'] * len(names))})", tuple(names))
    got = {k.lower(): v for k, v in cur.fetchall()}
    out = {}
    for n in names:
        v = got.get(n.lower())
        try:
            out[n] = int(v) if v is not None else None
        except (TypeError, ValueError):
            out[n] = None
    return out


def variables(conn, names=PROVENANCE_VARIABLES) -> dict[str, str | None]:
    """Global server variables (for provenance)."""
    cur = conn.cursor()
    cur.execute("SHOW GLOBAL VARIABLES")
    got = {k.lower(): (v.decode() if isinstance(v, (bytes, bytearray)) else v) for k, v in cur.fetchall()}
    return {n: got.get(n.lower()) for n in names}


def install_db_tool(binary) -> str:
    """mariadb-install-db (or mysql_install_db) on PATH or beside ``binary``."""
    bindir = Path(binary).resolve().parent
    search = os.pathsep.join([os.environ.get("PATH", ""), str(bindir), str(bindir.parent / "bin"),
                              str(bindir.parent / "scripts")])
    for name in ("mariadb-install-db", "mysql_install_db"):
        found = shutil.which(name, path=search)
        if found:
            return found
    raise ServerError(f"mariadb-install-db not found next to {binary}; {INSTALL_HINT}")
