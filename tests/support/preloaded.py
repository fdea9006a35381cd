"""The venv's ``snakemake`` command started as a fork of a process that has imported it once.

A start of the command imports Snakemake, its plugins and what they import (pandas, SQLAlchemy):
~1.5 CPU-s a start, before the workflow's own work, which the suite's runs paid again in each
run. Here one server a test worker imports them, then forks once a run. Each run still is its
own process: its own pid, process group where asked, working directory, environment, signal
handlers and standard streams, Snakemake's own ``main`` from the same code, exit status as the
command's. What differs: the command line ``/proc`` shows (the server's), what a module read of
the environment at import (the server's, the worker's: the tests' runs share it), the hash seed
(one a worker: a set is listed in the same order by each of its runs) and the first folder of
``sys.path`` (``tests/``, whose modules no workflow code imports, not ``.venv/bin``).

``run`` and ``Popen`` take the subset of ``subprocess``'s arguments the tests use; any other
command goes to ``subprocess`` itself."""

from __future__ import annotations

import atexit
import importlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from .paths import SNAKEMAKE, VENV_BIN

# What a run imports after its start, but for the workflow's own package (each run imports it
# afresh: its import sets the environment the run's jobs inherit): Snakemake's modules it loads
# as it reads a workflow and runs its jobs, and the libraries the Snakefile's DAG code imports
# (a dry run of the tests' workflow 0.22 CPU-s in the fork with them, 0.5 without)
LATER_IMPORTS = ("snakemake.report", "snakemake.profiles", "snakemake.storage", "snakemake.assets",
                 "snakemake.benchmark", "requests", "jinja2", "docutils.core", "docutils.parsers.rst",
                 "pygments.lexers", "pygments.formatters", "PIL.Image", "smart_open", "yte", "dpath",
                 "statistics", "platformdirs", "jsonschema", "duckdb", "mysql.connector",
                 "pyarrow.compute", "pyarrow.parquet", "pyarrow.csv")

_server: dict = {}
_lock = threading.Lock()


def _serve(path: str) -> None:
    """The server: imports, then one fork a request; the child's exit status goes back on the
    request's connection. Single-threaded, so each fork copies a process with no other thread."""
    import selectors

    import snakemake.cli  # noqa: F401  (the imports every start pays)
    from snakemake_interface_executor_plugins.registry import ExecutorPluginRegistry

    ExecutorPluginRegistry()      # every installed executor plugin, as Snakemake's start loads them
    import pandas  # noqa: F401  (Snakemake's records of a job's params load it at the first job)

    for name in LATER_IMPORTS:
        importlib.import_module(name)

    assert threading.active_count() == 1, threading.enumerate()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, None)
    sel.register(sys.stdin, selectors.EVENT_READ, "worker")
    print("ready", flush=True)
    while True:
        for key, _ in sel.select():
            if key.data == "worker":      # the test worker has gone (its end of this pipe closed)
                if not os.read(sys.stdin.fileno(), 1):
                    shutil.rmtree(os.path.dirname(path), ignore_errors=True)
                    return
            elif key.data is None:
                conn, _ = listener.accept()
                msg, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
                ready, told = os.pipe()
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    _child(json.loads(msg), fds, told)
                for fd in (*fds, told):
                    os.close(fd)
                os.read(ready, 1)       # its session and folder set, as subprocess's Popen returns
                os.close(ready)
                conn.sendall(f"{pid}\n".encode())
                pidfd = os.pidfd_open(pid)
                sel.register(pidfd, selectors.EVENT_READ, (pid, conn))
            else:
                pid, conn = key.data
                sel.unregister(key.fd)
                os.close(key.fd)
                _, status = os.waitpid(pid, 0)
                try:
                    conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
                except OSError:
                    pass
                conn.close()


def _child(req: dict, fds: list[int], told: int) -> None:
    """In the fork: the request's streams, folder, environment, session and signals (then a
    byte on ``told``); then Snakemake's main as its console script calls it; never returns."""
    code = 1
    try:
        for i, fd in enumerate(fds):
            os.dup2(fd, i)
        if req["session"]:
            os.setsid()
        if req["foreground"]:         # as faultkit.foreground_signals before an exec
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGQUIT, signal.SIG_DFL)
        os.umask(req["umask"])
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        tempfile.tempdir = None
        sys.argv = req["argv"]
        os.write(told, b"1")
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        from snakemake.cli import main
        try:
            ret = main()
            code = ret if isinstance(ret, int) else 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if not isinstance(exc.code, (int, type(None))):
                print(exc.code, file=sys.stderr)
        except KeyboardInterrupt:
            _flush()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)     # as Python reports an uncaught interrupt
        except BaseException:
            import traceback
            traceback.print_exc()
    finally:
        _flush()
        os._exit(code)


def _flush() -> None:
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass


def _address() -> str:
    """The worker's server, started on first use and stopped when the worker exits."""
    with _lock:
        if _server.get("pid") != os.getpid() or _server["proc"].poll() is not None:
            folder = tempfile.mkdtemp(prefix="cbt-preloaded-", dir="/tmp")
            path = os.path.join(folder, "s")
            # its stdin a pipe this process alone holds: it ends when the worker does, however
            proc = subprocess.Popen([str(VENV_BIN / "python"), "-m", "support.preloaded", path],
                                    stdout=subprocess.PIPE, stdin=subprocess.PIPE,
                                    cwd=Path(__file__).parents[1], text=True)
            line = proc.stdout.readline()
            if line.strip() != "ready":
                proc.kill()
                shutil.rmtree(folder, ignore_errors=True)
                raise RuntimeError(f"the preloaded Snakemake server did not start ({proc.wait()})")
            _server.update(pid=os.getpid(), path=path, proc=proc)
        return _server["path"]


