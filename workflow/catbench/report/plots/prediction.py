"""The prediction plot (prediction_validation tables)."""

from __future__ import annotations

from pathlib import Path

from ...core.index.table import ENGINES
from ..findings import PREDICTION_BAND
from .style import _legend_from, _num, _save, colours

ORDER = 7   # its place in the report
TABLES = ('prediction_validation',)   # draw()'s arguments, in order
OPTIONAL = True   # written only where the run has a prediction

# ---------------------------------------------------------------- 8. scale prediction
ENGINE_MARKER = {name: e.marker for name, e in ENGINES.items()}


def draw(plt, validation: list, path: Path) -> bool:
    """Each ladder's largest rung predicted from its smaller ones: predicted ÷ measured per
    load (log scale) against the band the model is trusted within; a marker per engine, a
    colour per target; a load its time limit stopped is compared in rows (hollow)."""
    pts = [(r, u, _num(r.get(f"predicted_{u}")) / _num(r.get(f"measured_{u}"))) for r in validation
           for u in ["rows" if r.get("compared") == "rows" else "seconds"]
           if (_num(r.get(f"measured_{u}")) or 0) > 0 and (_num(r.get(f"predicted_{u}")) or 0) > 0]
    if not pts:
        return False
    col, (lo, hi) = colours(p[0]["target"] for p in pts), PREDICTION_BAND
    fig, ax = plt.subplots(figsize=(8, 1.6 + 0.45 * len(pts)), layout="constrained")
    ax.axvspan(lo, hi, color="grey", alpha=0.15, label=f"within [{lo}, {hi}]")
    ax.axvline(1.0, color="grey", lw=1)
    for i, (r, unit, ratio) in enumerate(pts):
        eng = r["engine"]
        ax.plot(ratio, i, ENGINE_MARKER.get(eng, "D"), ms=9, mew=2, color=col[r["target"]],
                mfc="white" if unit == "rows" else col[r["target"]],
                label=f"{r['target']} · {eng}" + (" (rows by its time limit)" if unit == "rows" else " (seconds)"))
        ax.annotate(f"{ratio:.2f}", (ratio, i), xytext=(8, -3), textcoords="offset points", fontsize=8)
    ax.set_yticks(range(len(pts)), [f"{r['engine']} {r['strategy']}" for r, _, _ in pts])
    ax.set(xscale="log", xlim=(min(0.4, min(p[2] for p in pts) / 1.3), max(2.5, max(p[2] for p in pts) * 1.3)),
           ylim=(-0.7, len(pts) - 0.3))
    ax.set_xticks(t := [0.5, lo, 1, hi, 2], [f"{v:g}" for v in t], minor=False), ax.minorticks_off()
    ax.set_xlabel("predicted ÷ measured (median of the repetitions)")
    rows = sorted({r.get("rung_rows") for r, _, _ in pts if r.get("rung_rows")})
    ax.set_title("Each ladder's largest rung predicted from its smaller ones"
                 + (f" ({', '.join(f'{n:,}' for n in rows)} rows)" if rows else ""))
    handles, labels = _legend_from([ax])
    _save(plt, fig, path, handles, labels, ncol=2)
    return True
