"""The chunk sky plot (chunks tables)."""

from __future__ import annotations

from pathlib import Path

from .style import _empty, _num, _save

ORDER = 6   # its place in the report
TABLES = ('chunks',)   # draw()'s arguments, in order

# ---------------------------------------------------------------- 7. chunk rows on the sky
def draw(plt, chunks: list, path: Path) -> bool:
    """Objects per chunk at each chunk's centre (log colour scale), and their distribution:
    where the crowded chunks are and how far they are from the median one."""
    rows = [r for r in chunks if _num(r.get("object_rows")) and _num(r.get("ra_centre")) is not None]
    if not rows:
        _empty(plt, path, "chunk rows")
        return False
    from matplotlib.colors import LogNorm
    objects = [r["object_rows"] for r in rows]
    median = sorted(objects)[len(objects) // 2]
    fig, (sky, hist) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained",
                                    gridspec_kw={"width_ratios": [2, 1]})
    dots = sky.scatter([r["ra_centre"] for r in rows], [r["dec_centre"] for r in rows], c=objects,
                       norm=LogNorm(vmin=min(objects), vmax=max(objects)), cmap="viridis", s=18, marker="s")
    fig.colorbar(dots, ax=sky, label="Objects in the chunk (log scale)")
    sky.invert_xaxis()   # east to the left, as the sky is drawn
    sky.set_xlabel("ra of the chunk's centre (deg)")
    sky.set_ylabel("dec (deg)")
    sky.set_title(f"{len(rows)} chunks: the largest holds {max(objects) / median:.1f}x the median's Objects")
    hist.hist([v / median for v in objects], bins=30, color="#4c72b0")
    hist.set_xlabel("Objects ÷ the median chunk's")
    hist.set_ylabel("chunks")
    hist.set_title("distribution")
    _save(plt, fig, path)
    return True
