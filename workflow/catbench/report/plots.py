"""The report's PNG plots (matplotlib, Agg): one function per plot, each always writes its
file (a figure saying "no ... in this run" when a stage is absent) and says whether it had data.
"""

from __future__ import annotations

from pathlib import Path

PLOTS = ("load_rate", "table_size", "fio", "query_latency", "restart_phases")


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _grid(plt, n: int, width=5.5, height=3.8):
    ncols = min(n, 3)
    nrows = (n + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False)
    flat = [a for row in axes for a in row]
    for a in flat[n:]:
        a.set_visible(False)
    return fig, flat[:n]


def _empty(plt, path: Path, what: str) -> None:
    fig, ax = plt.subplots(figsize=(6, 2))
    ax.axis("off")
    ax.text(0.5, 0.5, f"No {what} in this run", ha="center", va="center", fontsize=12)
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _save(plt, fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _group(rows: list, keys: tuple) -> dict:
    out = {}
    for r in rows:
        out.setdefault(tuple(r[k] for k in keys), []).append(r)
    return out


def rate_curve(trace: list, bins: int = 40) -> tuple[list, list]:
    """(rows loaded, rows/s) of one load: consecutive files in ~``bins`` groups, each group's
    rows over the wall time since the end of the previous group."""
    rs = sorted(trace, key=lambda r: r["end"])
    if not rs:
        return [], []
    size = max(1, len(rs) // bins)
    xs, ys = [], []
    prev_end = min(r["start"] for r in rs)
    for i in range(0, len(rs), size):
        g = rs[i:i + size]
        end = max(r["end"] for r in g)
        dt = end - prev_end
        if dt > 0:
            xs.append(g[-1]["cumulative_rows"])
            ys.append(sum(r["rows"] for r in g) / dt)
        prev_end = end
    return xs, ys


def _per_target(plt, loads: dict, path: Path, xlabel: str, ylabel: str, series) -> None:
    """One panel per target, one line per variant/strategy: ``series(rows) -> (xs, ys)``."""
    targets = list(dict.fromkeys(k[0] for k in loads))
    fig, axes = _grid(plt, len(targets))
    for ax, tg in zip(axes, targets):
        ax.set_prop_cycle(color=plt.cm.tab20.colors)  # 12 variant/strategy lines stay distinct
        for (t, v, s), rs in loads.items():
            if t == tg:
                xs, ys = series(rs)
                ax.plot(xs, ys, marker=".", label=f"{v}/{s}", linestyle="-" if v == "qserv" else "--")
        ax.set_title(f"target {tg}")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    _save(plt, fig, path)


def plot_load_rate(plt, trace: list, path: Path) -> bool:
    loads = _group(trace, ("target", "variant", "strategy"))
    if not loads:
        _empty(plt, path, "load traces")
        return False

    def series(rs):
        xs, ys = rate_curve(rs)
        return [x / 1e6 for x in xs], ys
    _per_target(plt, loads, path, "rows loaded (millions)", "load rate (rows/s)", series)
    return True


def plot_table_size(plt, samples: list, path: Path) -> bool:
    loads = _group([r for r in samples if r.get("time") is not None], ("target", "variant", "strategy"))
    if not loads:
        _empty(plt, path, "load samples")
        return False

    def series(rs):
        rs = sorted(rs, key=lambda r: r["time"])
        return ([r["time"] - rs[0]["time"] for r in rs],
                [(r["table_bytes"] or 0) / 2**20 for r in rs])
    _per_target(plt, loads, path, "seconds since the start of sampling", "table size (MiB)", series)
    return True


def _bars(ax, groups: list, series: list, value, err=None, ylabel="", log=False):
    n = max(len(series), 1)
    width = 0.8 / n
    for j, s in enumerate(series):
        xs = [i + (j - (n - 1) / 2) * width for i in range(len(groups))]
        vals = [value(g, s) for g in groups]
        ys = [v if v is not None else 0 for v in vals]
        kw = {}
        if err is not None:
            kw["yerr"] = [[0] * len(groups), [0 if v is None else max((err(g, s) or v) - v, 0)
                                              for g, v in zip(groups, vals)]]
            kw["capsize"] = 3
        ax.bar(xs, ys, width, label=str(s), **kw)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([str(g) for g in groups], rotation=20 if len(groups) > 4 else 0, ha="right"
                       if len(groups) > 4 else "center")
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)


def plot_fio(plt, storage: list, path: Path) -> bool:
    if not storage:
        _empty(plt, path, "fio results")
        return False
    tests = list(dict.fromkeys(r["test"] for r in storage))
    targets = list(dict.fromkeys(r["target"] for r in storage))
    by = {(r["test"], r["target"]): r for r in storage}
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4))
    _bars(a1, tests, targets, lambda g, s: by.get((g, s), {}).get("MBps"), ylabel="MB/s")
    a1.set_title("throughput")
    _bars(a2, tests, targets, lambda g, s: by.get((g, s), {}).get("iops"), ylabel="IOPS (log)", log=True)
    a2.set_title("operations per second")
    _save(plt, fig, path)
    return True


