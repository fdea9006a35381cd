"""Final tables of a run: DuckDB SQL (``resources/sql/<table>.sql``) over the views that
``inputs.collect`` reads from every metrics file, written as CSV next to summary.md and
provenance.json (``catbench tables``)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv

from ..core.resources import resources_dir
from . import provenance
from .inputs import MetricsError, RunInputs, collect
from .markdown import to_markdown
from .summary import summary_sections

TABLES = ("storage", "load_time", "load_rate", "queries", "chunk_load", "restart", "chunks",
          "stages")


def sql_path(table: str) -> Path:
    return resources_dir() / "sql" / f"{table}.sql"


def connect(inp: RunInputs):
    import duckdb
    con = duckdb.connect()
    for name, table in inp.views.items():
        con.register(name, table)
    return con


def run_sql(con, table: str) -> pa.Table:
    import duckdb
    path = sql_path(table)
    try:
        sql = path.read_text()
    except OSError as exc:
        raise MetricsError(f"{path}: cannot read the SQL of table {table} ({exc})") from exc
    try:
        return con.sql(sql).to_arrow_table()
    except duckdb.Error as exc:
        raise MetricsError(f"{path}: query failed ({exc})") from exc


def build(inp: RunInputs) -> dict:
    """Run every ``resources/sql/<table>.sql``; returns {table: pyarrow.Table}."""
    con = connect(inp)
    try:
        return {t: run_sql(con, t) for t in TABLES}
    finally:
        con.close()


def write_csv(table: pa.Table, path: Path) -> None:
    """CSV with a header row (also when empty); booleans as true/false, NULL as empty."""
    import duckdb
    con = duckdb.connect()
    try:   # the relation API: the path is an argument, never pasted into SQL text
        con.from_arrow(table).write_csv(str(path), header=True)
    finally:
        con.close()
    if table.num_rows == 0:   # be sure the header is there
        text = Path(path).read_text() if Path(path).exists() else ""
        if not text.strip():
            Path(path).write_text(",".join(table.column_names) + "\n")


def make_tables(run_dir, out_dir=None, require=()) -> dict:
    """``catbench tables``: every final table + summary.md + provenance.json into ``out_dir``
    (default results/<run>/tables). Returns {name: path}."""
    inp = collect(run_dir, require)
    out = Path(out_dir) if out_dir else Path(run_dir) / "tables"
    out.mkdir(parents=True, exist_ok=True)
    tables = build(inp)
    written = {}
    for name, table in tables.items():
        write_csv(table, out / f"{name}.csv")
        written[name] = out / f"{name}.csv"
    rows = {n: t.to_pylist() for n, t in tables.items()}
    (out / "summary.md").write_text(to_markdown(summary_sections(rows, inp.targets),
                                                f"catbench summary: {Path(run_dir).resolve().name}"))
    written["summary"] = out / "summary.md"
    prov = provenance.collect(run_dir, inp)
    (out / "provenance.json").write_text(json.dumps(prov, indent=1, default=str) + "\n")
    written["provenance"] = out / "provenance.json"
    return written


def read_tables(tables_dir) -> dict:
    """The CSVs written by :func:`make_tables`, as {table: [row dicts]} (missing -> [])."""
    out = {}
    for name in TABLES:
        p = Path(tables_dir) / f"{name}.csv"
        if not p.is_file():
            out[name] = []
            continue
        try:
            out[name] = pacsv.read_csv(p).to_pylist()
        except pa.ArrowException as exc:
            raise MetricsError(f"{p}: not a readable CSV file ({exc})") from exc
    return out
