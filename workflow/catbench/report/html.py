"""``catbench report``: PNG plots (matplotlib, Agg) and one self-contained ``index.html``.

Writes into ``results/<run>/report/``::

    index.html            summary, plots with captions, every table (embedded + CSV link), provenance
    load_rate.png         load rate against rows loaded, per target (lines: variant/strategy)   [trace]
    table_size.png        table size growth during the load, per target                         [samples]
    fio.png               fio MB/s and IOPS per test and target                                 [storage.csv]
    query_latency.png     median (bar) and p95 (whisker) seconds per query and target/engine    [queries.csv]
    restart_phases.png    restart phases as stacked bars per target and kind                    [restart.csv]
    tables/*.csv, summary.md, provenance.json, columns.md   copies, so the directory stands alone

Every PNG is always written (a figure saying "no ... in this run" when a stage is absent), so
workflow rules can declare them; index.html only shows plots that have data. All links are
relative; nothing is fetched from the network.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import string
from pathlib import Path

from ..core.resources import resources_dir
from . import tables as T

PLOTS = ("load_rate", "table_size", "fio", "query_latency", "restart_phases")
TABLE_TITLES = {"storage": "Storage (fio)", "load_time": "Load time", "load_rate": "Load rate",
                "queries": "Queries", "chunk_load": "Chunk-table load", "restart": "Restart",
                "chunks": "Chunks",
                "stages": "Data preparation stages"}
MAX_HTML_ROWS = 300


def report_dir() -> Path:
    return resources_dir() / "report"


def caption(name: str) -> str:
    """Caption text of ``resources/report/<name>.rst`` as HTML (the same files serve
    ``snakemake --report``)."""
    p = report_dir() / f"{name}.rst"
    if not p.is_file():
        return ""
    text = "\n".join(line for line in p.read_text().splitlines() if not line.startswith(".."))
    paras = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]
    out = []
    for para in paras:
        para = html.escape(para)
        para = re.sub(r"``(.+?)``", r"<code>\1</code>", para)
        para = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", para)
        para = re.sub(r"\*(.+?)\*", r"<em>\1</em>", para)
        out.append(f"<p>{para}</p>")
    return "\n".join(out)


# ------------------------------------------------------------------ plots
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


# ------------------------------------------------------------------ HTML
def _html_table(header: list, rows: list, cls: str = "") -> str:
    h = "".join(f"<th>{html.escape(str(c))}</th>" for c in header)
    body = "\n".join("<tr>" + "".join(f"<td>{html.escape(_cell(c))}</td>" for c in r) + "</tr>"
                     for r in rows)
    return f'<table class="{cls}"><thead><tr>{h}</tr></thead><tbody>\n{body}\n</tbody></table>'


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def sections_html(sections: list) -> str:
    out = []
    for block in sections:
        kind = block[0]
        if kind == "h2":
            out.append(f"<h3>{html.escape(block[1])}</h3>")
        elif kind == "p":
            cls = ' class="fail"' if "FAILED" in block[1] else ""
            out.append(f"<p{cls}>{html.escape(block[1])}</p>")
        elif kind == "ul":
            out.append("<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in block[1]) + "</ul>")
        elif kind == "table":
            _, cap, header, rows = block
            out.append(f"<p class=\"cap\">{html.escape(cap)}</p>" + _html_table(header, rows, "num"))
    return "\n".join(out)


def make_report(run_dir, out_dir=None, tables_dir=None) -> Path:
    """Build ``index.html`` and the plots; returns the path of index.html."""
    run = Path(run_dir)
    out = Path(out_dir) if out_dir else run / "report"
    tdir = Path(tables_dir) if tables_dir else run / "tables"
    inp = T.collect(run)
    out.mkdir(parents=True, exist_ok=True)
    (out / "tables").mkdir(exist_ok=True)
    if all((tdir / f"{n}.csv").is_file() for n in T.TABLES):
        tabs = T.read_tables(tdir)
        for n in T.TABLES:
            shutil.copyfile(tdir / f"{n}.csv", out / "tables" / f"{n}.csv")
    else:   # tables not built (yet): build them here
        tdir = None
        built = T.build(inp)
        for n, t in built.items():
            T.write_csv(t, out / "tables" / f"{n}.csv")
        tabs = {n: t.to_pylist() for n, t in built.items()}
    sections = T.summary_sections(tabs, inp.targets, inp)
    md = (tdir / "summary.md").read_text() if tdir and (tdir / "summary.md").is_file() \
        else T.to_markdown(sections, f"catbench summary: {run.resolve().name}")
    (out / "summary.md").write_text(md)
    if tdir and (tdir / "provenance.json").is_file():
        prov_text = (tdir / "provenance.json").read_text()
    else:
        from . import provenance
        prov_text = json.dumps(provenance.collect(run, inp), indent=1, default=str) + "\n"
    (out / "provenance.json").write_text(prov_text)
    cols = report_dir() / "columns.md"
    if cols.is_file():
        shutil.copyfile(cols, out / "columns.md")

    plt = _plt()
    drawn = {
        "load_rate": plot_load_rate(plt, inp.rows("load_trace"), out / "load_rate.png"),
        "table_size": plot_table_size(plt, inp.rows("load_samples"), out / "table_size.png"),
        "fio": plot_fio(plt, tabs["storage"], out / "fio.png"),
        "query_latency": plot_queries(plt, tabs["queries"], out / "query_latency.png"),
        "restart_phases": plot_restart(plt, tabs["restart"], out / "restart_phases.png"),
    }

    body = ['<section id="summary"><h2>Summary</h2>', caption("summary"), sections_html(sections),
            "<p>Also as <a href=\"summary.md\">summary.md</a>.</p></section>",
            '<section id="plots"><h2>Plots</h2>']
    for name in PLOTS:
        if drawn[name]:
            body.append(f'<figure id="plot-{name}"><img src="{name}.png" alt="{name}">'
                        f"<figcaption>{caption('plot_' + name)}</figcaption></figure>")
        else:
            body.append(f'<p class="missing">{html.escape(name.replace("_", " "))}: no data in this run.</p>')
    body.append('</section><section id="tables"><h2>Tables</h2>'
                '<p>Every column is described in <a href="columns.md">columns.md</a>.</p>')
    for n in T.TABLES:
        rows = tabs[n]
        header = _header(out / "tables" / f"{n}.csv")
        shown = rows[:MAX_HTML_ROWS]
        more = (f"<p>Showing {len(shown)} of {len(rows)} rows; all in the CSV.</p>"
                if len(rows) > len(shown) else "")
        body.append(f'<h3 id="table-{n}">{TABLE_TITLES[n]} - <a href="tables/{n}.csv">{n}.csv</a></h3>'
                    + caption(n) + (_html_table(header, [[r.get(c) for c in header] for r in shown])
                                    if rows else "<p class=\"missing\">No rows in this run.</p>") + more)
    body.append('</section><section id="provenance"><h2>Provenance</h2>' + caption("provenance")
                + '<p><a href="provenance.json">provenance.json</a></p><details><summary>show</summary><pre>'
                + html.escape(prov_text) + "</pre></details></section>")
    tmpl = string.Template((report_dir() / "index.html.in").read_text())
    page = tmpl.safe_substitute(title=html.escape(f"catbench report: {run.resolve().name}"),
                                run=html.escape(run.resolve().name),
                                generated=html.escape(json.loads(prov_text).get("generated_at", "")),
                                body="\n".join(body))
    index = out / "index.html"
    index.write_text(page)
    return index


def _header(csv_path: Path) -> list:
    with open(csv_path) as fh:
        line = fh.readline().strip()
    return [c.strip('"') for c in line.split(",")] if line else []


def referenced_files(index_html: Path) -> list:
    """Relative files referenced by src=/href= in ``index_html`` (for checks)."""
    text = Path(index_html).read_text()
    refs = re.findall(r'(?:src|href)="([^"#]+)"', text)
    return [r for r in refs if not re.match(r"^[a-z]+:", r)]
