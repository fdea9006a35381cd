"""The headline figures of a restart job's summary.json, from the rows of all kinds. Each
kind module may declare its own: ``HEADLINES`` (a tuple of :class:`Headline`), ``BASELINE``
(the headline the others are compared with), ``OVER_BASELINE`` (a tuple of
:class:`OverBaseline`) and ``REDO_MEDIAN`` (its crash recoveries count in
``redo_bytes_median``); so a new kind adds its figures without touching the driver."""

from __future__ import annotations

from dataclasses import dataclass

from .phases import p50


@dataclass(frozen=True)
class Headline:
    """A phase's seconds over a kind's rows: {"median", "max", "n"} under ``key``; with
    ``by_mode`` one such figure per buffer-pool mode ({"off": ..., "on": ...})."""
    key: str
    phase: str
    by_mode: bool = False


@dataclass(frozen=True)
class OverBaseline:
    """A kind's slowest figure ``of`` (a headline key) over the baseline (the clean restart's
    median first answer with the buffer pool off), under ``key``; ``goal``: the key of
    "within 2x", or None."""
    key: str
    of: str
    goal: str | None = None


def _pick(results: dict, kind: str, phase: str, bp=None) -> dict:
    vals = [r["seconds"] for r in results.get(kind, {}).get("rows", [])
            if r["phase"] == phase and r["seconds"] is not None and (bp is None or r["buffer_pool_load"] == bp)]
    return {"median": p50(vals), "max": max(vals) if vals else None, "n": len(vals)}


def summarize(results: dict, modules: dict) -> dict:
    """Per-target headline figures; ``modules``: kind -> its module (kinds/ ``MODULES``)."""
    out: dict = {}
    for kind, mod in modules.items():
        for h in getattr(mod, "HEADLINES", ()):
            out[h.key] = ({m: _pick(results, kind, h.phase, m == "on") for m in ("off", "on")} if h.by_mode
                          else _pick(results, kind, h.phase))
    rates = [r["recovery_MBps"] for kind in results for r in results[kind].get("rows", [])
             if r["phase"] == "crash_recovery" and r["recovery_MBps"] is not None]
    redo = [r["redo_bytes"] for kind, mod in modules.items() if getattr(mod, "REDO_MEDIAN", False)
            for r in results.get(kind, {}).get("rows", [])
            if r["phase"] == "crash_recovery" and r["redo_bytes"] is not None]
    out.update({"recovery_MBps_median": p50(rates), "redo_bytes_median": p50(redo),
                "rows_lost_total": sum(r["rows_lost"] or 0 for k in results for r in results[k].get("rows", []))})
    base = next((out[mod.BASELINE]["off"]["median"] for mod in modules.values() if hasattr(mod, "BASELINE")), None)
    for mod in modules.values():
        for ratio in getattr(mod, "OVER_BASELINE", ()):
            q = out[ratio.of]["max"]
            out[ratio.key] = (q / base) if (base and q) else None
            if ratio.goal:
                out[ratio.goal] = None if out[ratio.key] is None else out[ratio.key] <= 2.0
    return out
