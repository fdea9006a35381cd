"""The restart half of the report's "At your scale": each restart kind's total and dominant
phase at the node's size a prediction was made for (``predict/prediction.json`` "restarts",
written by ``catbench predict`` from a restart ladder's rungs: predict/restart.md); its rows
are also ``tables/restart_at_scale.csv``."""

from __future__ import annotations

from ..core.infra.targets import human

COLUMNS = ("target", "kind", "total_s", "total_ci_low", "total_ci_high", "confidence", "dominant", "dominant_s",
           "dominant_bound", "driver", "quantity_bytes", "past_rungs", "regime", "refused")
HOW_TO = ("No restart at your scale in this run: `make restart-ladder` runs a restart study's rungs and predicts "
          "its node; for yours, `catbench predict --config C --results <rung> … --data 600G --pool 128G --redo 8G "
          "--out results/<run>/predict/prediction.json` (workflow/catbench/predict/restart.md).")


def rows(doc) -> list[dict]:
    """One row per (target, kind) of a prediction's "restarts" (none: [])."""
    out = []
    for p in (doc or {}).get("predictions") or []:
        if not isinstance(p, dict) or not isinstance(p.get("key"), dict):
            continue
        dom = next((x for x in p.get("phases") or [] if x.get("phase") == p.get("dominant")), {})
        out.append({"target": p["key"].get("target"), "kind": p["key"].get("kind"), "total_s": p.get("total_s"),
                    "total_ci_low": p.get("total_ci_low"), "total_ci_high": p.get("total_ci_high"),
                    "confidence": p.get("confidence"), "dominant": p.get("dominant"), "dominant_s": dom.get("seconds"),
                    "dominant_bound": dom.get("bound"), "driver": dom.get("driver"),
                    "quantity_bytes": dom.get("quantity_bytes"), "past_rungs": dom.get("past_rungs"),
                    "regime": "; ".join(p.get("regime") or []) or None, "refused": p.get("refused")})
    return out


def _t(s) -> str:
    if not isinstance(s, (int, float)):
        return "–"
    for div, unit, cut in ((3600, "h", 7200), (60, "min", 120)):
        if s >= cut:
            return f"{s / div:,.1f} {unit}"
    return f"{s:,.1f} s"


def _row(r: dict) -> list:
    if r.get("refused"):
        return [r["kind"], "no answer", "–", "–", f"refused: {r['refused']}"]
    dom = f"{r['dominant']} {_t(r['dominant_s'])}, {r['dominant_bound']}"
    if r.get("driver") and r.get("quantity_bytes"):
        dom += f" ({r['driver']} {human(r['quantity_bytes'])}, {r['past_rungs']:,.1f}× the largest rung)"
    return [r["kind"], _t(r["total_s"]), f"{_t(r['total_ci_low'])} – {_t(r['total_ci_high'])}", dom,
            r.get("regime") or "–"]


def section(t) -> list:
    """The blocks after the loads' answer: a table per target, or how to get one."""
    if not t.restart_at_scale:
        return [("p", HOW_TO)]
    level = next((r["confidence"] for r in t.restart_at_scale if r.get("confidence")), None)
    out = []
    for tg in dict.fromkeys(r["target"] for r in t.restart_at_scale):
        mine = [r for r in t.restart_at_scale if r["target"] == tg]
        out.append(("table", f"{tg}: how long a node is out at your size, each restart kind's total with its "
                             f"{level or 0.95:.0%} interval and the phase that dominates it "
                             "(workflow/catbench/predict/restart.md).",
                    ["restart", "total", "interval", "dominant phase", "regime"], [_row(r) for r in mine]))
    return out