def plot_queries(plt, queries: list, path: Path) -> bool:
    if not queries:
        _empty(plt, path, "query results")
        return False
    caches = list(dict.fromkeys(r["cache"] for r in queries))
    qs = list(dict.fromkeys(r["query"] for r in queries))
    series = list(dict.fromkeys(f"{r['target']}/{r['engine']}" for r in queries))
    by = {(r["query"], r["cache"], f"{r['target']}/{r['engine']}"): r for r in queries}
    fig, axes = plt.subplots(len(caches), 1, figsize=(max(6, 1.2 * len(qs) * max(1, len(series) / 2)),
                                                      3.8 * len(caches)), squeeze=False)
    for ax, cache in zip([a for row in axes for a in row], caches):
        qs = list(dict.fromkeys(r["query"] for r in queries if r["cache"] == cache))
        _bars(ax, qs, series, lambda g, s: by.get((g, cache, s), {}).get("p50_s"),
              err=lambda g, s: by.get((g, cache, s), {}).get("p95_s"), ylabel="seconds")
        ax.set_title(f"{cache} cache: median, whisker to p95")
    _save(plt, fig, path)
    return True


def plot_restart(plt, restart: list, path: Path) -> bool:
    if not restart:
        _empty(plt, path, "restart results")
        return False
    groups = list(dict.fromkeys((r["target"], r["kind"]) for r in restart))
    phases = list(dict.fromkeys(r["phase"] for r in restart))
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(groups)), 4))
    bottom = [0.0] * len(groups)
    for p in phases:
        vals = []
        for tg, kind in groups:
            rs = [r for r in restart if r["target"] == tg and r["kind"] == kind]
            reps = len({r["repetition"] for r in rs}) or 1
            vals.append(sum(r["seconds"] or 0 for r in rs if r["phase"] == p) / reps)
        ax.bar(range(len(groups)), vals, 0.6, bottom=bottom, label=p)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([f"{t}\n{k}" for t, k in groups])
    ax.set_ylabel("seconds (mean over repetitions)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, title="phase")
    _save(plt, fig, path)
    return True


def draw_all(trace: list, samples: list, tables: dict, out: Path) -> dict:
    """Every plot of :data:`PLOTS` into ``out``/<name>.png: {name: drawn with data}."""
    plt = _plt()
    return {
        "load_rate": plot_load_rate(plt, trace, out / "load_rate.png"),
        "table_size": plot_table_size(plt, samples, out / "table_size.png"),
        "fio": plot_fio(plt, tables["storage"], out / "fio.png"),
        "query_latency": plot_queries(plt, tables["queries"], out / "query_latency.png"),
        "restart_phases": plot_restart(plt, tables["restart"], out / "restart_phases.png"),
    }
