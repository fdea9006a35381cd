"""The query latency plot (queries tables)."""

from __future__ import annotations

from pathlib import Path

from .style import _empty, _legend_from, _num, _order, _query_order, _save, colours

ORDER = 3   # its place in the report
TABLES = ('queries',)   # draw()'s arguments, in order
# a panel each: after a restart, warm, and with the layout's page cache dropped, the engine kept
CACHES = ("cold", "warm", "evicted")

# ---------------------------------------------------------------- 4. query latency
def draw(plt, queries: list, path: Path) -> bool:
    """Median latency per query (log), cold, warm and evicted side by side, engines/targets as
    series, whiskers = interval of the typical value."""
    rs = [r for r in queries if r["cache"] in CACHES and _num(r.get("p50_s"))]
    if not rs:
        _empty(plt, path, "query results")
        return False
    caches = [c for c in CACHES if any(r["cache"] == c for r in rs)]
    series = sorted(_order(f"{r['target']}/{r['query_engine']}" for r in rs))
    col = colours(series)
    qs = sorted(_order(r["query"] for r in rs), key=_query_order)
    fig, axes = plt.subplots(1, len(caches), figsize=(11, 4.4), squeeze=False, sharey=True,
                             layout="constrained")
    for ax, cache in zip(axes[0], caches):
        for j, s in enumerate(series):
            xs, ys, lo, hi = [], [], [], []
            for i, q in enumerate(qs):
                r = next((r for r in rs if (r["query"], r["cache"], f"{r['target']}/{r['query_engine']}") ==
                          (q, cache, s)), None)
                if r is None:
                    continue
                y = r["p50_s"]
                xs.append(i + (j - (len(series) - 1) / 2) * 0.8 / len(series))
                ys.append(y)
                lo.append(y - (_num(r.get("ci_low_s")) or y))
                hi.append((_num(r.get("ci_high_s")) or y) - y)
            ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", color=col[s], capsize=2, ms=5, label=s)
        ax.set_yscale("log")
        ax.set_xticks(range(len(qs)), qs)
        ax.set_title(f"{cache} cache")
        ax.set_xlabel("query")
        ax.set_ylabel("latency (s, log scale)")
    handles, labels = _legend_from(axes[0])
    _save(plt, fig, path, handles, labels)
    return True
