"""Final tables of a run: DuckDB SQL (``resources/sql/<table>.sql``) over the views that
``inputs.collect`` reads from every metrics file, written as CSV next to summary.md and
provenance.json (``catbench tables``).

The SQL may call ``ci_low(list)`` / ``ci_high(list)`` (the interval of a figure's typical
value), ``ratio_gm(num_list, den_list)`` with ``ratio_ci_low`` / ``ratio_ci_high`` (a ratio of
geometric means and its interval) at the ``report.confidence`` level, and ``vals(list)`` (the
raw repetitions as one cell, which the comparison rule tests; ``stats.py``), and read every
table it names as the view ``table_<name>`` (:data:`TABLES` builds those first)."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv

from ..core.infra.resources import resources_dir
from . import provenance, stats
from .inputs import MetricsError, RunInputs, collect, stale_note
from .stats import ReportSpec
from .summary import summary_sections, to_markdown
from .views import VIEWS, current_names


def _build_order() -> tuple[str, ...]:
    """Every ``resources/sql/<table>.sql`` (but the UDF files), each after the tables whose
    ``table_<name>`` view it reads, otherwise by name: a new table is one SQL file."""
    sql = {p.stem: p.read_text() for p in sorted((resources_dir() / "sql").glob("*.sql"))
           if not p.stem.startswith("udf_")}
    reads = {t: {u for u in sql if u != t and re.search(rf"\btable_{u}\b", text)} for t, text in sql.items()}
    order: list[str] = []
    while len(order) < len(sql):
        ready = [t for t in sql if t not in order and reads[t] <= set(order)]
        if not ready:
            raise MetricsError(f"{resources_dir() / 'sql'}: tables read each other in a cycle: "
                               f"{sorted(set(sql) - set(order))}")
        order.append(ready[0])
    return tuple(order)


# *_runs are the raw repetitions.
TABLES = _build_order()


def sql_path(table: str) -> Path:
    return resources_dir() / "sql" / f"{table}.sql"


def _udfs(con, confidence: float) -> None:
    def lo(xs):
        return None if xs is None else stats.median_interval(xs, confidence)[0]

    def hi(xs):
        return None if xs is None else stats.median_interval(xs, confidence)[1]

    def rlo(a, b):
        return None if a is None or b is None else stats.ratio_interval(a, b, confidence)[1]

    def rhi(a, b):
        return None if a is None or b is None else stats.ratio_interval(a, b, confidence)[2]

    def ratio(a, b):
        return None if a is None or b is None else stats.ratio_interval(a, b, confidence)[0]

    for name, fn, args in (("ci_low", lo, ["DOUBLE[]"]), ("ci_high", hi, ["DOUBLE[]"]),
                           ("ratio_gm", ratio, ["DOUBLE[]"] * 2),
                           ("ratio_ci_low", rlo, ["DOUBLE[]"] * 2), ("ratio_ci_high", rhi, ["DOUBLE[]"] * 2)):
        con.create_function(name, fn, args, "DOUBLE", null_handling="special", side_effects=False)
    con.create_function("vals", lambda xs: None if xs is None else stats.values_text(xs), ["DOUBLE[]"],
                        "VARCHAR", null_handling="special", side_effects=False)


def connect(inp: RunInputs, confidence: float = stats.DEFAULT_CONFIDENCE):
    import duckdb
    con = duckdb.connect()
    for name, table in inp.views.items():
        con.register(name, table)
    _udfs(con, confidence)
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


def build(inp: RunInputs, report: ReportSpec) -> dict:
    """Run every ``resources/sql/<table>.sql`` in order; returns {table: pyarrow.Table}."""
    con = connect(inp, report.confidence)
    out = {}
    try:
        for t in TABLES:
            out[t] = run_sql(con, t)
            con.register(f"table_{t}", out[t])
        return out
    finally:
        con.close()


def write_csv(table: pa.Table, path: Path) -> None:
    """CSV with a header row (also when empty); booleans as true/false, NULL as empty."""
    import duckdb
    con = duckdb.connect()
    try:   # the relation API: the path is an argument, never pasted into SQL text
        con.from_arrow(table).write_csv(str(path), header=True)
    except duckdb.IOException as exc:   # a full or read-only folder, as Python's own writes say it
        full = "No space left" in str(exc)
        raise OSError(28 if full else 5, "No space left on device" if full else str(exc).splitlines()[0],
                      str(path)) from None
    finally:
        con.close()
    if table.num_rows == 0:   # be sure the header is there
        text = Path(path).read_text() if Path(path).exists() else ""
        if not text.strip():
            Path(path).write_text(",".join(table.column_names) + "\n")


def make_tables(run_dir, out_dir=None, require=(), *, report: ReportSpec, only=None) -> dict:
    """``catbench tables``: every final table + summary.md + provenance.json into ``out_dir``
    (default results/<run>/tables); ``only``: this config's results (inputs.collect). Returns {name: path}."""
    inp = collect(run_dir, require, only)
    out = Path(out_dir) if out_dir else Path(run_dir) / "tables"
    out.mkdir(parents=True, exist_ok=True)
    tables = build(inp, report)
    written = {}
    for name, table in tables.items():
        write_csv(table, out / f"{name}.csv")
        written[name] = out / f"{name}.csv"
    rows = {**{n: t.to_pylist() for n, t in tables.items()}, **inp.prediction}
    note = [("p", stale_note(inp))] if inp.stale else []
    (out / "summary.md").write_text(to_markdown(note + summary_sections(rows, inp.targets, report, own=inp.own),
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
            table = pacsv.read_csv(p)
            out[name] = table.rename_columns(current_names(name, table.column_names)).to_pylist()
        except pa.ArrowException as exc:
            raise MetricsError(f"{p}: not a readable CSV file ({exc})") from exc
        check_numbers(p, name, out[name])
    return out


@functools.cache
def schemas() -> dict:
    """Each final table's columns and their types: the tables of a run without metrics."""
    empty = RunInputs(Path("."), views={v: VIEWS[v].empty_table() for v in VIEWS})
    spec = ReportSpec(stats.DEFAULT_CONFIDENCE, stats.DEFAULT_ALPHA, stats.DEFAULT_THRESHOLD, 0.0)
    return {n: t.schema for n, t in build(empty, spec).items()}


def check_numbers(path: Path, name: str, rows: list) -> None:
    """A MetricsError naming the file, column and row of the first cell of final table ``name``
    (read from ``path``) that should hold a number, or ``;``-separated numbers (the raw
    repetitions), and holds text: a hand-edited table, which the figures cannot read."""
    schema = schemas().get(name)
    number = {f.name for f in schema or () if pa.types.is_integer(f.type) or pa.types.is_floating(f.type)
              or pa.types.is_decimal(f.type)}
    raw = {f.name for f in schema or () if f.name.endswith("_values") or f.name.startswith("values_")}
    for i, r in enumerate(rows, start=1):
        for c in sorted(r.keys() & (number | raw)):
            if not _a_number(r[c], c in raw):
                raise MetricsError(f"{path}: column {c}, row {i} (line {i + 1}): {r[c]!r} is not a number; make "
                                   f"the tables again (catbench tables, or snakemake --forcerun tables)")


def _a_number(v, raw: bool) -> bool:
    """A cell that holds a number, or nothing (``raw``: numbers separated by ``;``)."""
    if v is None or v == "" or (isinstance(v, (int, float)) and not isinstance(v, bool)):
        return True
    if isinstance(v, bool):
        return False
    try:
        stats.parse_values(v) if raw else float(v)
    except (TypeError, ValueError):
        return False
    return True
