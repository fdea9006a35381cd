"""``catbench report``: PNG plots (``plots``) and one self-contained ``index.html``.

Writes into ``results/<run>/report/``::

    index.html            the answer first (each method's time at the rows a prediction was made for,
                          or how to get one), the findings (each with its figure and interval), the
                          checks, the plots (inline as data: URIs, so the page alone can be
                          mailed), then collapsed: the 2017 study's tables, every final table,
                          provenance
    collapse.png          load rate against table size / buffer pool: one-file-at-a-time vs best
    speedup.png           speed-up over one-file-at-a-time per strategy x target, whiskers
    restart_timeline.png  restarts as timelines of non-overlapping phases with milestones
    query_latency.png     median latency per query, cold | warm, engines side by side (log)
    fio.png               fio MB/s and IOPS per test and target, whiskers
    cluster_restart.png   Galera node restarts: back to a first answer, inserts/s around it
    chunk_sky.png         Objects per chunk on the sky (log colour) and their distribution
    prediction.png        a ladder's largest rungs predicted from the smaller ones against measured
    at_scale.png          each method's time to load N rows, 10^7…10^11, measured loads on it
    queries_at_scale.png  each query class's time against the worker nodes, at the user's catalog
    (the last three only where the run has a prediction: predict/prediction.json)
    tables/*.csv, summary.md, provenance.json, columns.md   copies, so the directory stands alone

Every other PNG is always written (a figure saying "no ... in this run" when a stage is absent), so
workflow rules can declare them; index.html only shows plots that have data. Links to the
CSVs are relative; nothing is fetched from the network.
"""

from __future__ import annotations

import base64
import html
import json
import re
import shutil
import string
from pathlib import Path

import pyarrow as pa

from ..core.infra.files import staged_output
from ..core.infra.resources import resources_dir
from . import noise
from . import tables as T
from .inputs import MetricsError, collect, stale_note
from .plots import ALWAYS, PLOTS, draw_all
from .spec import ReportSpec
from .summary import FIRST_SCREEN, HEADLINE_SECTIONS, SECTIONS, summary_sections, to_markdown
from .wording import note_cell

TABLE_TITLES = {"storage": "Storage (fio)", "storage_runs": "Storage (fio), every repetition",
                "load_time": "Load time", "load_runs": "Load time, every repetition",
                "load_rate": "Load rate per interval", "load_curve": "Load rate against table size",
                "load_collapse": "Where the load rate halves",
                "load_io": "Load I/O and CPU per row",
                "load_not_run": "Engine x strategy pairs not run", "queries": "Queries",
                "query_runs": "Queries, every run", "chunk_load": "Chunk-table load", "layouts": "Query layouts: build and bytes",
                "chunk_load_chunks": "Chunk-table load per chunk",
                "query_chunks": "Queries per chunk", "restart": "Restart",
                "restart_runs": "Restart, every repetition", "chunks": "Chunks",
                "cluster_restart": "Cluster node restart (Galera)",
                "cluster_load": "Cluster workload around a node restart",
                "isolation": "Did each measuring job run alone",
                "stages": "Data preparation stages"}
MAX_HTML_ROWS = 300
ANSWER_PLOTS = ("at_scale", "queries_at_scale")   # drawn in the first section, beside the tables they plot


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
        elif kind == "h3":
            out.append(f"<h4>{html.escape(block[1])}</h4>")
        elif kind == "p":
            cls = ' class="fail"' if "FAILED" in block[1] else ""
            out.append(f"<p{cls}>{_inline(block[1])}</p>")
        elif kind == "ul":
            out.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in block[1]) + "</ul>")
        elif kind == "table":
            _, cap, header, rows = block
            out.append(f"<p class=\"cap\">{html.escape(cap)}</p>" + _html_table(header, rows, "num"))
    return "\n".join(out)


def _inline(text: str) -> str:
    """Escaped text with `code` spans and **bold** (as the findings are written)."""
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))
    return re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", out)


def _tables(run: Path, tdir: Path, out: Path, inp, report: ReportSpec) -> tuple[dict, Path | None]:
    """The final tables as {table: [row dicts]}, copied into ``out``/tables; built here when
    ``tdir`` does not hold them (yet). Returns them and the tables directory used (or None)."""
    (out / "tables").mkdir(exist_ok=True)
    if all((tdir / f"{n}.csv").is_file() for n in T.TABLES):
        for n in T.TABLES:
            shutil.copyfile(tdir / f"{n}.csv", out / "tables" / f"{n}.csv")
        return T.read_tables(tdir), tdir
    built = T.build(inp, report)
    for n, t in built.items():
        T.write_csv(t, out / "tables" / f"{n}.csv")
    return {n: t.to_pylist() for n, t in built.items()}, None


