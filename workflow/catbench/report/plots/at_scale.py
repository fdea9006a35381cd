"""Time to load every row against the rows, 10^7…10^11: each method's prediction (a line, its
interval a band) with the loads the runs measured on it (prediction_curve)."""

from __future__ import annotations

from pathlib import Path

from ..at_scale import method
from .style import PALETTE, _num, _save

ORDER = -1       # the answer: drawn at the top of the report, above every other plot
TABLES = ("prediction_curve",)
OPTIONAL = True  # written only where the run has a prediction
# the y axis in times a person reads at a glance
TICKS = ((1, "1 s"), (10, "10 s"), (60, "1 min"), (600, "10 min"), (3600, "1 hour"), (6 * 3600, "6 hours"),
         (86400, "1 day"), (7 * 86400, "1 week"), (30 * 86400, "1 month"), (365 * 86400, "1 year"),
         (3650 * 86400, "10 years"))


def draw(plt, curve: list, path: Path) -> bool:
    """A line per target × method through its predicted N (refused N left out), the interval
    as a band; each run's measured load as a marker (hollow: rows its time limit let it load);
    the rows the prediction was made for as a vertical line."""
    from matplotlib.lines import Line2D
    pred = [r for r in curve if r.get("kind") == "predicted" and _num(r.get("seconds"))]
    if not pred:
        return False
    loads = list(dict.fromkeys((r["target"], method(r)) for r in pred))
    one_target = len({t for t, _ in loads}) == 1
    fig, ax = plt.subplots(figsize=(9, 4.8), layout="constrained")
    handles = []
    for i, (tg, m) in enumerate(loads):
        col = PALETTE[i % len(PALETTE)]
        pts = sorted((r for r in pred if (r["target"], method(r)) == (tg, m)), key=lambda r: r["rows"])
        (line,) = ax.plot([r["rows"] for r in pts], [r["seconds"] for r in pts], "-", color=col, lw=2,
                          label=m if one_target else f"{tg} · {m}")
        handles.append(line)
        band = [(r["rows"], r["seconds_ci_low"], r["seconds_ci_high"]) for r in pts
                if _num(r.get("seconds_ci_low")) and _num(r.get("seconds_ci_high"))]
        if band:
            ax.fill_between(*zip(*band), color=col, alpha=0.18, lw=0)
        for r in curve:
            if r.get("kind") == "measured" and (r["target"], method(r)) == (tg, m) and _num(r.get("seconds")):
                ax.plot(r["rows"], r["seconds"], "o", ms=7, mew=1.5, color=col, mfc="white" if r.get("stopped") else col)
    seen = [r for r in curve if r.get("kind") == "measured" and _num(r.get("rows"))]
    handles += [Line2D([], [], ls="", marker="o", ms=7, color="grey", label="measured, every row"),
                Line2D([], [], ls="", marker="o", ms=7, mew=1.5, color="grey", mfc="white",
                       label="measured, the rows by its time limit")]
    rows = [r["rows"] for r in pred] + [r["rows"] for r in seen]
    ax.set(xscale="log", yscale="log", xlim=(min(rows) / 1.5, max(rows) * 1.5),
           xlabel="rows in the table", ylabel="time to load every row")
    y0, y1 = ax.get_ylim()
    ticks = [(s, text) for s, text in TICKS if y0 <= s <= y1]
    ax.set_yticks([s for s, _ in ticks], [text for _, text in ticks])
    ax.minorticks_off()
    target = next((r.get("target_rows") for r in pred if r.get("target_rows")), None)
    if target:
        ax.axvline(target, color="grey", lw=1, ls="--")
        ax.annotate(f"{target:,.0f} rows", (target, 1), xycoords=("data", "axes fraction"), xytext=(4, -12),
                    textcoords="offset points", fontsize=8, color="dimgrey")
    ax.set_title("Time to load every row, by method (predicted; band: where a second run of the ladder would be)")
    _save(plt, fig, path, handles, [h.get_label() for h in handles], ncol=2)
    return True
