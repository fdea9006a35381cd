"""Restart phases from a MariaDB/MySQL error log.

Two clocks are available for every marker line and both are kept:

* ``log_time``: the timestamp the server wrote into the line (MariaDB: whole seconds,
  local time; MySQL 8: microseconds, UTC), as epoch seconds;
* ``seen``: when catbench's ``LogWatcher`` saw the line appear in the file (``time.time()``,
  woken by the kernel as the line is written, ``FileWake``; polled every few milliseconds where
  inotify is not available). MariaDB writes its error log unbuffered, so ``seen`` is the
  high-resolution clock of a phase boundary.

``parse_lines`` works on any log text; ``LogWatcher`` follows a growing log from an
offset in a background thread.
"""

from __future__ import annotations

import calendar
import ctypes
import os
import re
import select
import struct
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

_TS_MARIADB = re.compile(r"^(\d{4}-\d\d-\d\d) +(\d{1,2}):(\d\d):(\d\d) ")
_TS_MYSQL = re.compile(r"^(\d{4}-\d\d-\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d) ")

# name -> pattern; the first matching pattern names the line (order matters).
MARKERS: list[tuple[str, re.Pattern]] = [(n, re.compile(p)) for n, p in [
    ("process_start", r"Starting MariaDB .* as process (\d+)|mysqld .*starting as process (\d+)"),
    ("buffer_pool_init", r"InnoDB: Completed initialization of buffer pool"),
    ("recovery_start", r"Starting crash recovery from checkpoint LSN=(\d+)"
                       r"|Database was not shut ?down normally"),
    ("redo_read", r"Read redo log up to LSN=(\d+)"),
    ("end_of_log", r"End of log at LSN=(\d+)"),
    ("multi_batch", r"Multi-batch recovery needed at LSN (\d+)"),
    ("to_recover", r"To recover: (?:LSN (\d+)/(\d+); )?(\d+) pages"),
    ("redo_batch", r"Starting (?:a|final) batch to recover (\d+) pages"),
    ("redo_apply_progress", r"(?:Recovered|To recover).*\((\d+)%\)|Apply batch completed"),
    ("rollback_start", r"Starting in background the rollback|Rolling back trx with id (\d+), (\d+) rows"),
    ("rollback_trx", r"Rolled back recovered transaction (\d+)"),
    ("rollback_done", r"Rollback of non-prepared transactions completed"),
    ("undo_ready", r"InnoDB: \d+ rollback segments are active"),
    # 10.11: "log sequence number N; transaction id T", on tmpfs/pmem "N (memory-mapped); ...",
    # up to 10.5: "10.5.8 started; log sequence number N; transaction id T"
    ("engine_ready", r"InnoDB: (?:[^;]*started; )?log sequence number (\d+)(?: \([^)]*\))?; transaction id (\d+)"),
    ("buffer_pool_load_start", r"Loading buffer pool\(s\) from"),
    ("buffer_pool_load_done", r"Buffer pool\(s\) load completed"),
    ("ready", r"ready for connections"),
    ("shutdown_start", r"Normal shutdown|Received SHUTDOWN"),
    ("buffer_pool_dump_done", r"Buffer pool\(s\) dump completed"),
    ("shutdown_lsn", r"Shutdown completed; log sequence number (\d+)"),
    ("shutdown_done", r"Shutdown complete$"),
    ("error", r"\[ERROR\]"),
]]


@dataclass
class Event:
    name: str
    line: str
    log_time: float | None  # epoch seconds from the line's own timestamp
    seen: float | None = None  # time.time() when the watcher saw the line
    numbers: list[int] = field(default_factory=list)

    def as_dict(self, t0: float | None = None) -> dict:
        rel = (lambda t: None if t is None or t0 is None else round(t - t0, 6))
        return {"event": self.name, "log_time": self.log_time, "seen": self.seen,
                "log_time_rel_s": rel(self.log_time), "seen_rel_s": rel(self.seen),
                "numbers": self.numbers, "line": self.line[:300]}


def line_time(line: str) -> float | None:
    """Epoch seconds of a log line's timestamp (MariaDB local time, MySQL ISO)."""
    m = _TS_MYSQL.match(line)
    if m:
        y, mo, d = (int(x) for x in m.group(1).split("-"))
        t = calendar.timegm((y, mo, d, int(m.group(2)), int(m.group(3)), int(m.group(4)), 0, 0, 0))
        t += float(m.group(5) or 0)
        tz = m.group(6)
        if tz != "Z":
            sign = 1 if tz[0] == "+" else -1
            t -= sign * (int(tz[1:3]) * 3600 + int(tz[4:6]) * 60)
        return t
    m = _TS_MARIADB.match(line)
    if m:
        y, mo, d = (int(x) for x in m.group(1).split("-"))
        return time.mktime((y, mo, d, int(m.group(2)), int(m.group(3)), int(m.group(4)), 0, 0, -1))
    return None


def classify(line: str, seen: float | None = None) -> Event | None:
    for name, pat in MARKERS:
        m = pat.search(line)
        if m:
            nums = [int(g) for g in m.groups() if g is not None and g.isdigit()]
            return Event(name, line.rstrip("\n"), line_time(line), seen, nums)
    return None


