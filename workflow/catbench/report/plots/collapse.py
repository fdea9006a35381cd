"""The collapse plot (load_curve, load_time, load_collapse tables)."""

from __future__ import annotations

from pathlib import Path

from ..findings import ONE_FILE_AT_A_TIME
from .style import (
    ENGINE_STYLE,
    _best,
    _empty,
    _legend_from,
    _median_repetition,
    _name,
    _num,
    _order,
    _save,
    colours,
)

ORDER = 0   # its place in the report
TABLES = ('load_curve', 'load_time', 'load_collapse')   # draw()'s arguments, in order

def draw(plt, curve: list, loads: list, collapse: list, path: Path) -> bool:
    """Load rate against table size / buffer pool: the one-file-at-a-time protocol (solid, per
    input file, smoothed; on another engine dash-dotted or dotted, against its cache)
    against the fastest strategy's end-to-end mean rate (dashed; sorting and index building
    included), one colour per target, log rate."""
    pts = [r for r in curve if _num(r.get("table_over_pool")) is not None and _num(r.get("rows_per_s"))
           and r["strategy"] == ONE_FILE_AT_A_TIME]
    if not pts:
        _empty(plt, path, f"load curves of the `{ONE_FILE_AT_A_TIME}` protocol")
        return False
    variants, col, best = _order(r["variant"] for r in pts), colours(r["target"] for r in loads), _best(loads)
    fig, axes = plt.subplots(1, len(variants), figsize=(11, 4.6), squeeze=False, layout="constrained")
    for ax, var in zip(axes[0], variants):
        for tg, eng in _order((r["target"], r["engine"]) for r in pts if r["variant"] == var):
            line = _median_repetition([r for r in pts if (r["target"], r["variant"], r["engine"]) == (tg, var, eng)])
            xs = [p["table_over_pool"] for p in line]
            innodb = eng == "innodb"
            style, mark = ENGINE_STYLE.get(eng, ("-.", "^"))
            ax.plot(xs, [p["rows_per_s"] for p in line], style, color=col[tg], lw=2,
                    marker=mark, ms=4 if innodb else 3,
                    label=f"{tg}: {ONE_FILE_AT_A_TIME}" if innodb else f"{tg}: {ONE_FILE_AT_A_TIME} ({eng})")
            b = best.get((tg, var))
            if innodb and b is not None and _num(b.get("rows_per_s")):
                ax.plot([0, max(xs)], [b["rows_per_s"]] * 2, "--", color=col[tg], lw=2,
                        label=f"{tg}: {_name(b)} (fastest; end-to-end mean)")
            half = next((c for c in collapse if (c["target"], c["variant"], c["strategy"], c["engine"]) ==
                         (tg, var, ONE_FILE_AT_A_TIME, eng) and _num(c.get("half_table_over_pool"))), None)
            if half:
                ax.plot([half["half_table_over_pool"]], [0.5 * half["initial_rows_per_s"]], "X" if innodb else "P",
                        ms=10, color=col[tg], markeredgecolor="black",
                        label=f"{tg}: fell below half its initial rate" + ("" if innodb else f" ({eng})"))
        ax.axvline(1.0, color="grey", ls=":", lw=1.5)
        ax.text(1.02, 0.02, "table = buffer pool (cache)", transform=ax.get_xaxis_transform(), va="bottom",
                fontsize=9, color="dimgrey")
        ax.set_yscale("log")
        ax.set_xlim(left=0)
        pred = next((c for c in collapse if c["variant"] == var and _num(c.get("predicted_working_set_over_pool"))), None)
        ax.set_title(f"{var} table: load rate as the index outgrows the buffer pool" + (
            f"\n{pred.get('id_layout')} ids, {pred.get('arrival_order')} order: predicted working set "
            f"{_num(pred['predicted_working_set_over_pool']):.2g}x the pool" if pred else ""))
        ax.set_xlabel("table size / buffer pool (x)")
        ax.set_ylabel("load rate (rows/s, log scale)")
    handles, labels = _legend_from(axes[0])
    _save(plt, fig, path, handles, labels, ncol=2)
    return True
