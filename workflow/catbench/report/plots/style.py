"""The plots' common style and helpers: the Okabe-Ito palette, one colour per target, legends
outside the axes, a figure saying "no ... in this run" when a stage is absent."""

from __future__ import annotations

from pathlib import Path

from ...core.index.table import ENGINES
from ..findings import ONE_FILE_AT_A_TIME

# Okabe & Ito (2008): distinguishable with every common colour-vision deficiency.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
DPI = 100


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"font.size": 10, "axes.titlesize": 11, "axes.grid": True, "grid.alpha": 0.3,
                         "axes.spines.top": False, "axes.spines.right": False})
    return plt


def _order(values) -> list:
    return list(dict.fromkeys(values))


def colours(names) -> dict:
    """A fixed colour per name (targets first-seen order), cycling the palette."""
    return {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(sorted(_order(names)))}


def _empty(plt, path: Path, what: str) -> None:
    fig, ax = plt.subplots(figsize=(6, 1.5))
    ax.axis("off")
    ax.text(0.5, 0.5, f"No {what} in this run", ha="center", va="center", fontsize=12)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def _plain_log_labels(fig) -> None:
    """Log axes labelled 1k, 10k, 100k like the linear ones: matplotlib's default labels are
    TeX (10³), whose parsing and layout were a fifth of the report's time."""
    from matplotlib.ticker import LogFormatter, LogFormatterSciNotation

    class SiLog(LogFormatter):
        def _num_to_string(self, x, vmin, vmax):
            return _si(x)

    for ax in fig.get_axes():
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() != "log":
                continue
            if isinstance(axis.get_major_formatter(), LogFormatterSciNotation):
                axis.set_major_formatter(SiLog())
            if isinstance(axis.get_minor_formatter(), LogFormatterSciNotation):
                axis.set_minor_formatter(SiLog())


def _save(plt, fig, path: Path, handles=None, labels=None, ncol=None) -> None:
    _plain_log_labels(fig)
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncol=ncol or min(len(labels), 4),
                   frameon=False)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def _legend_from(axes) -> tuple[list, list]:
    seen = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    return list(seen.values()), list(seen)


def _num(v):
    return None if v is None or v != v else float(v)


def _bool(v):
    return v if v is None or isinstance(v, bool) else str(v).lower() == "true"


def _query_order(q: str) -> tuple:
    cls = q.rstrip("0123456789")
    return ({"LV": 0, "HV": 1, "SHV": 2}.get(cls, 3), q)


def _si(v: float, _pos=None) -> str:
    """Axis labels without exponents: 950, 1.5k, 540k, 1.2M, 10G."""
    for div, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:.3g}{suffix}"
    return f"{v:.3g}"


# ---------------------------------------------------------------- 1. collapse curve
def _median_repetition(rows: list) -> list:
    """The points of the repetition whose load took the median time (a representative curve)."""
    reps = {}
    for r in rows:
        reps.setdefault(r["repetition"], []).append(r)
    ranked = sorted(reps, key=lambda k: max(p["elapsed_s"] or 0 for p in reps[k]))
    return sorted(reps[ranked[(len(ranked) - 1) // 2]], key=lambda p: p["files_done"])


def _name(r: dict) -> str:
    """A load's label: its strategy, with its engine when not InnoDB (the 2017 study's)."""
    return r["strategy"] if r['engine'] == "innodb" else f"{r['strategy']} ({r['engine']})"


def _best(loads: list) -> dict:
    best = {}
    for r in sorted((r for r in loads if r.get("seconds") and r["strategy"] != ONE_FILE_AT_A_TIME),
                    key=lambda r: r["seconds"]):
        best.setdefault((r["target"], r["variant"]), r)
    return best


# line and marker of each engine's `one-file-at-a-time` curve
ENGINE_STYLE = {name: e.curve_style for name, e in ENGINES.items()}