def _umask() -> int:
    """This process's umask, read without setting it (another thread may be making files)."""
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"^Umask:\s*([0-7]+)", status, re.M).group(1), 8)


def _is_snakemake(cmd) -> bool:
    return bool(cmd) and str(cmd[0]) == str(SNAKEMAKE)


class Popen:
    """A run of the preloaded server: ``pid``, ``returncode``, ``poll``, ``wait``,
    ``communicate``, ``send_signal``, ``terminate``, ``kill``, ``stdout``, ``stderr``."""

    def __init__(self, args, *, env=None, cwd=None, stdin=subprocess.DEVNULL, stdout=None, stderr=None,
                 text=False, start_new_session=False, preexec_fn=None, umask=None):
        if preexec_fn is not None and getattr(preexec_fn, "__name__", "") != "foreground_signals":
            raise TypeError("a preloaded run takes faultkit.foreground_signals as its only preexec_fn "
                            "(a umask is umask=)")
        self.args, self.returncode, self._text = list(map(str, args)), None, text
        self.stdin = self.stdout = self.stderr = None
        ours, fds = [], []
        for i, (want, default) in enumerate(((stdin, 0), (stdout, 1), (stderr, 2))):
            if want == subprocess.PIPE:
                r, w = os.pipe()
                keep, give = (w, r) if i == 0 else (r, w)
                ours.append(give)
                setattr(self, ("stdin", "stdout", "stderr")[i],
                        os.fdopen(keep, ("w" if i == 0 else "r") + ("" if text else "b")))
                fds.append(give)
            elif want == subprocess.STDOUT:
                fds.append(fds[1])
            elif want == subprocess.DEVNULL:
                fd = os.open(os.devnull, os.O_RDWR)
                ours.append(fd)
                fds.append(fd)
            elif want is None:
                fds.append(default)
            else:
                fds.append(want if isinstance(want, int) else want.fileno())
        req = {"argv": self.args, "env": dict(os.environ if env is None else env),
               "cwd": str(cwd or os.getcwd()), "session": bool(start_new_session),
               "foreground": preexec_fn is not None, "umask": _umask() if umask is None else umask}
        self._conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._conn.connect(_address())
            socket.send_fds(self._conn, [json.dumps(req).encode()], fds)
        except BaseException:       # no run: nothing of it kept open
            self._conn.close()
            for f in (self.stdin, self.stdout, self.stderr):
                if f:
                    f.close()
            raise
        finally:
            for fd in ours:
                os.close(fd)
        self._buf = b""
        self.pid = int(self._line(block=True))

    def _line(self, block: bool):
        """The server's next line (the pid, then the exit status); None if not yet sent."""
        while b"\n" not in self._buf:
            try:
                got = self._conn.recv(64, 0 if block else socket.MSG_DONTWAIT)
            except BlockingIOError:
                return None
            if not got:
                raise RuntimeError(f"the preloaded Snakemake server lost its run of {self.args[1:4]}")
            self._buf += got
        line, self._buf = self._buf.split(b"\n", 1)
        return line.decode()

    def poll(self):
        if self.returncode is None:
            line = self._line(block=False)
            if line is not None:
                self.returncode = int(line)
                self._conn.close()
        return self.returncode

    def wait(self, timeout=None):
        if self.returncode is None:
            end = None if timeout is None else time.monotonic() + timeout
            while self.poll() is None:
                if end is not None and time.monotonic() > end:
                    raise subprocess.TimeoutExpired(self.args, timeout)
                time.sleep(0.02)
        return self.returncode

    def communicate(self, timeout=None):
        out = {}

        def read(name):
            f = getattr(self, name)
            out[name] = f.read() if f else None

        readers = [threading.Thread(target=read, args=(n,), daemon=True) for n in ("stdout", "stderr")]
        for t in readers:
            t.start()
        end = None if timeout is None else time.monotonic() + timeout
        for t in readers:
            t.join(None if end is None else max(0, end - time.monotonic()))
            if t.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout)
        self.wait(None if end is None else max(0.1, end - time.monotonic()))
        for f in (self.stdout, self.stderr):
            if f:
                f.close()
        return out["stdout"], out["stderr"]

    def send_signal(self, sig):
        if self.returncode is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self):
        self.send_signal(signal.SIGTERM)

    def kill(self):
        self.send_signal(signal.SIGKILL)


def popen(cmd, **kw):
    """``subprocess.Popen``, through the preloaded server where ``cmd`` is the venv's snakemake."""
    return Popen(cmd, **kw) if _is_snakemake(cmd) else subprocess.Popen(cmd, **kw)


def run(cmd, *, capture_output=False, timeout=None, check=False, **kw) -> subprocess.CompletedProcess:
    """``subprocess.run``, through the preloaded server where ``cmd`` is the venv's snakemake."""
    if not _is_snakemake(cmd):
        return subprocess.run(cmd, capture_output=capture_output, timeout=timeout, check=check, **kw)
    if capture_output:
        kw.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p = Popen(cmd, **kw)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise
    r = subprocess.CompletedProcess(p.args, p.returncode, out, err)
    if check:
        r.check_returncode()
    return r


if __name__ == "__main__":
    _serve(sys.argv[1])
