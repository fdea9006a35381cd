"""The MariaDB/MySQL server catbench runs, as installed: finding its binary and
mariadb-install-db, its version, and the storage-engine plugins catbench loads itself."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from ..infra.settings import ServerError, option_name

# the server binaries looked for, in this order (and what a server process is named)
SERVER_NAMES = ("mariadbd", "mysqld")

INSTALL_HINT = ("install MariaDB (Debian/Ubuntu: apt-get install mariadb-server; conda: "
                "conda install -c conda-forge mariadb) or set server.binary in the config")


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
    for name in SERVER_NAMES:
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
