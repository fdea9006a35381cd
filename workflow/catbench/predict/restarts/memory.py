"""The first touch of the memory a crash recovery fills, priced past what the rungs touched
(model.md, "Memory a recovery fills"): the rungs' servers held a few hundred MB after
recovery and touched it at the machine's cheap rate, which their fitted phases carry; a
target's recovery fills GBs, and past what the machine had touched recently each page costs
its slow rate. The memory probe (restart/memory.py) gives both; this module adds the
difference to the redo phases."""

from __future__ import annotations

import numpy as np

from ...core.infra.sizes import human
from .runs import RungSizes, on_large_pages


def memory_of(sizes: list[RungSizes]) -> tuple[float, float] | None:
    """(fixed, per byte): the server's RSS after recovery as a fixed part plus a part a byte of
    redo and recovered pages, fitted over the rungs' kills; None without two sizes."""
    pts = [p for s in sizes for p in s.recovery_memory]
    if len({round(x) for x, _ in pts}) < 2:
        return None
    slope, fixed = np.polyfit([x for x, _ in pts], [y for _, y in pts], 1)
    return (float(max(0.0, fixed)), float(slope)) if slope > 0 else None


def touch_s(curve: dict, nbytes: float) -> float:
    """Seconds to first-touch ``nbytes`` by the probe's curve, past its end at its last chunk's rate."""
    chunk, secs = curve["chunk_bytes"], curve["seconds"]
    full = int(nbytes // chunk)
    if full < len(secs):
        return float(sum(secs[:full]) + secs[full] * (nbytes - full * chunk) / chunk)
    return float(sum(secs) + secs[-1] * (nbytes - len(secs) * chunk) / chunk)


def excess(curve: dict, nbytes: float) -> float:
    """What touching ``nbytes`` costs past the probe's first chunk's rate (the rate the rungs
    touched at, which their fits carry)."""
    return max(0.0, touch_s(curve, nbytes) - curve["seconds"][0] * nbytes / curve["chunk_bytes"])


def memory_excess(sizes: list[RungSizes], held: float, pool: float) -> tuple[float, float, float, str] | None:
    """(seconds, low, high, words) the target's recovery adds for memory touched past the rungs'
    rate, ``held`` = its redo since the checkpoint + pages recovered in bytes: the RSS it will
    have (fitted on the rungs; at most its ``pool`` beside the server's own: parsed redo and
    pages both live in the pool), priced by each rung's probe (the median; low and high: the
    least and the most); None where the rungs recorded no RSS or ran no probe."""
    fit = memory_of(sizes)
    curves = [s.touch for s in sizes if s.touch and s.touch.get("seconds")]
    if fit is None or not curves:
        return None
    rss = fit[0] + min(fit[1] * held, pool)
    costs = sorted(excess(c, rss) for c in curves)
    probed = min(len(c["seconds"]) * c["chunk_bytes"] for c in curves)
    words = (f"recovery fills ~{human(rss)} of memory (the rungs: {fit[1]:.2f} bytes a byte of redo and pages "
             f"+ {human(fit[0])}); its first touch past the rungs' rate adds {costs[len(costs) // 2]:.1f} s "
             f"(restart.memory_probe" + (f", extrapolated past its {human(probed)}" if rss > probed else "") + ")")
    return costs[len(costs) // 2], costs[0], costs[-1], words


def memory_phases(sizes: list[RungSizes], age: float, pages: float, pool: float, out: dict) -> dict:
    """A crash recovery's memory touched past the rungs' rate, split between the scan (its
    parsed redo, ``age`` bytes) and the apply (the ``pages`` bytes it reads) by their bytes;
    its words added to ``out``'s regime."""
    if on_large_pages(sizes):
        out["regime"] = [*out["regime"], "the rungs' pools on large pages reserved ahead: the memory recovery fills "
                                         "was backed before it, no first touch priced (as yours, if set so)"]
        return {}
    got = memory_excess(sizes, age + pages, pool)
    if got is None:
        out["regime"] = [*out["regime"], "no memory probe or RSS in the rungs: the first touch of the memory "
                                         "recovery fills is priced at the rungs' rate (restart.memory_probe)"]
        return {}
    *secs, words = got
    out["regime"] = [*out["regime"], words]
    w = age / (age + pages) if age + pages else 1.0
    return {"redo_scan": tuple(x * w for x in secs), "redo_apply": tuple(x * (1 - w) for x in secs)}


def release_excess(sizes: list[RungSizes], held: float) -> tuple[float, float, float, str] | None:
    """(seconds, low, high, words) a shutdown adds for giving back the ``held`` bytes of pool its
    server touched, past what the rungs' own shutdowns gave back (their fixed cost carries theirs):
    the kernel frees each page as the server exits, at the probe's ``release_s`` a byte (the median
    over the rungs; low and high: the least and the most); None on large pages (reserved, not
    given back) or where no rung's probe timed the release."""
    if on_large_pages(sizes):
        return None
    rates = sorted(c["release_s"] / (len(c["seconds"]) * c["chunk_bytes"]) for s in sizes
                   if (c := s.touch) and c.get("release_s") is not None and c.get("seconds"))
    theirs = [min(s.pool_bytes, s.data_bytes) for s in sizes if s.pool_bytes and s.data_bytes]
    if not rates or not theirs:
        return None
    past = max(0.0, held - float(np.median(theirs)))
    secs = [r * past for r in (rates[len(rates) // 2], rates[0], rates[-1])]
    return (*secs, f"the shutdown gives back ~{human(held)} of pool it touched: {secs[0]:.2f} s past the rungs' "
                   f"(restart.memory_probe's release, {rates[len(rates) // 2] * 2**30:.2f} s a GiB)")
