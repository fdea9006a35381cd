"""The speedup plot (load_time tables)."""

from __future__ import annotations

from pathlib import Path

from ..findings import ONE_FILE_AT_A_TIME
from .style import _empty, _legend_from, _name, _num, _order, _save, colours

ORDER = 1   # its place in the report
TABLES = ('load_time',)   # draw()'s arguments, in order

# ---------------------------------------------------------------- 2. speed-up
def draw(plt, loads: list, path: Path) -> bool:
    """Speed-up over the one-file-at-a-time protocol per strategy x target, with interval whiskers."""
    rs = [r for r in loads if r["strategy"] != ONE_FILE_AT_A_TIME and _num(r.get("speedup_vs_one_file_at_a_time"))]
    if not rs:
        _empty(plt, path, f"speed-ups over the `{ONE_FILE_AT_A_TIME}` protocol (no such load)")
        return False
    variants, col = _order(r["variant"] for r in rs), colours(r["target"] for r in loads)
    fig, axes = plt.subplots(1, len(variants), figsize=(11, 4.4), squeeze=False, layout="constrained")
    for ax, var in zip(axes[0], variants):
        vr = [r for r in rs if r["variant"] == var]
        strategies = sorted(_order(_name(r) for r in vr),
                            key=lambda s: -max(r["speedup_vs_one_file_at_a_time"] for r in vr if _name(r) == s))
        targets = sorted(_order(r["target"] for r in vr))
        width = 0.8 / len(targets)
        for j, tg in enumerate(targets):
            for i, s in enumerate(strategies):
                r = next((r for r in vr if (r["target"], _name(r)) == (tg, s)), None)
                if r is None:
                    continue
                x, y = i + (j - (len(targets) - 1) / 2) * width, r["speedup_vs_one_file_at_a_time"]
                lo, hi = _num(r.get("speedup_ci_low")), _num(r.get("speedup_ci_high"))
                ax.bar(x, y, width * 0.9, color=col[tg], label=tg, hatch=None if lo else "//",
                       edgecolor="white" if lo else "black")
                if lo is not None and hi is not None:
                    ax.errorbar(x, y, yerr=[[y - lo], [hi - y]], color="black", capsize=3, lw=1)
                n = f"n={r['n']}" if r.get("n") else ""
                ax.text(x, max(y, hi or y) * 1.12, f"{y:.1f}x\n{n}", ha="center", va="bottom", fontsize=8)
        ax.axhline(1.0, color="grey", ls=":", lw=1.5)
        ax.set_yscale("log")
        ax.set_ylim(bottom=min(0.5, min(r["speedup_vs_one_file_at_a_time"] for r in vr) / 2),
                    top=max(r.get("speedup_ci_high") or r["speedup_vs_one_file_at_a_time"] for r in vr) * 4)
        ax.set_xticks(range(len(strategies)), strategies)
        ax.set_title(f"{var} table: speed-up over `{ONE_FILE_AT_A_TIME}` (1x"
                     + (", same engine)" if len({r["engine"] for r in vr}) > 1 else ")"))
        ax.set_xlabel("loading strategy")
        ax.set_ylabel("speed-up (x, log scale)")
    handles, labels = _legend_from(axes[0])
    _save(plt, fig, path, handles, [f"target {lab}" for lab in labels])
    return True
