"""Each query class's time against the worker nodes its catalog is spread over, at the user's
catalog (a prediction's "queries" by_nodes): both axes log, the y axis in milliseconds to hours."""

from __future__ import annotations

from pathlib import Path

from .style import PALETTE, _num, _query_order, _save

ORDER = -0.5     # the answer's second plot: beside the query table at the top of the report
TABLES = ("queries_by_nodes",)
OPTIONAL = True  # written only where the run has a query prediction
TICKS = ((1e-3, "1 ms"), (1e-2, "10 ms"), (0.1, "0.1 s"), (1, "1 s"), (10, "10 s"), (60, "1 min"),
         (600, "10 min"), (3600, "1 hour"), (6 * 3600, "6 hours"), (86400, "1 day"), (7 * 86400, "1 week"))
MARKERS = "osD^v<>Px"


def draw(plt, rows: list, path: Path) -> bool:
    """A line per target × class through its node counts (a refused count left out); the asked
    node count ringed on each line."""
    pts = [r for r in rows if _num(r.get("seconds")) and _num(r.get("nodes"))]
    if not pts:
        return False
    lines = sorted(dict.fromkeys((r["target"], r["query"]) for r in pts), key=lambda k: (k[0], _query_order(k[1])))
    one_target = len({t for t, _ in lines}) == 1
    fig, ax = plt.subplots(figsize=(9, 4.8), layout="constrained")
    handles = []
    for i, (tg, q) in enumerate(lines):
        mine = sorted((r for r in pts if (r["target"], r["query"]) == (tg, q)), key=lambda r: r["nodes"])
        (line,) = ax.plot([r["nodes"] for r in mine], [r["seconds"] for r in mine], "-",
                          marker=MARKERS[i % len(MARKERS)], ms=5, lw=1.8, color=PALETTE[i % len(PALETTE)], label=q if one_target else f"{tg} · {q}")
        handles.append(line)
        for r in mine:
            if r.get("asked") is True or str(r.get("asked")).lower() == "true":
                ax.plot(r["nodes"], r["seconds"], "o", ms=12, mfc="none", mec=line.get_color(), mew=1.5)
    nodes = sorted({r["nodes"] for r in pts})
    secs = [r["seconds"] for r in pts]
    ax.set(xscale="log", yscale="log", xlim=(nodes[0] / 1.4, nodes[-1] * 1.4),
           ylim=(min(secs) / 2, max(secs) * 2), xlabel="worker nodes", ylabel="time of the query")
    ax.set_xticks(nodes, [f"{n:,.0f}" for n in nodes])
    y0, y1 = ax.get_ylim()
    ticks = [(s, text) for s, text in TICKS if y0 <= s <= y1]
    ax.set_yticks([s for s, _ in ticks], [text for _, text in ticks])
    ax.minorticks_off()
    ax.set_title("Each query class against the nodes holding your catalog (predicted; ringed: the nodes asked)")
    _save(plt, fig, path, handles, [h.get_label() for h in handles], ncol=4)
    return True
