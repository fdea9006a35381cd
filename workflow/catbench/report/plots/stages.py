"""The data-preparation plot (stages table)."""

from __future__ import annotations

from pathlib import Path

from .style import PALETTE, _empty, _num, _save, _si

ORDER = 8   # its place in the report
TABLES = ('stages',)   # draw()'s arguments, in order


def draw(plt, stages: list, path: Path) -> bool:
    """Each data-preparation stage: its wall time (labelled with its jobs and their peak
    memory) and its rows per second, the figures that scale a preparation to more rows."""
    rows = [r for r in stages if _num(r.get("wall_seconds")) is not None]
    if not rows:
        _empty(plt, path, "data-preparation stages")
        return False
    names = [r["stage"] for r in rows][::-1]   # the first stage on top
    rows = rows[::-1]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 0.5 * len(rows) + 1.6), layout="constrained",
                                      sharey=True)
    walls = [r["wall_seconds"] for r in rows]
    left.barh(names, walls, color=PALETTE[0])
    for y, r in enumerate(rows):
        rss = _num(r.get("peak_rss_MB"))
        label = f"{r['wall_seconds']:.3g} s, {r['jobs']} job{'s' if r['jobs'] != 1 else ''}" + (
            f", ≤ {rss:,.0f} MB each" if rss is not None else "")
        left.text(r["wall_seconds"], y, " " + label, va="center", fontsize=8)
    left.set_xlim(right=max(walls) * 1.6)
    left.set_xlabel("wall time (s)")
    left.set_title("time of each stage")
    rates = [_num(r.get("rows_per_s")) or 0 for r in rows]
    right.barh(names, rates, color=PALETTE[2])
    for y, (r, rate) in enumerate(zip(rows, rates)):
        right.text(rate, y, f" {_si(rate)} rows/s ({_si(r['rows'] or 0)} rows)", va="center", fontsize=8)
    right.set_xlim(right=max(rates + [1]) * 1.6)
    right.xaxis.set_major_formatter(_si)
    right.set_xlabel("rows per second (wall)")
    right.set_title("rate of each stage")
    _save(plt, fig, path)
    return True
