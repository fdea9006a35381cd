"""The cluster restart plot (cluster_restart, cluster_load tables)."""

from __future__ import annotations

from pathlib import Path

from .style import PALETTE, _empty, _legend_from, _num, _order, _save, _si

ORDER = 5   # its place in the report
TABLES = ('cluster_restart', 'cluster_load')   # draw()'s arguments, in order

# ---------------------------------------------------------------- 6. cluster node restart
CLUSTER_WINDOWS = ("before", "during", "after")


def _cluster_row(rows: list, key: tuple, phase: str) -> dict:
    return next((r for r in rows if (r["target"], r["kind"], r["phase"]) == (*key, phase)), {})


def _cluster_back(ax, rows: list, keys: list) -> None:
    """Left: down -> new process -> first correct answer, stacked, whisker on the whole."""
    for y, key in enumerate(keys):
        down = _num(_cluster_row(rows, key, "node_down").get("seconds")) or 0.0
        back = _num(_cluster_row(rows, key, "process_start_to_first_answer").get("seconds")) or 0.0
        ax.barh(y, down, height=0.6, color=PALETTE[5], label="down (until its new process started)")
        ax.barh(y, back, left=down, height=0.6, color=PALETTE[0], label="new process → first correct answer")
        total = _cluster_row(rows, key, "down_to_first_answer")
        tot, lo, hi = (_num(total.get(c)) for c in ("seconds", "seconds_ci_low", "seconds_ci_high"))
        if tot is not None and lo is not None and hi is not None:
            ax.errorbar(tot, y, xerr=[[tot - lo], [hi - tot]], color="black", capsize=3, lw=1)
        lost = max((int(r.get("acked_lost") or 0) for r in rows if (r["target"], r["kind"]) == key), default=0)
        ax.text(max(tot or 0, hi or 0, down + back) * 1.02, y, f"{down + back:.1f} s" + (
            f"  LOST {lost:,} acked inserts" if lost else ""), va="center", fontsize=8,
            color="#D55E00" if lost else "black", fontweight="bold" if lost else "normal")
    ax.set_xlim(right=ax.get_xlim()[1] * 1.25)
    ax.set_xlabel("seconds from the node going down")
    ax.set_title("node back to its first correct answer")


def _cluster_inserts(ax, load: list, keys: list) -> None:
    """Right: inserts/s on the insert node before / during / after, whiskers = interval, cut at
    1.5x the fastest bar (an n=2 interval can span 100x the rates and hide every bar)."""
    width, top = 0.8 / len(CLUSTER_WINDOWS), 0.0
    for y, key in enumerate(keys):
        for j, w in enumerate(CLUSTER_WINDOWS):
            r = next((x for x in load if (x["target"], x["kind"], x["window"]) == (*key, w)
                      and "insert" in str(x.get("role") or "").split("+")), {})
            v = _num(r.get("inserts_per_s"))
            if v is None:
                continue
            yy, top = y + (j - 1) * width, max(top, v)
            ax.barh(yy, v, height=width * 0.9, color=PALETTE[(1, 3, 2)[j]], label=f"{w} the restart"
                    if w != "during" else "during (node down until Synced)")
            lo, hi = _num(r.get("inserts_per_s_ci_low")), _num(r.get("inserts_per_s_ci_high"))
            if lo is not None and hi is not None:
                ax.errorbar(v, yy, xerr=[[v - lo], [hi - v]], color="black", capsize=2, lw=1)
    ax.xaxis.set_major_formatter(_si)
    ax.set(xlim=(0, 1.5 * top or None), xlabel="inserts per second (rows/s)", title="inserts on the insert node")


def draw(plt, rows: list, load: list, path: Path) -> bool:
    """Galera node restarts: how long until the node answers again (left), and the insert
    rate before, during and after (right), per target and kind."""
    if not rows:
        _empty(plt, path, "cluster restart results")
        return False
    keys = _order((r["target"], r["kind"]) for r in rows)
    fig, axes = plt.subplots(1, 2, figsize=(11, 0.7 * len(keys) + 2.4), layout="constrained", sharey=True)
    _cluster_back(axes[0], rows, keys)
    _cluster_inserts(axes[1], load, keys)
    names = []
    for key in keys:
        xfer = _cluster_row(rows, key, "state_transfer").get("transfer")
        n = max((r.get("n") or 0) for r in rows if (r["target"], r["kind"]) == key)
        names.append(f"{key[0]} · {key[1]}" + (f" ({xfer})" if xfer else "") + f" (n={n})")
    axes[0].set_yticks(range(len(keys)), names)
    axes[0].invert_yaxis()
    handles, labels = _legend_from(axes)
    _save(plt, fig, path, handles, labels, ncol=3)
    return True
