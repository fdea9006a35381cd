"""The restart timeline plot (restart tables)."""

from __future__ import annotations

from pathlib import Path

from .style import PALETTE, _bool, _empty, _legend_from, _num, _order, _save

ORDER = 2   # its place in the report
TABLES = ('restart',)   # draw()'s arguments, in order

# ---------------------------------------------------------------- 3. restart timeline
# (segment phase, label) in time order from process start; crash starts split the engine
# start into recovery phases. Milestones are the running sums at these phases' ends.
CLEAN_SEGMENTS = (("process_start_to_engine_ready", "engine start"),
                  ("engine_ready_to_accepting", "engine ready → accepting"),
                  ("accepting_to_first_answer", "accepting → first answer"),
                  ("first_answer_to_warm", "first answer → warm"))
CRASH_SEGMENTS = (("process_start_to_recovery_start", "start → recovery"), ("redo_scan", "redo scan"),
                  ("redo_apply", "redo apply"))
MILESTONES = (("engine ready", "^"), ("accepting", "o"), ("first answer", "D"), ("warm", "*"))


def timeline_segments(phases: dict) -> tuple[list, dict]:
    """([(label, start_s, seconds)], {milestone: s}) of one restart from its median phase
    seconds ({phase: seconds}); segments never overlap."""
    segs, t = [], 0.0
    if "redo_scan" in phases:
        for p, label in CRASH_SEGMENTS:
            s = phases.get(p) or 0.0
            segs.append((label, t, s))
            t += s
        rest = max((phases.get("process_start_to_engine_ready") or 0.0) - t, 0.0)
        segs.append(("rest of engine start", t, rest))
        t += rest
    else:
        s = phases.get("process_start_to_engine_ready") or 0.0
        segs.append(("engine start", t, s))
        t += s
    marks = {"engine ready": t}
    for (p, label), mark in zip(CLEAN_SEGMENTS[1:], ("accepting", "first answer", "warm")):
        if p in phases and phases[p] is not None:
            segs.append((label, t, phases[p]))
            t += phases[p]
            marks[mark] = t
    return segs, marks


def draw(plt, restart: list, path: Path) -> bool:
    """Each restart as a timeline of non-overlapping phases from process start (medians),
    milestones as markers."""
    if not restart:
        _empty(plt, path, "restart results")
        return False
    rows = _order((r["target"], r["kind"], _bool(r.get("buffer_pool_load"))) for r in restart)
    labels = [lab for _, lab in CRASH_SEGMENTS] + ["rest of engine start"] + [lab for _, lab in CLEAN_SEGMENTS]
    seg_col = {lab: PALETTE[i % len(PALETTE)] for i, lab in enumerate(_order(labels))}
    fig, ax = plt.subplots(figsize=(11, 0.55 * len(rows) + 2.2), layout="constrained")
    names = []
    for y, (tg, kind, bp) in enumerate(rows):
        phases = {r["phase"]: _num(r.get("seconds")) for r in restart
                  if (r["target"], r["kind"], _bool(r.get("buffer_pool_load"))) == (tg, kind, bp)}
        segs, marks = timeline_segments(phases)
        for label, start, width in segs:
            if width > 0:
                ax.barh(y, width, left=start, height=0.6, color=seg_col[label], label=label)
        for (m, marker), col in zip(MILESTONES, ("black",) * 4):
            if m in marks:
                ax.plot(marks[m], y, marker, color=col, ms=7, mfc="white", label=f"milestone: {m}")
        n = max((r.get("n") or 0) for r in restart if (r["target"], r["kind"]) == (tg, kind))
        dump = f" · pool dump {'on' if bp else 'off'}" if kind == "clean" and bp is not None else ""
        names.append(f"{tg} · {kind}{dump} (n={n})")
    ax.set_yticks(range(len(rows)), names)
    ax.invert_yaxis()
    ax.set_xlim(left=0)
    ax.set_xlabel("seconds since the server process started (median of each phase)")
    ax.set_title("Restart: from process start to engine ready, accepting connections, first answer, warm")
    handles, labs = _legend_from([ax])
    _save(plt, fig, path, handles, labs, ncol=4)
    return True
