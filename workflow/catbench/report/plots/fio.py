"""The fio plot (storage tables)."""

from __future__ import annotations

from pathlib import Path

from .style import _empty, _legend_from, _num, _order, _save, _si, colours

ORDER = 4   # its place in the report
TABLES = ('storage',)   # draw()'s arguments, in order

# ---------------------------------------------------------------- 5. fio
def draw(plt, storage: list, path: Path) -> bool:
    """fio per target: sequential MB/s and random IOPS (medians, labelled), whiskers =
    interval of the typical value."""
    if not storage:
        _empty(plt, path, "fio results")
        return False
    col = colours(r["target"] for r in storage)
    targets = sorted(_order(r["target"] for r in storage))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
    for ax, (prefix, figure, unit) in zip(axes, (("seq", "MBps", "MB/s"), ("rand", "iops", "IOPS"))):
        tests = [t for t in _order(r["test"] for r in storage) if t.startswith(prefix)]
        width = 0.8 / max(len(targets), 1)
        for j, tg in enumerate(targets):
            for i, test in enumerate(tests):
                r = next((r for r in storage if (r["target"], r["test"]) == (tg, test)), None)
                if r is None or _num(r.get(figure)) is None:
                    continue
                x, y = i + (j - (len(targets) - 1) / 2) * width, r[figure]
                ax.bar(x, y, width * 0.9, color=col[tg], label=f"target {tg}")
                lo, hi = _num(r.get(f"{figure}_ci_low")), _num(r.get(f"{figure}_ci_high"))
                if lo is not None and hi is not None:
                    ax.errorbar(x, y, yerr=[[y - lo], [hi - y]], color="black", capsize=3, lw=1)
                ax.text(x, max(y, hi or y) * 1.02, _si(y), ha="center", va="bottom", fontsize=8)
        ax.yaxis.set_major_formatter(_si)
        ax.set_ylim(top=ax.get_ylim()[1] * 1.08)
        ax.set_xticks(range(len(tests)), tests)
        ax.set_xlabel("fio test" + (" (1 MiB blocks)" if prefix == "seq" else " (4 KiB blocks)"))
        ax.set_ylabel(unit)
        ax.set_title("sequential throughput" if prefix == "seq" else "random operations per second")
    handles, labels = _legend_from(axes)
    _save(plt, fig, path, handles, labels)
    return True
