"""A private server's RAM (``server.ram``): a memory cgroup that holds the server process and
the page cache of the files it reads and writes, so a small run sees the pool : RAM : table
ratios of a large machine. The kernel charges a page-cache page to the cgroup of the process
that brought it in, and reclaims within the cgroup when it reaches its limit: a page the pool
evicts stays readable from the page cache only while the cgroup holds it.

cgroup v2 (``memory.max``) where the unified hierarchy has the memory controller, else v1's
memory controller (``memory.limit_in_bytes``); as root. The cgroup is made beside this
process's own (a child of it), named after the server, and removed when the server stops.

``server.page_cache`` holds the page cache, not the RAM: the limit follows the server's own
bytes (``PageCacheHold``), so a ladder's rung gets the target's page cache scaled by its rows
whatever its server's own memory is (a rung's own is most of its RAM, and not the target's)."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from ..infra.settings import ServerError

ROOT = Path("/sys/fs/cgroup")
KEY = "server.ram"
PAGE_KEY = "server.page_cache"
HOLD_S = 0.1          # how often the page cache's limit follows the server's own bytes
# ... a job's (``held_here``): a Python job's own memory grows in bursts (imports, a JIT's
# compiles), and past the limit it waits at each page fault for the next step
JOB_HOLD_S = 0.01
# Room beside the held page cache for what a step may add (the server's memory, a file's writes):
# a limit met with nothing to reclaim fails the server's writes (MyRocks aborts on ENOMEM).
HOLD_MARGIN = 8 * 2 ** 20
# ... beside a job's: its processes' code is file pages too, and what a step evicts of it they
# fault back at once (LLVM's, compiling a JIT's functions, thrashed for minutes in 8 MiB)
JOB_HOLD_MARGIN = 64 * 2 ** 20
REMOVE_TRIES = 100    # × 0.1 s for a dead server's last process (its core dump) to leave its cgroup


class MemoryLimitError(ServerError):
    """The RAM a config gives cannot be enforced on this machine."""


def _own(line_of: str) -> str:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers == line_of or line_of in controllers.split(","):
            return path.lstrip("/")
    raise MemoryLimitError(f"config key '{KEY}': this process has no {line_of or 'unified'} cgroup "
                           f"(/proc/self/cgroup)")


def _hierarchy() -> tuple[int, Path]:
    """(version, the folder a child cgroup is made in)."""
    v2 = ROOT / "cgroup.controllers"
    if v2.exists() and "memory" in v2.read_text().split():
        return 2, ROOT / _own("")
    if (ROOT / "memory" / "memory.limit_in_bytes").exists():
        return 1, ROOT / "memory" / _own("memory")
    raise MemoryLimitError(f"config key '{KEY}': no memory cgroup controller here (neither cgroup v2's "
                           f"{ROOT}/cgroup.controllers nor v1's {ROOT}/memory); leave it null on this machine")


# A cgroup this module made: catbench-<server>-<pid of the process that made it>
OWNED = re.compile(r"catbench-.+-(\d+)")


def sweep() -> list[Path]:
    """Every memory cgroup catbench made whose owner is gone (a SIGKILL skips ``remove``), anywhere
    in the hierarchy: its OOM killer turned back on (v1), then the folder removed where no
    process is left in it. Run by every catbench command as root; returns what it removed."""
    roots = [p for p in (ROOT / "memory", ROOT) if (p / "cgroup.procs").exists()][:1]
    if os.geteuid() != 0 or not roots:
        return []
    gone = []
    for folder, dirs, _ in os.walk(roots[0]):
        for name in [d for d in dirs if OWNED.fullmatch(d) and not Path(f"/proc/{OWNED.fullmatch(d)[1]}").exists()]:
            dirs.remove(name)
            path = Path(folder) / name
            try:
                (path / "memory.oom_control").write_text("0")
            except OSError:
                pass
            try:
                path.rmdir()
                gone.append(path)
            except OSError as exc:
                logging.getLogger(__name__).warning("memory cgroup %s of a dead catbench process still holds a "
                                                    "process (%s); its OOM killer is on again", path, exc.strerror)
    return gone


def check() -> None:
    """MemoryLimitError, naming the key, where no server's memory cgroup could be made here: a
    probe cgroup made and removed."""
    MemoryCage("probe", 1 << 30).remove()


class MemoryCage:
    """One server's memory cgroup: made with its limit before the server starts, the server's
    process put in it before it runs anything (``enter`` in the child), removed after it stops.
    ``job``: a job's (``held_here``), whose page cache its holder process holds, not this one."""

    def __init__(self, name: str, limit: int | None, hold: int | None = None, job: bool = False):
        self.key = key = PAGE_KEY if hold else KEY
        if os.geteuid() != 0:
            raise MemoryLimitError(f"config key '{key}': a memory cgroup is set as root; run as root or "
                                   f"leave it null")
        self.version, parent = _hierarchy()
        self.limit = int(limit or 0)
        self.hold: PageCacheHold | None = None
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
        self.path = parent / f"catbench-{safe}-{os.getpid()}"
        limit_file = "memory.max" if self.version == 2 else "memory.limit_in_bytes"
        try:
            if self.version == 2:
                self._delegate(parent)
            self.path.mkdir(exist_ok=True)
            if self.limit:
                (self.path / limit_file).write_text(str(self.limit))
            if (self.path / "memory.swap.max").exists():    # the limit is RAM, not RAM and swap
                (self.path / "memory.swap.max").write_text("0")
            if hold and not job:
                self.hold = PageCacheHold(self, int(hold))
        except OSError as exc:
            self.remove()
            raise MemoryLimitError(f"config key '{key}': the memory cgroup {self.path} could not be set to "
                                   f"{self.limit or hold or 0:,} bytes ({exc.strerror or exc}); leave it null on "
                                   f"this machine") from exc
        self._procs = os.fsencode(str(self.path / "cgroup.procs"))

    @staticmethod
    def _delegate(parent: Path) -> None:
        control = parent / "cgroup.subtree_control"
        if "memory" not in control.read_text().split():
            control.write_text("+memory")

    def enter(self, pid: int | None = None) -> None:
        """``pid`` (default: this process, the child side of fork before exec, so every page
        the server touches is charged here) into the cgroup: one open and one write."""
        fd = os.open(self._procs, os.O_WRONLY)
        try:
            os.write(fd, str(pid or os.getpid()).encode())
        finally:
            os.close(fd)

    def holds(self, pid: int) -> bool:
        return str(pid) in _procs(self.path)

    def oom_kills(self) -> int:
        """Processes the kernel's OOM killer ended in this cgroup (its memory was the server's own
        and the dirty pages it could not write back in time)."""
        for name in ("memory.events", "memory.oom_control"):
            try:
                for line in (self.path / name).read_text().splitlines():
                    if line.startswith("oom_kill "):
                        return int(line.split()[1])
            except (OSError, ValueError):
                continue
        return 0

    def oom_note(self) -> str:
        """", by the kernel's OOM killer within …" for a server the OOM killer ended in this
        cgroup, naming the config key and its bytes; "" where it did not."""
        if not self.oom_kills():
            return ""
        held = self.limit or (self.hold.held_bytes if self.hold else 0)
        return (f", by the kernel's OOM killer within its config key '{self.key}' of {held:,} bytes: the server "
                f"and its unwritten pages need more (for a ladder's rungs, predict.ram_own)")

    def peak(self) -> int | None:
        """The most the cgroup held (server and page cache), bytes; None where not kept."""
        for name in ("memory.peak", "memory.max_usage_in_bytes"):
            try:
                return int((self.path / name).read_text())
            except (OSError, ValueError):
                continue
        return None

    def split(self, dirty: bool = False, mapped: bool = False) -> tuple[int, ...] | None:
        """(the server's own bytes, its page cache's bytes) the cgroup holds now: v2's ``anon``
        and ``file``, v1's ``rss`` and ``cache`` (``dirty``: and the page cache's pages not yet
        written or being written; ``mapped``: and its pages the processes map); None where not kept.
        What the page cache really had beside the server is what a model of misses served from RAM
        needs."""
        keys = (("anon", "file", "file_dirty", "file_writeback", "file_mapped") if self.version == 2
                else ("rss", "cache", "dirty", "writeback", "mapped_file"))
        try:
            stat = dict(line.split()[:2] for line in (self.path / "memory.stat").read_text().splitlines())
            return tuple(int(stat[k]) for k in (keys if mapped else keys[:4] if dirty else keys[:2]))
        except (OSError, ValueError, KeyError):
            return None

    def usage(self) -> int:
        """All the cgroup is charged for now (its processes', their page cache's, the kernel's), bytes."""
        try:
            return int((self.path / ("memory.current" if self.version == 2 else "memory.usage_in_bytes")).read_text())
        except (OSError, ValueError):
            return 0

    def remove(self) -> None:
        """The cgroup's folder, once no process is in it (its page cache goes to the parent): a
        server that died may still be writing its core file for a few seconds."""
        if self.hold is not None:
            self.hold.stop()
        for _ in range(REMOVE_TRIES):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:   # a process still in it: wait; past the tries it is left, and named
                time.sleep(0.1)


