"""What a lookup in an ordered map costs this machine as the map grows: the lookup probe a
restart study runs before a crash kind. A crash recovery puts each redo record into MariaDB's
map of the pages it touches (``recv_sys.pages``, a red-black tree): one lookup a record. A
rung's map of a few thousand pages sits in the CPU's cache; a node's of 10^5–10^7 pages does
not, and every level past the cache waits on memory (profiled: the tree's lookup loops went
from 8 % to 16 % of a recovery's samples at 17× the pages). The rungs cannot see that step;
this curve does (predict/restarts/lookup.py)."""

from __future__ import annotations

import time

NODE_WORDS = 8            # a tree node's 64 bytes: 8 sorted int64 a node, one cache line each
SIZES = tuple(2 ** k for k in range(10, 23))   # 1,024 to 4.2 million nodes (256 MiB at the top)
LOOKUPS = 200_000


def lookup_curve(sizes: tuple[int, ...] = SIZES, lookups: int = LOOKUPS, seed: int = 1) -> dict:
    """Nanoseconds a random lookup (a binary search, whose levels past the cache each wait on
    memory as a tree's do) costs in a sorted map of each size of nodes; the best of three."""
    import numpy as np
    rng = np.random.default_rng(seed)
    ns = []
    for n in sizes:
        keys = np.cumsum(rng.integers(1, 1 << 20, size=n * NODE_WORDS, dtype=np.int64))
        probe = rng.integers(0, int(keys[-1]), size=lookups, dtype=np.int64)
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            np.searchsorted(keys, probe)
            best = min(best, time.perf_counter() - t)
        ns.append(round(best / lookups * 1e9, 2))
        del keys
    return {"nodes": list(sizes), "ns": ns}
