"""A private MariaDB/MySQL server per storage target.

The datadir, tmpdir, socket and logs live under ``basedir`` (on the target), the
server listens on a unix socket only unless ``tcp=True``, and it is always stopped:
by ``__exit__``, by SIGTERM/SIGINT handlers and by an ``atexit`` hook. A server
left behind by a crashed earlier run is found via its pid file / command line and
stopped before a new one starts.
"""

from __future__ import annotations

import contextlib
import ctypes
import getpass
import logging
import os
import re
import secrets
import shutil
import signal
import string
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import mysql.connector
import psutil

from ..infra.resources import resources_dir
from ..infra.settings import ServerError, validate_settings
from ..infra.targets import parse_size
from . import safety, stale
from .address import SOCKET_PATH_MAX, _PortTaken, free_tcp_port
from .binaries import (
    check_version,
    find_server_binary,
    plugin_options,
    plugin_setting,
    server_version,
)
from .logs import log_tail as _tail
from .logs import out_of_space as _out_of_space
from .memory import MemoryCage
from .scratch import ScratchDir, own_folder, remove_left
from .install import initialise

log = logging.getLogger(__name__)


def _set_pdeathsig():
    """Child side of fork: get SIGTERM if the parent dies (even by SIGKILL)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass




@dataclass(frozen=True)
class Launch:
    """How a private server starts: its binary (None: found on PATH, /usr/sbin, /usr/libexec),
    TCP on 127.0.0.1 beside the socket, the longest start in seconds, and the storage
    engines' plugins it loads (``binaries.PLUGINS``), and the RAM of the server and its page cache
    in bytes (None: the machine's; ``memory.MemoryCage``)."""
    binary: str | None = None
    tcp: bool = False
    start_timeout_s: float = 120
    plugins: tuple = ()
    ram: int | None = None
    page_cache_hold: int | None = None   # server.page_cache: the page cache held beside the server's own bytes

    @classmethod
    def of(cls, server: dict, **over) -> Launch:
        """From a validated ``server`` config section (binary, tcp, start_timeout_s, ram, page_cache)."""
        ram, page = (parse_size(v) if v else None for v in (server.get("ram"), server.get("page_cache")))
        return cls(**{"binary": server["binary"], "tcp": server["tcp"], "start_timeout_s": server["start_timeout_s"],
                      "ram": ram, "page_cache_hold": page, **over})



class ServerGone(ServerError):
    """A connection asked of a server that is not running."""

class Server:
    """A private server; use as ``with Server(...) as srv:`` (initialises if needed).
    catbench's own options (Galera provider, cluster address, ports) go into ``internal``
    after construction, never through ``settings``."""

    def __init__(self, name: str, basedir, settings: dict | None = None, launch: Launch | None = None, *,
                 socket_path=None, auth: str = "auto"):
        launch = launch or Launch()
        binary, tcp, start_timeout, plugins = launch.binary, launch.tcp, launch.start_timeout_s, launch.plugins
        self.name = name
        self.basedir = Path(basedir).absolute()
        self.settings = validate_settings(settings)
        # catbench's own options (Galera provider, cluster address, ports), never from a config
        # so never checked by validate_settings: rendered after the user's (they win) at every
        # start; None writes a bare flag, a dict value an option group (e.g. [sst]).
        self.internal: dict = {}
        self.binary = find_server_binary(binary)
        # storage engines' plugins (core.server.binaries.PLUGINS), e.g. MyRocks for load.engines
        self.plugins = tuple(plugins)
        self.internal.update(plugin_options(self.binary, self.plugins))
        self.tcp = tcp
        self.ram, self.page_cache_hold, self.cage, self.ram_peak = launch.ram, launch.page_cache_hold, None, None
        self.port: int | None = None
        self.start_timeout = start_timeout
        self.start_budget: float | None = None   # what an install left of the limit it shares with the start
        self.datadir = self.basedir / "data"
        # CATBENCH_TMPDIR (set by the rules from targets.<t>.tmpdir) moves the server's
        # temporary files off the target: a folder others may write to, so each server gets a
        # fresh one there on first use (scratch.ScratchDir), never one found by its name.
        tmpdir = os.environ.get("CATBENCH_TMPDIR")
        self.shared_tmp = Path(tmpdir).absolute() if tmpdir else None
        self._scratch: ScratchDir | None = None
        self.socket = Path(socket_path).absolute() if socket_path else self.basedir / "mysqld.sock"
        self.pid_file = self.basedir / "mysqld.pid"
        self.error_log = self.basedir / "error.log"
        self.config_file = self.basedir / "my.cnf"
        self.credentials_file = self.basedir / "credentials.cnf"
        self.version = server_version(self.binary)
        check_version(self.version, self.binary)
        self.mariadb = "mariadb" in self.version.lower()
        # unix_socket auth needs MariaDB; MySQL gets a generated password.
        if auth not in ("auto", "socket", "password"):
            raise ServerError(f"auth must be auto, socket or password, not {auth!r}")
        self.auth = "socket" if auth == "auto" and self.mariadb else ("password" if auth == "auto" else auth)
        self.user = "root" if os.geteuid() == 0 else getpass.getuser()
        self.timings: dict[str, float | None] = {"init_s": None, "start_s": None, "stop_s": None}
        self._proc: subprocess.Popen | None = None
        self._pid: int | None = None
        n = len(os.fsencode(str(self.socket)))
        if n > SOCKET_PATH_MAX:
            raise ServerError(
                f"target {name}: socket path {self.socket} is {n} bytes, over the unix limit of "
                f"{SOCKET_PATH_MAX}; use a shorter target path or pass a short socket_path "
                f"(e.g. under /tmp)")

    # ---- files ----
    @property
    def tmpdir(self) -> Path:
        """The server's temporary folder (also the sorted stream's): ``tmp`` in its own directory,
        or its fresh folder in CATBENCH_TMPDIR, made on first use and checked at every use."""
        if self.shared_tmp is None:
            return self.basedir / "tmp"
        if self._scratch is None:
            self._scratch = ScratchDir(self.shared_tmp, f"{self.basedir.name}-", f"targets.{self.name}.tmpdir")
        return self._scratch.path

    def remove_tmpdir(self, left: bool = False) -> None:
        """Remove the temporary folder; in CATBENCH_TMPDIR only the one made for this server, or
        with ``left`` the one a killed earlier server of this directory left (its my.cnf names it)."""
        if self.shared_tmp is None:
            shutil.rmtree(self.basedir / "tmp", ignore_errors=True)
        elif left:
            said = remove_left(self.config_file, self.shared_tmp, f"{self.basedir.name}-")
            if said:
                log.info("target %s: %s", self.name, said)
        elif self._scratch is not None:
            self._scratch.remove()

    def render_config(self) -> str:
        tmpl = string.Template((resources_dir() / "server" / "my.cnf.in").read_text())
        if self.tcp:
            self.port = self.port or free_tcp_port()
            network = f"bind-address=127.0.0.1\nport={self.port}"
        else:
            network = "skip-networking"
        flavor = "" if self.mariadb else "mysqlx=OFF"  # X plugin would listen on 33060
        settings = "\n".join(f"{plugin_setting(k, self.plugins)}={v}" for k, v in self.settings.items())
        if self.internal:
            lines = ["# --- catbench's own options (not from the config) ---"]
            for group, opts in [(None, {k: v for k, v in self.internal.items() if not isinstance(v, dict)}),
                                *((k, v) for k, v in self.internal.items() if isinstance(v, dict))]:
                lines += ([f"[{group}]"] if group else []) + [k if v is None else f"{k}={v}" for k, v in opts.items()]
            settings += "\n" + "\n".join(lines)
        return tmpl.substitute(name=self.name, socket=self.socket, user=self.user,
                               datadir=self.datadir, tmpdir=self.tmpdir, pid_file=self.pid_file,
                               error_log=self.error_log, network=network, flavor=flavor,
                               settings=settings)

    def _write_config(self):
        """my.cnf 0644 whatever the umask (MariaDB ignores a world-writable one and would start
        on the system datadir), never through a symlink."""
        local = [] if self.shared_tmp else [self.basedir / "tmp"]  # a shared one is made 0700 by us
        for d in (self.basedir, *local):
            own_folder(d, f"targets.{self.name}.path")
            d.chmod(0o755)
        fd = os.open(self.config_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w") as f:
            f.write(self.render_config())

    def _own_paths(self) -> list[str]:
        # on the command line too: were my.cnf skipped, the server fails, not opens the system's
        return [f"--datadir={self.datadir}", f"--socket={self.socket}", f"--pid-file={self.pid_file}",
                f"--log-error={self.error_log}"]

    def _user_args(self) -> list[str]:
        # mariadbd refuses to run as root unless told so explicitly.
        return ["--user=root"] if os.geteuid() == 0 else []

    @property
    def initialized(self) -> bool:
        return (self.datadir / "mysql").is_dir()

    # ---- lifecycle ----
    def initialize(self) -> float:
        """Create the system tables in an empty datadir; returns seconds taken."""
        self.cleanup_stale()
        if self.initialized:
            raise ServerError(f"target {self.name}: {self.datadir} is already initialised; "
                              f"remove it to start from scratch")
        self._write_config()
        self.datadir.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        initialise(self)
        self.timings["init_s"] = time.monotonic() - t0
        log.info("target %s: initialised %s in %.1f s", self.name, self.datadir, self.timings["init_s"])
        return self.timings["init_s"]

    def start(self, allow_empty: bool = False) -> float:
        """Start and wait until ``SELECT 1`` answers over the socket; returns seconds.

        With ``tcp`` the port is picked free just before the start; if another process takes
        it in between (the server exits with "Address already in use"), another free port is
        picked and the start retried, up to three times. ``allow_empty`` starts on an empty
        datadir that a state transfer fills (a Galera joiner's SST)."""
        for attempt in range(3):
            try:
                return self._start(allow_empty)
            except _PortTaken as exc:
                log.warning("target %s: TCP port %s was taken before the server bound it; "
                            "retrying on another free port", self.name, exc.port)
                self.port = None
                last = exc
        raise ServerError(f"target {self.name}: no free TCP port could be bound in 3 tries "
                          f"(last: {last.port}); last lines of {self.error_log}:\n{_tail(self.error_log)}")

    def _start(self, allow_empty: bool = False) -> float:
        if self.running:
            raise ServerError(f"target {self.name}: server already running (pid {self._pid})")
        self.cleanup_stale()
        if allow_empty:
            self.datadir.mkdir(parents=True, exist_ok=True)
        elif not self.initialized:
            raise ServerError(f"target {self.name}: {self.datadir} is not initialised; call initialize() first")
        self._write_config()
        cmd = [self.binary, f"--defaults-file={self.config_file}", *self._user_args(), *self._own_paths()]
        main = threading.current_thread() is threading.main_thread()
        self.cage = MemoryCage(self.name, self.ram, self.page_cache_hold) if self.ram or self.page_cache_hold else None
        child = (lambda: (_set_pdeathsig(), self.cage.enter())) if self.cage else _set_pdeathsig
        t0 = time.monotonic()
        with open(self.basedir / "mysqld.out", "ab") as out:
            self._proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          preexec_fn=child if main else None)
        self._pid = self._proc.pid
        if self.cage and not main:
            self.cage.enter(self._pid)
        with safety.lock:
            safety.running.add(self)
            safety.install_handlers()
        # the first start after an install has what the install left of the limit they share
        limit, self.start_budget = (self.start_timeout if self.start_budget is None else self.start_budget), None
        deadline = t0 + limit
        last_err: Exception | None = None
        while True:
            rc = self._proc.poll()
            if rc is not None:
                oom = self.cage.oom_note() if self.cage else ""   # read before _forget removes the cgroup
                self._forget()
                tail = _tail(self.error_log)
                if self.tcp and re.search(r"Address already in use|Bind on TCP/IP port", tail):
                    raise _PortTaken(self.port)
                full = _out_of_space(self.name, self.datadir, self.error_log)
                raise ServerError((full + "\n" if full else "") +
                                  f"target {self.name}: server exited with code {rc} during start{oom}; "
                                  f"last lines of {self.error_log}:\n{_tail(self.error_log)}")
            if self.socket.exists():
                try:
                    conn = self._raw_connect(connection_timeout=5)
                    cur = conn.cursor()
                    cur.execute("SELECT 1")
                    cur.fetchall()
                    conn.close()
                    break
                except mysql.connector.Error as exc:
                    last_err = exc
            if time.monotonic() > deadline:
                self.kill()
                full = _out_of_space(self.name, self.datadir, self.error_log)
                raise ServerError((full + "\n" if full else "") +
                                  f"target {self.name}: server did not answer within {limit:.0f} s (config key "
                                  f"'server.start_timeout_s', shared with its install; last error: {last_err}); "
                                  f"last lines of {self.error_log}:\n{_tail(self.error_log)}")
            time.sleep(0.05)
        self.timings["start_s"] = time.monotonic() - t0
        if self.cage and self.cage.hold:   # held once up
            self.cage.hold.start()
        if self.auth == "password" and not self.credentials_file.exists():
            self._set_password()
        log.info("target %s: server pid %d up in %.2f s", self.name, self._pid, self.timings["start_s"])
        return self.timings["start_s"]

    def stop(self, timeout: float = 300) -> float | None:
        """Clean shutdown (SIGTERM), waiting up to ``timeout`` s before SIGKILL."""
        if self._pid is None:
            return None
        t0 = time.monotonic()
        try:
            os.kill(self._pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        if not self._wait_exit(timeout):
            log.warning("target %s: server pid %d ignored SIGTERM for %.0f s; killing it",
                        self.name, self._pid, timeout)
            self.kill()
            return None
        self.timings["stop_s"] = time.monotonic() - t0
        log.info("target %s: server stopped in %.2f s", self.name, self.timings["stop_s"])
        self._forget()
        return self.timings["stop_s"]

    def kill(self):
        """SIGKILL (crash simulation); pid and socket files stay behind like after a crash."""
        if self._pid is None:
            return
        try:
            os.kill(self._pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._wait_exit(30)
        self._forget()

    def _wait_exit(self, timeout: float) -> bool:
        if self._proc is not None:
            try:
                self._proc.wait(timeout)
                return True
            except subprocess.TimeoutExpired:
                return False
        try:
            psutil.Process(self._pid).wait(timeout)
        except psutil.NoSuchProcess:
            pass
        except psutil.TimeoutExpired:
            return False
        return True

    def _forget(self):
        self._proc = None
        self._pid = None
        if self.cage:
            self.ram_peak = self.cage.peak()
            self.cage.remove()
            self.cage = None
        with safety.lock:
            safety.running.discard(self)
            if not safety.running:
                safety.restore_handlers()

    @property
    def pid(self) -> int | None:
        return self._pid

    @property
    def running(self) -> bool:
        return self._pid is not None and psutil.pid_exists(self._pid) and (
            self._proc is None or self._proc.poll() is None)

    def cleanup_stale(self) -> list[str]:
        """Stop a leftover server of this datadir; remove dead pid/socket files."""
        actions = stale.cleanup(self)
        for a in actions:
            log.warning("target %s: %s", self.name, a)
        return actions

    # ---- connections ----
    def _password(self) -> str:
        if self.auth != "password" or not self.credentials_file.exists():
            return ""
        for line in self.credentials_file.read_text().splitlines():
            if line.startswith("password="):
                return line.split("=", 1)[1]
        return ""

    def _raw_connect(self, **kw):
        args = dict(unix_socket=str(self.socket), user=self.user, password=self._password(),
                    allow_local_infile=True, autocommit=True)
        args.update(kw)
        return mysql.connector.connect(**args)

    def _set_password(self):
        """First start with auth=password: give root a random password kept in a 0600 file."""
        pw = secrets.token_urlsafe(24)
        fd = os.open(self.credentials_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"[client]\nuser={self.user}\npassword={pw}\nsocket={self.socket}\n")
        conn = mysql.connector.connect(unix_socket=str(self.socket), user=self.user, password="")
        try:
            conn.cursor().execute(f"ALTER USER '{self.user}'@'localhost' IDENTIFIED BY %s", (pw,))
        except mysql.connector.Error:
            self.credentials_file.unlink()
            raise
        finally:
            conn.close()

    def connect(self, **kw):
        """A mysql.connector connection over the socket (LOCAL INFILE allowed)."""
        if not self.running:
            raise ServerGone(f"target {self.name}: server is not running")
        return self._raw_connect(**kw)

    def __enter__(self):
        if not self.initialized:
            self.initialize()
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        # A server that died on its own (killed, crashed, out of memory) while the stage was
        # using it: say so, with the exit status and the error log, instead of a bare
        # "Lost connection" from the client library.
        pid, proc = self._pid, self._proc
        rc = proc.poll() if proc is not None else None
        if rc is None and proc is not None and isinstance(exc, Exception):
            # a killed server closes its sockets before it exits: the client's error can come first
            with contextlib.suppress(subprocess.TimeoutExpired):
                rc = proc.wait(timeout=1.0)
        died = pid is not None and (rc is not None or not psutil.pid_exists(pid))
        oom = self.cage.oom_note() if died and self.cage else ""
        try:
            self.stop()
        except Exception:  # noqa: BLE001 - never leave a server behind
            self.kill()
            raise
        # a connection asked after the death says only "not running": the death is the news
        if died and isinstance(exc, Exception) and (not isinstance(exc, ServerError) or isinstance(exc, ServerGone)):
            how = (f"killed by signal {-rc}" if rc is not None and rc < 0
                   else f"exit code {rc}" if rc is not None else "gone")
            how += oom
            raise ServerError(f"target {self.name}: the server (pid {pid}) died during the stage "
                              f"({how}); the stage failed with: {exc}; last lines of "
                              f"{self.error_log}:\n{_tail(self.error_log)}") from exc
        return False