class PageCacheHold:
    """Keeps a cage's clean page cache at ``held_bytes`` (+ its margin) bytes beside what the
    server itself holds: every HOLD_S its limit is set to the server's own bytes, the pages not
    yet written back, ``held_bytes`` and the margin (v2 ``memory.high``, which reclaims and
    throttles and never kills; v1 ``memory.limit_in_bytes`` with the OOM killer off, so a server
    whose own memory jumps past it, as at a load's first file, waits a step at its page fault
    instead of being killed). Its own thread: it must not wait on the server. It holds from
    ``start`` (the server up), not while the server starts (io_uring's rings, the pool).
    ``job`` (``held_here``'s hold): the kernel's memory charged to the cage and the files its
    processes map count as their own too (a Dask cluster's sockets and threads hold tens of MiB of
    the one, v1 failing a kernel allocation past the limit; a Python job's libraries are the other),
    in steps of JOB_HOLD_S with JOB_HOLD_MARGIN.
    ``cache_peak``: the most clean page cache (unmapped, for a job's) a step saw, bytes."""

    def __init__(self, cage: MemoryCage, held_bytes: int, job: bool = False):
        self.cage, self.held_bytes, self.job, self.cache_peak = cage, held_bytes, job, 0
        self._peak_lock = threading.Lock()
        self.every, self.margin = (JOB_HOLD_S, JOB_HOLD_MARGIN) if job else (HOLD_S, HOLD_MARGIN)
        self.file = cage.path / ("memory.high" if cage.version == 2 else "memory.limit_in_bytes")
        if cage.version == 1:
            (cage.path / "memory.oom_control").write_text("1")
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self.step()
            self._thread = threading.Thread(target=self._run, name="catbench-page-cache", daemon=True)
            self._thread.start()

    def step(self) -> None:
        split = self.cage.split(dirty=True, mapped=self.job)
        if split is None:
            return
        own, cache, dirty, writeback = split[:4]
        if self.job:
            # the files the processes map (their code) are theirs: held with the data they read,
            # a job's Python, NumPy and Arrow thrash at each instruction
            own = max(own, self.cage.usage() - cache) + split[4]
            cache -= split[4]
        with self._peak_lock:
            self.cache_peak = max(self.cache_peak, cache - dirty - writeback)
        limit = own + dirty + writeback + self.held_bytes + self.margin
        try:
            self.file.write_text(str(limit))
        except OSError:   # v1 could not reclaim down to it yet (EBUSY): the next step tries again
            pass

    def take_peak(self) -> int:
        """``cache_peak`` so far, counted again from 0."""
        with self._peak_lock:
            peak, self.cache_peak = self.cache_peak, 0
        return peak

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.step()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()