def _copy_texts(run: Path, tdir: Path | None, out: Path, sections: list, inp) -> str:
    """summary.md, provenance.json and columns.md into ``out`` (from ``tdir`` when there; summary.md
    anew when the run has a prediction, written after its tables); returns the provenance text."""
    md = (tdir / "summary.md").read_text() if tdir and (tdir / "summary.md").is_file() and not inp.prediction \
        else to_markdown(sections, f"catbench summary: {run.resolve().name}")
    (out / "summary.md").write_text(md)
    if tdir and (tdir / "provenance.json").is_file():
        prov_text = (tdir / "provenance.json").read_text()
    else:
        prov_text = json.dumps(T.provenance(run, inp), indent=1, default=str) + "\n"
    (out / "provenance.json").write_text(prov_text)
    cols = report_dir() / "columns.md"
    if cols.is_file():
        shutil.copyfile(cols, out / "columns.md")
    return prov_text


def _data_uri(png: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode("ascii")


def _figure(name: str, out: Path) -> str:
    return (f'<figure id="plot-{name}"><img src="{_data_uri(out / (name + ".png"))}" '
            f'alt="{html.escape(name.replace("_", " "))}" data-name="{name}">'
            f"<figcaption>{caption('plot_' + name)}</figcaption></figure>")


def _plots_html(drawn: dict, out: Path) -> list:
    body = ['<section id="plots"><h2>Plots</h2>']
    for name in PLOTS:
        if name in ANSWER_PLOTS:
            continue
        if drawn[name]:
            body.append(_figure(name, out))
        elif name in ALWAYS:   # an optional plot (a prediction's) is simply absent
            body.append(f'<p class="missing">{html.escape(name.replace("_", " "))}: no data in this run.</p>')
    return body + ["</section>"]


def _answer_html(blocks: list, drawn: dict, out: Path) -> list:
    """The first section: the time to load the user's rows by each method, each query class's
    on the user's nodes, and their plots."""
    title = blocks[0][1] if blocks and blocks[0][0] == "h2" else "At your scale"
    body, text = ['<section id="answer">', f"<h2>{html.escape(title)}</h2>"], []
    for block in blocks[1:]:
        if block[0] != "plot":
            text.append(block)
            continue
        body.append(sections_html(text))
        text = []
        body += [_figure(block[1], out)] if drawn.get(block[1]) else []
    return [*body, sections_html(text), "</section>"]


def _tables_html(tabs: dict, out: Path) -> list:
    body = ['<section id="tables"><h2>Tables</h2>'
            '<p>Every column is described in <a href="columns.md">columns.md</a>; the CSV files are '
            'beside this page in <code>tables/</code>. A <code>…ci_note…</code> cell marks a figure whose '
            'repetitions cannot bound its interval at their spread, with the repetitions that would.</p>']
    for n in T.TABLES:
        rows = tabs[n]
        header = _header(out / "tables" / f"{n}.csv")
        shown = rows[:MAX_HTML_ROWS]
        more = (f"<p>Showing {len(shown)} of {len(rows)} rows; all in the CSV.</p>"
                if len(rows) > len(shown) else "")
        cells = [[note_cell(r.get(c)) if "ci_note" in c else r.get(c) for c in header] for r in shown]
        table = (f'<div class="scroll">{_html_table(header, cells)}</div>'
                 if rows else "<p class=\"missing\">No rows in this run.</p>")
        body.append(f'<details id="table-{n}"><summary>{TABLE_TITLES[n]} — {len(rows)} rows '
                    f'(<a href="tables/{n}.csv">{n}.csv</a>)</summary>' + caption(n) + table + more
                    + "</details>")
    return body + ["</section>"]


def _header_html(report: ReportSpec) -> str:
    return (f'<p class="meta">Every figure is the median of its repetitions (n) with the '
            f'{report.confidence:.0%} interval of its typical value. "A is faster than B" only when a '
            f't-test on the log values tells them apart at α = {report.alpha:g} and they differ by more '
            f'than {report.practical_threshold:.0%}; otherwise they are "within noise". Fewer than two '
            f"repetitions are never a finding; a figure they give no interval shows only its n (why, once a "
            f"section), and the config's fio, load, queries and restart max_repetitions repeat until they "
            f"give one (docs/noise.md).</p>")


def _twin_html(run: Path) -> str:
    """The between-run noise floor of this run's machine when this run is one of its twin
    (``catbench noise-floor``: results/noise-floor.json beside the runs)."""
    path = run.resolve().parent / noise.FLOOR_FILE
    try:
        doc = json.loads(path.read_text())
        twin, fams = doc["runs"], doc["families"]
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    if run.resolve().name not in twin:
        return ""
    parts = ", ".join(f"{html.escape(f)} {v['between_cv']:.1%} ({v.get('df', 0):g} df)" for f, v in fams.items())
    return (f'<p class="meta">This run has a twin ({html.escape(" and ".join(twin))}, the same config run '
            f"one after the other on this machine): between them, figures moved by {parts} (the spread one "
            f"run adds beyond the runs' common offset and its repetitions). <code>catbench compare</code> of runs "
            f"on this machine uses these with their degrees of freedom; docs/noise.md.</p>")


# what a report folder holds (_copy_texts, _build), besides its plots
OWN_FILES = ("index.html", "summary.md", "provenance.json", "columns.md", "tables")


def _a_report(out: Path) -> bool:
    """Whether ``out`` holds only what a report writes, with or without index.html and the plots:
    Snakemake's --forcerun removes the outputs it declares and leaves the copies, which a report
    made again replaces. A folder of PNGs alone, or a tables/ with other than CSVs, is not one."""
    names = {p.name: p for p in out.iterdir()}
    tables = names.get("tables")
    if tables is not None and not (tables.is_dir() and all(q.suffix == ".csv" for q in tables.iterdir())):
        return False
    return all(n in OWN_FILES or n.endswith(".png") for n in names) and \
        (not names or bool(names.keys() & {"index.html", "summary.md"}))


def make_report(run_dir, out_dir=None, tables_dir=None, *, report: ReportSpec, only=None) -> Path:
    """Build ``index.html``, the plots and their copies in a staged folder that becomes
    ``out_dir`` only when all of it is written: a report is whole or absent (a full disk or a
    read-only folder is one MetricsError naming it); ``only``: this config's results
    (inputs.collect). Returns the path of index.html."""
    run = Path(run_dir)
    out = Path(out_dir) if out_dir else run / "report"
    if out.is_dir() and not _a_report(out):
        raise MetricsError(f"{out} holds other files than a report; give the report a folder of its own (--out)")
    try:
        with staged_output(out) as work:
            _build(run, work, Path(tables_dir) if tables_dir else run / "tables", report, only)
    except OSError as exc:
        raise MetricsError(f"the report could not be written to {out} ({exc.strerror or exc}: "
                           f"{exc.filename or out}); nothing of it was left there") from None
    return out / "index.html"


def _build(run: Path, out: Path, tables_dir: Path, report: ReportSpec, only=None):
    inp = collect(run, only=only)
    tabs, tdir = _tables(run, tables_dir, out, inp, report)
    tabs = {**tabs, **inp.prediction}   # predict/prediction.json, when this run was predicted
    for name in ("restart_at_scale", "queries_at_scale", "queries_by_nodes"):   # a prediction's, beside the tables
        if tabs.get(name):
            T.write_csv(pa.Table.from_pylist(tabs[name]), out / "tables" / f"{name}.csv")
    note = [("p", stale_note(inp))] if inp.stale else []
    sections = note + summary_sections(tabs, inp.targets, report, own=inp.own)
    prov_text = _copy_texts(run, tdir, out, sections, inp)
    drawn = draw_all(tabs, out)
    mine = summary_sections(tabs, inp.targets, report, own=inp.own, sections=SECTIONS[:FIRST_SCREEN - 1])
    first = summary_sections(tabs, inp.targets, report, own=inp.own, sections=SECTIONS[FIRST_SCREEN - 1:FIRST_SCREEN])
    head = summary_sections(tabs, inp.targets, report, own=inp.own,
                            sections=SECTIONS[FIRST_SCREEN:HEADLINE_SECTIONS])
    rest = summary_sections(tabs, inp.targets, report, own=inp.own, sections=SECTIONS[HEADLINE_SECTIONS:])
    # the catalog in one paragraph above the answer (its heading left out: the plot stays on the first screen)
    body = ['<section id="catalog">', sections_html(mine[1:]), "</section>"] if mine else []
    body += _answer_html(first, drawn, out)
    body += ['<section id="findings"><h2>Findings</h2>', _header_html(report), _twin_html(run),
             sections_html(note + head[1:]), "</section>"]
    body += _plots_html(drawn, out)
    body += ['<section id="details"><h2>Tables as in the 2017 study</h2><details><summary>Storage | load time, '
             'load rate per interval, query latency, restart phases, chunks, stages</summary>',
             caption("summary"), sections_html(rest),
             '<p>Also as <a href="summary.md">summary.md</a>.</p></details></section>']
    body += _tables_html(tabs, out)
    body.append('<section id="provenance"><h2>Provenance</h2>' + caption("provenance")
                + '<p><a href="provenance.json">provenance.json</a></p><details><summary>show</summary><pre>'
                + html.escape(prov_text) + "</pre></details></section>")
    tmpl = string.Template((report_dir() / "index.html.in").read_text())
    page = tmpl.safe_substitute(title=html.escape(f"catbench report: {run.resolve().name}"),
                                run=html.escape(run.resolve().name),
                                generated=html.escape(json.loads(prov_text).get("generated_at", "")),
                                body="\n".join(body))
    (out / "index.html").write_text(page)


def _header(csv_path: Path) -> list:
    with open(csv_path) as fh:
        line = fh.readline().strip()
    return [c.strip('"') for c in line.split(",")] if line else []


def referenced_files(index_html: Path) -> list:
    """Relative files referenced by src=/href= in ``index_html`` (for checks)."""
    text = Path(index_html).read_text()
    refs = re.findall(r'(?:src|href)="([^"#]+)"', text)
    return [r for r in refs if not re.match(r"^[a-z]+:", r)]
