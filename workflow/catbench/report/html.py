"""``catbench report``: PNG plots (``plots``) and one self-contained ``index.html``.

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
from . import provenance
from . import tables as T
from .inputs import collect
from .markdown import to_markdown
from .plots import PLOTS, draw_all
from .summary import summary_sections

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


def _tables(run: Path, tdir: Path, out: Path, inp) -> tuple[dict, Path | None]:
    """The final tables as {table: [row dicts]}, copied into ``out``/tables; built here when
    ``tdir`` does not hold them (yet). Returns them and the tables directory used (or None)."""
    (out / "tables").mkdir(exist_ok=True)
    if all((tdir / f"{n}.csv").is_file() for n in T.TABLES):
        for n in T.TABLES:
            shutil.copyfile(tdir / f"{n}.csv", out / "tables" / f"{n}.csv")
        return T.read_tables(tdir), tdir
    built = T.build(inp)
    for n, t in built.items():
        T.write_csv(t, out / "tables" / f"{n}.csv")
    return {n: t.to_pylist() for n, t in built.items()}, None


def _copy_texts(run: Path, tdir: Path | None, out: Path, sections: list, inp) -> str:
    """summary.md, provenance.json and columns.md into ``out`` (from ``tdir`` when there);
    returns the provenance text."""
    md = (tdir / "summary.md").read_text() if tdir and (tdir / "summary.md").is_file() \
        else to_markdown(sections, f"catbench summary: {run.resolve().name}")
    (out / "summary.md").write_text(md)
    if tdir and (tdir / "provenance.json").is_file():
        prov_text = (tdir / "provenance.json").read_text()
    else:
        prov_text = json.dumps(provenance.collect(run, inp), indent=1, default=str) + "\n"
    (out / "provenance.json").write_text(prov_text)
    cols = report_dir() / "columns.md"
    if cols.is_file():
        shutil.copyfile(cols, out / "columns.md")
    return prov_text


def _plots_html(drawn: dict) -> list:
    body = ['<section id="plots"><h2>Plots</h2>']
    for name in PLOTS:
        if drawn[name]:
            body.append(f'<figure id="plot-{name}"><img src="{name}.png" alt="{name}">'
                        f"<figcaption>{caption('plot_' + name)}</figcaption></figure>")
        else:
            body.append(f'<p class="missing">{html.escape(name.replace("_", " "))}: no data in this run.</p>')
    return body   # the next section closes this one


def _tables_html(tabs: dict, out: Path) -> list:
    body = ['</section><section id="tables"><h2>Tables</h2>'
            '<p>Every column is described in <a href="columns.md">columns.md</a>.</p>']
    for n in T.TABLES:
        rows = tabs[n]
        header = _header(out / "tables" / f"{n}.csv")
        shown = rows[:MAX_HTML_ROWS]
        more = (f"<p>Showing {len(shown)} of {len(rows)} rows; all in the CSV.</p>"
                if len(rows) > len(shown) else "")
        body.append(f'<h3 id="table-{n}">{TABLE_TITLES[n]} - <a href="tables/{n}.csv">{n}.csv</a></h3>'
                    + caption(n) + (_html_table(header, [[r.get(c) for c in header] for r in shown])
                                    if rows else "<p class=\"missing\">No rows in this run.</p>") + more)
    return body


def make_report(run_dir, out_dir=None, tables_dir=None) -> Path:
    """Build ``index.html`` and the plots; returns the path of index.html."""
    run = Path(run_dir)
    out = Path(out_dir) if out_dir else run / "report"
    inp = collect(run)
    out.mkdir(parents=True, exist_ok=True)
    tabs, tdir = _tables(run, Path(tables_dir) if tables_dir else run / "tables", out, inp)
    sections = summary_sections(tabs, inp.targets)
    prov_text = _copy_texts(run, tdir, out, sections, inp)
    drawn = draw_all(inp.rows("load_trace"), inp.rows("load_samples"), tabs, out)

    body = ['<section id="summary"><h2>Summary</h2>', caption("summary"), sections_html(sections),
            "<p>Also as <a href=\"summary.md\">summary.md</a>.</p></section>"]
    body += _plots_html(drawn) + _tables_html(tabs, out)
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