class Held:
    """What ``held_here`` yields. ``phase(name)`` ends the job's phase and starts ``name`` (a
    Python engine's build of its layout, then its queries): each has its own peak. ``peaks``:
    {phase: the most clean page cache a step saw in it, bytes}, filled in on the way out."""

    def __init__(self, holder: subprocess.Popen):
        self._holder, self.peaks = holder, {}

    def phase(self, name: str) -> None:
        try:
            self._holder.stdin.write(f"{name}\n")
            self._holder.stdin.flush()
        except (BrokenPipeError, ValueError):     # the holder gone: nothing holds the page cache any more
            raise MemoryLimitError(f"config key '{PAGE_KEY}': the holder of the page cache exited "
                                   f"({self._holder.poll()}) before the job's phase {name!r}") from None


@contextmanager
def held_here(name: str, held_bytes: int, phase: str = "job"):
    """This process, and every process it starts inside, in a memory cgroup whose clean page cache
    is held at ``held_bytes`` (``server.page_cache``) beside all else they hold; yields a ``Held``,
    its first phase ``phase``. The hold steps from a process of its own outside the cage: a thread
    inside would wait at a page fault with the processes it must let through. Back in its own
    cgroup after, the cage removed: the processes started inside must be gone by then or are
    moved out with it."""
    cage = MemoryCage(name, None, held_bytes, job=True)
    holder = held = None
    done = False
    try:
        holder = subprocess.Popen([sys.executable, "-c", f"from {__name__} import _hold; _hold()", str(cage.path),
                                   str(cage.version), str(held_bytes), phase],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if holder.stdout.readline().strip() != "holding":     # its first step taken: the cage has its limit
            raise MemoryLimitError(f"config key '{PAGE_KEY}': the page cache of {cage.path} could not be held "
                                   f"(its holder exited {holder.wait()})")
        cage.enter()
        held = Held(holder)
        yield held
        done = True
    finally:
        _empty(cage.path)
        if holder is not None:
            out, _ = holder.communicate()     # its stdin closed: it ends, saying what it saw
            if held is not None and out.strip():
                held.peaks = json.loads(out)
        cage.remove()
        if cage.path.exists():
            logging.getLogger(__name__).warning("memory cgroup %s still holds %s; the next catbench command removes "
                                                "it once they are gone", cage.path, " ".join(_procs(cage.path)))
    if done and holder.returncode:      # what the job measured was not held throughout
        raise MemoryLimitError(f"config key '{PAGE_KEY}': the holder of the page cache exited ({holder.returncode}) "
                               f"while the job ran")


def _empty(path: Path) -> None:
    """This process out of the cage at ``path``, and what it started that lives on (multiprocessing's
    resource tracker ends with it): the hold is over."""
    for pid in [str(os.getpid()), *_procs(path)]:
        try:
            (path.parent / "cgroup.procs").write_text(pid)
        except OSError:     # gone
            pass


def _procs(path: Path) -> list[str]:
    try:
        return (path / "cgroup.procs").read_text().split()
    except OSError:
        return []


def _hold() -> None:
    """The holder of ``held_here``: steps until its stdin closes (the job done, or dead); each line
    on it starts a phase of that name. Then prints {phase: the most clean page cache it saw}."""
    path, version, held, phase = sys.argv[1:5]
    cage = MemoryCage.__new__(MemoryCage)
    cage.path, cage.version, cage.hold = Path(path), int(version), None
    hold = PageCacheHold(cage, int(held), job=True)
    hold.start()
    print("holding", flush=True)
    peaks = {}
    for line in sys.stdin:
        peaks[phase] = max(peaks.get(phase, 0), hold.take_peak())
        phase = line.strip()
    hold.stop()
    peaks[phase] = max(peaks.get(phase, 0), hold.take_peak())
    print(json.dumps(peaks))


def meminfo(path: str = "/proc/meminfo") -> dict[str, int]:
    """The kernel's memory figures: bytes where it gives kB, else the count (HugePages_*)."""
    out = {}
    try:
        text = Path(path).read_text()
    except OSError:
        return out
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            out[key] = int(parts[0]) * (1024 if parts[-1] == "kB" else 1)
    return out
