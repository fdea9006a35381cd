"""What first touching fresh memory costs this machine: the memory probe a restart study runs
before its kinds (``restart.memory_probe``). A crash recovery fills memory it never touched
(its parsed redo, the pages it reads into the pool); on a virtual machine whose host backs the
guest's memory lazily, or returns its free pages (free page reporting), a page touched for the
first time can cost ~8x one the machine had touched recently, past the first GB or two. The
rungs of a ladder touch little and see the cheap part only, so the model prices the target's
touch from this curve (predict/restarts/model.md).

The lookup probe beside it (before a crash kind): what a lookup in an ordered map costs this
machine as the map grows. A crash recovery puts each redo record into MariaDB's map of the
pages it touches (``recv_sys.pages``, a red-black tree): one lookup a record. A rung's map of a
few thousand pages sits in the CPU's cache; a node's of 10^5–10^7 pages does not, and every
level past the cache waits on memory (profiled: the tree's lookup loops went from 8 % to 16 % of
a recovery's samples at 17× the pages). The rungs cannot see that step; its curve does
(predict/restarts/lookup.py)."""

from __future__ import annotations

import mmap
import time
from ..core.infra.sizes import human, parse_size
from ..core.server.memory import meminfo

CHUNK = 256 * 2 ** 20
LARGE_PAGE_MARGIN = 512 * 2 ** 20
PAGE = 4096     # one write a page: the kernel's own page size, which the server's pool gets too


def touch_curve(total: int, chunk: int = CHUNK) -> dict:
    """Seconds to first-touch each ``chunk`` of ``total`` bytes of fresh anonymous memory, in
    order (an anonymous map, as the server's buffer pool is: no huge-page advice), and to give
    all of it back (``release_s``: unmapped at once, as a server's exit unmaps its pool)."""
    import numpy as np
    total = max(chunk, total - total % chunk)
    mm = mmap.mmap(-1, total)
    try:
        a = np.frombuffer(mm, dtype=np.uint8)
        secs = []
        for off in range(0, total, chunk):
            t = time.perf_counter()
            a[off:off + chunk:PAGE] = 1
            secs.append(round(time.perf_counter() - t, 6))
        del a
    finally:
        t = time.perf_counter()
        mm.close()   # what a server's exit pays for the pool it touched
        released = round(time.perf_counter() - t, 6)
    return {"chunk_bytes": chunk, "seconds": secs, "release_s": released}


def large_pages_short(settings: dict, meminfo_path: str = "/proc/meminfo") -> str | None:
    """Where the settings put the buffer pool on large pages (``large_pages``) and fewer are
    reserved free than the pool needs, why (MariaDB would fall back to 4 KiB pages, warning only
    in its log, and the study would time the memory it meant to leave out); else None."""
    if str(settings.get("large_pages", "")).upper() not in ("ON", "1", "TRUE"):
        return None
    pool = parse_size(str(settings.get("innodb_buffer_pool_size", "128M")))
    info = meminfo(meminfo_path)
    page = info.get("Hugepagesize", 2 ** 21)
    free = info.get("HugePages_Free", 0) * page
    # the key cache and Aria's page cache take large pages before InnoDB does (128 MiB each by default)
    need = -(-(pool + LARGE_PAGE_MARGIN) // page)
    if free >= need * page:
        return None
    return (f"restart.settings large_pages: ON needs the {human(pool)} buffer pool and "
            f"{human(LARGE_PAGE_MARGIN)} beside it in reserved large pages, "
            f"{human(free)} are free (HugePages_Free in {meminfo_path}); as root: sysctl -w vm.nr_hugepages={need} "
            f"(and vm.nr_hugepages=0 after the run)")


NODE_WORDS = 8            # a tree node's 64 bytes: 8 sorted int64 a node, one cache line each
NODE_BYTES = 8 * NODE_WORDS
LOOKUPS = 100_000


def lookup_sizes(largest_bytes: int) -> tuple[int, ...]:
    """Maps of 1,024 nodes doubling up to ``largest_bytes`` of nodes (restart.lookup_probe)."""
    return tuple(2 ** k for k in range(10, 64) if 2 ** k * NODE_BYTES <= largest_bytes)


SIZES = lookup_sizes(256 * 2 ** 20)   # 1,024 to 4.2 million nodes


def lookup_curve(sizes: tuple[int, ...] = SIZES, lookups: int = LOOKUPS, seed: int = 1) -> dict:
    """Nanoseconds a random lookup (a binary search, whose levels past the cache each wait on
    memory as a tree's do) costs in a sorted map of each size of nodes; the best of two. One
    sorted array of the largest size: a map of fewer nodes is its first part."""
    import numpy as np
    rng = np.random.default_rng(seed)
    keys = np.arange(0, max(sizes) * NODE_WORDS * 7, 7, dtype=np.int64)   # sorted, one pass of writes
    ns = []
    for n in sizes:
        part = keys[:n * NODE_WORDS]
        probe = rng.integers(0, int(part[-1]), size=lookups, dtype=np.int64)
        best = float("inf")
        for _ in range(2):
            t = time.perf_counter()
            np.searchsorted(part, probe)
            best = min(best, time.perf_counter() - t)
        ns.append(round(best / lookups * 1e9, 2))
    del keys
    return {"nodes": list(sizes), "ns": ns}