def parse_lines(text: str) -> list[Event]:
    """Marker events of a log text (no ``seen`` times)."""
    return [e for e in (classify(l) for l in text.splitlines()) if e is not None]


def last_start(events: list[Event]) -> list[Event]:
    """The events of the last server start in ``events``."""
    idx = [i for i, e in enumerate(events) if e.name == "process_start"]
    return events[idx[-1]:] if idx else events


def first(events: list[Event], name: str) -> Event | None:
    return next((e for e in events if e.name == name), None)


def last(events: list[Event], name: str) -> Event | None:
    return next((e for e in reversed(events) if e.name == name), None)


def tail(path, n: int = 30) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return f"(no log at {path})"


# <sys/inotify.h>
IN_MODIFY, IN_CLOSE_WRITE, IN_MOVED_TO, IN_CREATE = 0x2, 0x8, 0x80, 0x100
_EVENT = struct.Struct("iIII")     # wd, mask, cookie, len; then len bytes of name


class FileWake:
    """Wake when a file is written, through Linux's inotify (libc by ctypes): a log follower
    reads each line as it lands, within a millisecond, where polling every 2 ms takes ~5 % of a
    core per follower beside the server whose restart it times. The file's directory is
    watched, not the file, so that a log created, replaced or truncated after the watch began is
    still followed; other files' events are drained and ignored.

    ``wait(timeout)`` returns True when ``path`` was written (or created, or moved in) since
    the last call, False after ``timeout``; ``interrupt()`` (from another thread) ends a wait at
    once. ``FileWake.of(path)`` is None where inotify is not available (the caller polls)."""

    def __init__(self, fd: int, name: bytes):
        self._fd = fd
        self._name = name
        self._pipe = os.pipe()
        self._poller = select.poll()
        self._poller.register(fd, select.POLLIN)
        self._poller.register(self._pipe[0], select.POLLIN)

    @classmethod
    def of(cls, path) -> FileWake | None:
        path = Path(path)
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError):
            return None
        if fd < 0:
            return None
        mask = IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE
        if libc.inotify_add_watch(fd, os.fsencode(path.parent), mask) < 0:
            os.close(fd)
            return None
        return cls(fd, os.fsencode(path.name))

    def wait(self, timeout: float) -> bool:
        for fd, _ev in self._poller.poll(timeout * 1000):
            if fd == self._pipe[0]:
                return True
        return self._drain()

    def _drain(self) -> bool:
        hit = False
        while True:
            try:
                buf = os.read(self._fd, 65536)
            except BlockingIOError:
                return hit
            at = 0
            while at + _EVENT.size <= len(buf):
                _wd, _mask, _cookie, n = _EVENT.unpack_from(buf, at)
                name = buf[at + _EVENT.size:at + _EVENT.size + n].rstrip(b"\0")
                hit = hit or name == self._name
                at += _EVENT.size + n

    def interrupt(self) -> None:
        os.write(self._pipe[1], b"x")

    def close(self) -> None:
        for fd in (self._fd, *self._pipe):
            try:
                os.close(fd)
            except OSError:
                pass


class LogWatcher:
    """Follow ``path`` from byte ``offset`` in a thread; every marker line gets ``seen``: read
    as the kernel says the file was written, and every ``WAKE_S`` besides (a file system whose
    writes inotify does not report); every ``poll_s`` where inotify is not available."""

    WAKE_S = 0.05

    def __init__(self, path, offset: int | None = None, poll_s: float = 0.002):
        self.path = Path(path)
        if offset is None:
            offset = self.path.stat().st_size if self.path.exists() else 0
        self.offset = offset
        self.poll_s = poll_s
        self.events: list[Event] = []
        self.lines: list[tuple[float, str]] = []
        self._rest = b""
        self._stop = threading.Event()
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="catbench-logwatch", daemon=True)
        self._wake: FileWake | None = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self):
        self._wake = FileWake.of(self.path)     # before the first read: no write falls between
        self._thread.start()

    def stop(self):
        self._stop.set()
        if self._wake is not None:
            self._wake.interrupt()
        if self._thread.is_alive():
            self._thread.join(5)
        if self._wake is not None and not self._thread.is_alive():
            self._wake.close()      # here, not in the thread: interrupt() must never write to a reused fd
            self._wake = None
        self._poll()  # whatever arrived last

    def _poll(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return
        if not data:
            return
        now = time.time()
        self.offset += len(data)
        data = self._rest + data
        *complete, self._rest = data.split(b"\n")
        with self._cond:
            for raw in complete:
                line = raw.decode("utf-8", "replace")
                self.lines.append((now, line))
                ev = classify(line, now)
                if ev is not None:
                    self.events.append(ev)
            self._cond.notify_all()

    def _run(self):
        while not self._stop.is_set():
            self._poll()
            if self._wake is None:
                self._stop.wait(self.poll_s)
            else:
                self._wake.wait(self.WAKE_S)

    def first(self, name: str) -> Event | None:
        with self._cond:
            return first(self.events, name)

    def wait_for(self, name: str, timeout: float) -> Event | None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                ev = first(self.events, name)
                left = deadline - time.monotonic()
                if ev is not None or left <= 0:
                    return ev
                self._cond.wait(min(left, 0.05))
