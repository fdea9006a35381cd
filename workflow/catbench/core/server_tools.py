"""What catbench needs to know about a MariaDB/MySQL server before and beside running one:
finding the binary, its version, the settings a config may pass, and the status
counters and variables read for metrics and provenance."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess

# sun_path is 108 bytes including the terminating NUL.
SOCKET_PATH_MAX = 107
LOG_TAIL_LINES = 30
_SETTING_NAME = re.compile(r"^[a-z0-9_-]+$")
_SETTING_VALUE = re.compile(r"^[A-Za-z0-9_.:/+,-]+$")
# Options catbench sets itself; a config that sets them would silently break things.
_RESERVED = {"datadir", "tmpdir", "socket", "pid_file", "log_error", "port", "bind_address",
             "skip_networking", "user", "basedir", "local_infile"}
INSTALL_HINT = ("install MariaDB (Debian/Ubuntu: apt-get install mariadb-server; conda: "
                "conda install -c conda-forge mariadb) or set server.binary in the config")


class ServerError(RuntimeError):
    """The private server could not be initialised, started or stopped."""


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


def free_tcp_port() -> int:
    """A currently free port on 127.0.0.1 (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def validate_settings(settings: dict | None) -> dict[str, str]:
    """Check names/values of ``server.settings`` and render values as option strings."""
    out: dict[str, str] = {}
    for key, value in (settings or {}).items():
        if not isinstance(key, str) or not _SETTING_NAME.match(key):
            raise ServerError(f"server setting name {key!r} is not a plain option name "
                              f"(lower-case letters, digits, '_' or '-')")
        if key.replace("-", "_") in _RESERVED:
            raise ServerError(f"server setting {key!r} is managed by catbench (use the target "
                              f"path / server.tcp in the config instead)")
        if isinstance(value, bool):
            text = "1" if value else "0"
        elif isinstance(value, (int, float)):
            text = str(value)
        elif isinstance(value, str) and _SETTING_VALUE.match(value):
            text = value
        else:
            raise ServerError(f"server setting {key}={value!r}: value must be a number, a "
                              f"boolean or a simple word such as 1G or O_DIRECT")
        out[key] = text
    return out


STATUS_COUNTERS = (
    "Innodb_buffer_pool_reads", "Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_write_requests",
    "Innodb_buffer_pool_pages_dirty", "Innodb_buffer_pool_pages_data", "Innodb_buffer_pool_pages_total",
    "Innodb_buffer_pool_pages_flushed", "Innodb_data_read", "Innodb_data_written", "Innodb_data_fsyncs",
    "Innodb_os_log_written", "Innodb_log_waits", "Innodb_pages_written", "Innodb_rows_inserted",
    "Innodb_rows_read", "Innodb_checkpoint_age",
)

PROVENANCE_VARIABLES = (
    "version", "version_comment", "innodb_buffer_pool_size", "innodb_log_file_size",
    "innodb_flush_log_at_trx_commit", "innodb_doublewrite", "innodb_flush_method", "innodb_page_size",
    "innodb_io_capacity", "datadir", "tmpdir",
)


def status_counters(conn, names=STATUS_COUNTERS) -> dict[str, int | None]:
    """Global InnoDB status counters as ints (None where the server lacks one)."""
    cur = conn.cursor()
    cur.execute("SHOW GLOBAL STATUS LIKE 'Innodb%'")
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
