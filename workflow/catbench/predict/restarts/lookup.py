"""The redo scan's lookups past the CPU's cache (model.md, "The page map past the cache"): the
rungs' scan cost a byte carries a map of their few thousand pages, held in cache; a target's
map of many more pages waits on memory at each level past it. The lookup probe
(``lookup_curve`` in restart/memory.py) times a lookup at each map size on the machine the
rungs ran on; the scan's cost a byte is scaled by the mean lookup as the target's map grows
over that as the rungs' grew."""

from __future__ import annotations

import math
import statistics

import numpy as np

from .runs import RungSizes


def lookup_ns(curve: dict, nodes: float) -> float:
    """A lookup's nanoseconds in a map of ``nodes``: the probe's curve, linear in log2 of the
    nodes between its points and past its ends (each level more, one more wait)."""
    x = np.log2(np.asarray(curve["nodes"], float))
    y = np.asarray(curve["ns"], float)
    at = math.log2(max(2.0, nodes))
    if at <= x[-1]:
        return float(np.interp(at, x, y))
    slope = (y[-1] - y[-2]) / (x[-1] - x[-2])
    return float(y[-1] + max(0.0, slope) * (at - x[-1]))


def mean_lookup(curve: dict, nodes: float, steps: int = 256) -> float:
    """The mean lookup while a map grows from empty to ``nodes`` pages, as a scan adds them."""
    return statistics.fmean(lookup_ns(curve, nodes * (i + 0.5) / steps) for i in range(steps))


def lookup_factor(sizes: list[RungSizes], pages: float) -> tuple[float, float, float, str] | None:
    """(median, least, most) over the rungs of the target's mean lookup over theirs, a map of
    ``pages`` against each rung's pages at its kills, and its words; None without a probe."""
    ratios = []
    for s in sizes:
        theirs = [n for _r, n, _sh, _lsn in s.recovered_pages if n > 1]
        if s.lookup and s.lookup.get("ns") and theirs:
            ratios.append(mean_lookup(s.lookup, pages) / mean_lookup(s.lookup, statistics.median(theirs)))
    if not ratios:
        return None
    ratios = sorted(max(1.0, r) for r in ratios)
    mid = ratios[len(ratios) // 2]
    words = (f"redo_scan: a map of {pages:,.0f} pages, its lookups {mid:.2f}x the rungs' (the lookup probe: "
             f"{ratios[0]:.2f}-{ratios[-1]:.2f}x over the rungs)")
    return mid, ratios[0], ratios[-1], words
