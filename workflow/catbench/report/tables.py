"""Final tables of a run: DuckDB SQL (``resources/sql/<table>.sql``) over every metrics file.

Input layout read under ``results/<run>/`` (a stage that is absent gives an empty table with
the right header; a file that a present stage needs but is missing or unreadable raises
:class:`MetricsError` naming that file)::

    fio/<target>/fio.csv                       target,test,MBps,iops,clat_p50_us,clat_p99_us,direct,
                                               numjobs,size_bytes,runtime_s,json
    load/<target>/<variant>/<strategy>/        one directory per load, all four files required:
        summary.json                           target, variant, strategy, files, rows, seconds,
                                               rows_per_s, table_bytes, lookup_p50_s, lookup_p99_s,
                                               lookup_qps, optimize_seconds, optimize_stopped,
                                               checksum_ok, [sort_seconds], server{version,variables}
        trace.parquet                          per file: file, rows, start, end, cumulative_rows
        samples.parquet                        time series: time, table_bytes, [dev_read_bytes,
                                               dev_write_bytes, cpu_percent, rss_bytes, Innodb_*]
        intervals.parquet (or intervals.csv)   interval, start_s, end_s, files, rows,
                                               input_read_MBps, target_write_MBps, table_bytes, ...
    chunks/chunks.tsv                          chunkId, object_rows, source_rows, overlap_rows,
                                               parquet_bytes, tsv_bytes   (required if chunks/ exists)
    metrics/partition.json                     {"stages": {name: {jobs, rows, wall_seconds, ...}}}
    metrics/jobs/*.json                        per-job metrics (validated only)
    targets/<target>.json                      filesystem, device, size (for provenance / summary)
    queries/<target>/<engine>/results.parquet  (or results.json) query runs, see QUERY_RUNS
    restart/<target>/<kind>.json               restart phases, see RESTART_PHASES

Query runs (``results.parquet`` columns, or ``results.json`` = a list of such objects or
``{"rows": [...]}``; ``target``/``engine`` default to the directory names)::

    target str, engine str, query str, cache str ('cold' | 'warm'), run int, seconds float,
    result_rows int, answer str (a short rendering of the result; non-strings are JSON-encoded),
    digest str (hash of the full result, used to check that targets/engines agree)

Restart phases (``<kind>.json`` = a list of objects or ``{"rows": [...]}``; ``target``/``kind``
default to the directory/file names; phases keep their order in the file)::

    target str, kind str, repetition int, phase str, seconds float, rows_expected int,
    rows_found int, rows_lost int, redo_bytes int, recovery_MBps float
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ..core.resources import resources_dir

TABLES = ("storage", "load_time", "load_rate", "queries", "chunk_load", "restart", "chunks",
          "stages")
STAGES = ("fio", "load", "chunks", "metrics", "queries", "restart")


class MetricsError(Exception):
    """A metrics file is missing, unreadable or has the wrong shape (message names the file)."""


def sql_path(table: str) -> Path:
    return resources_dir() / "sql" / f"{table}.sql"


# ---------------------------------------------------------------- input views (DuckDB names)
S, I, F, B = pa.string(), pa.int64(), pa.float64(), pa.bool_()
KEY = [("target", S), ("variant", S), ("strategy", S)]

FIO_RUNS = pa.schema([("target", S), ("test", S), ("MBps", F), ("iops", F), ("clat_p50_us", F),
                      ("clat_p99_us", F), ("direct", B), ("numjobs", I), ("size_bytes", I),
                      ("runtime_s", F)])
LOAD_SUMMARIES = pa.schema(KEY + [
    ("files", I), ("rows", I), ("seconds", F), ("rows_per_s", F), ("sort_seconds", F),
    ("table_bytes", I), ("table_bytes_final", I), ("lookup_qps", F), ("lookup_p50_s", F),
    ("lookup_p99_s", F), ("optimize_seconds", F), ("optimize_stopped", B),
    ("optimize_skipped", B), ("optimize_limit_s", F), ("checksum_ok", B), ("server_version", S),
    ("summary_path", S)])
LOAD_INTERVALS = pa.schema(KEY + [
    ("interval", I), ("start_s", F), ("end_s", F), ("files", I), ("rows", I), ("rows_per_s", F),
    ("input_read_MBps", F), ("target_write_MBps", F), ("innodb_write_MBps", F),
    ("table_bytes", I)])
LOAD_TRACE = pa.schema(KEY + [("file", S), ("rows", I), ("bytes", I), ("start", F), ("end", F),
                              ("cumulative_rows", I)])
LOAD_SAMPLES = pa.schema(KEY + [("time", F), ("table_bytes", I), ("dev_read_bytes", I),
                                ("dev_write_bytes", I), ("cpu_percent", F), ("rss_bytes", I),
                                ("Innodb_data_written", I), ("Innodb_os_log_written", I)])
CHUNK_STATS = pa.schema([("chunkId", I), ("object_rows", I), ("source_rows", I),
                         ("overlap_rows", I), ("parquet_bytes", I), ("tsv_bytes", I)])
STAGE_METRICS = pa.schema([("stage", S), ("jobs", I), ("rows", I), ("wall_seconds", F),
                           ("busy_seconds", F), ("rows_per_s", F), ("peak_rss_mb", F),
                           ("start_epoch_s", F)])
CHUNK_LOADS = pa.schema([("target", S), ("chunks", I), ("files", I), ("rows", I), ("bytes", I),
                         ("create_s", F), ("load_s", F), ("seconds", F), ("connections", I),
                         ("index_rows", I), ("index_seconds", F)])
QUERY_RUNS = pa.schema([("target", S), ("engine", S), ("query", S), ("cache", S), ("run", I),
                        ("seconds", F), ("result_rows", I), ("answer", S), ("digest", S)])
RESTART_PHASES = pa.schema([("target", S), ("kind", S), ("repetition", I), ("phase", S),
                            ("seconds", F), ("rows_expected", I), ("rows_found", I),
                            ("rows_lost", I), ("redo_bytes", I), ("recovery_MBps", F),
                            ("buffer_pool_load", S), ("phase_order", I)])

VIEWS = {"fio_runs": FIO_RUNS, "load_summaries": LOAD_SUMMARIES, "load_intervals": LOAD_INTERVALS,
         "load_trace": LOAD_TRACE, "load_samples": LOAD_SAMPLES, "chunk_stats": CHUNK_STATS,
         "stage_metrics": STAGE_METRICS, "query_runs": QUERY_RUNS,
         "restart_phases": RESTART_PHASES, "chunk_loads": CHUNK_LOADS}
# required columns of each file (the others of the schema may be absent -> NULL)
REQUIRED = {
    "fio_runs": ("test", "MBps", "iops", "clat_p50_us", "clat_p99_us"),
    "load_summaries": ("rows", "seconds"),
    "load_intervals": ("interval", "start_s", "end_s", "files", "rows"),
    "load_trace": ("rows", "start", "end", "cumulative_rows"),
    "load_samples": ("time", "table_bytes"),
    "chunk_stats": ("chunkId", "object_rows", "source_rows"),
    "stage_metrics": (),
    "query_runs": ("query", "cache", "seconds"),
    "restart_phases": ("phase", "seconds"),
    "chunk_loads": ("rows", "seconds"),
}


@dataclass
class RunInputs:
    """Every metrics file of a run, validated and typed (one pyarrow table per view)."""
    run_dir: Path
    views: dict = field(default_factory=dict)
    summaries: list = field(default_factory=list)   # (path, parsed summary.json)
    targets: dict = field(default_factory=dict)     # name -> targets/<name>.json
    files: list = field(default_factory=list)       # every file read
    present: set = field(default_factory=set)       # stages found

    def rows(self, view: str) -> list:
        return self.views[view].to_pylist()


def _json(path: Path):
    if not path.is_file():
        raise MetricsError(f"{path}: missing metrics file")
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MetricsError(f"{path}: not valid JSON ({exc})") from exc


def _json_rows(path: Path) -> list:
    doc = _json(path)
    if isinstance(doc, dict) and isinstance(doc.get("rows"), list):
        doc = doc["rows"]
    if not isinstance(doc, list) or not all(isinstance(r, dict) for r in doc):
        raise MetricsError(f"{path}: expected a list of row objects (or {{\"rows\": [...]}})")
    return doc


def _conform(table: pa.Table, view: str, path: Path, const: dict | None = None) -> pa.Table:
    """Select/cast the columns of ``view`` from ``table``; constants fill key columns."""
    schema, const = VIEWS[view], const or {}
    missing = [c for c in REQUIRED[view] if c not in table.column_names]
    if missing:
        raise MetricsError(f"{path}: missing column(s) {', '.join(missing)} "
                           f"(has: {', '.join(table.column_names)})")
    cols = []
    for f in schema:
        if f.name in table.column_names:
            col = table.column(f.name)
            if f.name in const:   # fill gaps of a key column from the path
                col = pa.chunked_array([pa.array([const[f.name]] * len(table), S)]) \
                    if col.null_count == len(table) else col
            try:
                col = col.cast(f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                raise MetricsError(f"{path}: column {f.name} is not {f.type} ({exc})") from exc
        elif f.name in const:
            col = pa.array([const[f.name]] * len(table), f.type)
        else:
            col = pa.nulls(len(table), f.type)
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=schema)


def _rows_table(rows: list, view: str, path: Path, const: dict | None = None) -> pa.Table:
    names = list(dict.fromkeys(k for r in rows for k in r))
    fixed = []
    for r in rows:
        d = {}
        for k in names:
            v = r.get(k)
            if k in ("answer", "digest") and v is not None and not isinstance(v, str):
                v = json.dumps(v, sort_keys=True, default=str)
            d[k] = v
        fixed.append(d)
    try:
        raw = pa.Table.from_pylist(fixed) if fixed else pa.table({n: pa.array([], S) for n in names})
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as exc:
        raise MetricsError(f"{path}: inconsistent value types ({exc})") from exc
    return _conform(raw, view, path, const)


def _parquet(path: Path, view: str, const: dict) -> pa.Table:
    if not path.is_file():
        raise MetricsError(f"{path}: missing metrics file")
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise MetricsError(f"{path}: not a readable Parquet file ({exc})") from exc
    return _conform(table, view, path, const)


def _csv(path: Path, view: str, const: dict | None = None, delimiter: str = ",") -> pa.Table:
    if not path.is_file():
        raise MetricsError(f"{path}: missing metrics file")
    try:
        table = pacsv.read_csv(path, parse_options=pacsv.ParseOptions(delimiter=delimiter))
    except (OSError, pa.ArrowException) as exc:
        raise MetricsError(f"{path}: not a readable CSV file ({exc})") from exc
    return _conform(table, view, path, const)


def _concat(view: str, parts: list) -> pa.Table:
    return pa.concat_tables(parts) if parts else VIEWS[view].empty_table()


def _subdirs(d: Path) -> list:
    return sorted(p for p in d.iterdir() if p.is_dir() and not p.name.startswith(".")) if d.is_dir() else []


def _load_summary(path: Path, key: dict) -> tuple[dict, pa.Table]:
    s = _json(path)
    if not isinstance(s, dict):
        raise MetricsError(f"{path}: expected a JSON object (a load summary)")
    row = dict(s)
    for k, v in key.items():
        row[k] = s.get(k) or v
    server = s.get("server") if isinstance(s.get("server"), dict) else {}
    variables = server.get("variables") if isinstance(server.get("variables"), dict) else {}
    row["server_version"] = variables.get("version") or server.get("version")
    row["summary_path"] = str(path)
    row = {k: v for k, v in row.items() if not isinstance(v, (dict, list))}
    return s, _rows_table([row], "load_summaries", path)


def collect(run_dir, require=()) -> RunInputs:
    """Read and validate every metrics file of ``run_dir`` (= results/<run>)."""
    run = Path(run_dir)
    if not run.is_dir():
        raise MetricsError(f"{run}: results directory does not exist")
    inp = RunInputs(run)
    parts = {v: [] for v in VIEWS}

    def used(p: Path) -> Path:
        inp.files.append(p)
        return p

    for tdir in _subdirs(run / "fio"):
        inp.present.add("fio")
        parts["fio_runs"].append(_csv(used(tdir / "fio.csv"), "fio_runs", {"target": tdir.name}))

    for tdir in _subdirs(run / "load"):
        for vdir in _subdirs(tdir):
            for sdir in _subdirs(vdir):
                inp.present.add("load")
                key = {"target": tdir.name, "variant": vdir.name, "strategy": sdir.name}
                summary, table = _load_summary(used(sdir / "summary.json"), key)
                key = {k: table.column(k)[0].as_py() for k in key}
                inp.summaries.append((sdir / "summary.json", summary))
                parts["load_summaries"].append(table)
                parts["load_trace"].append(_parquet(used(sdir / "trace.parquet"), "load_trace", key))
                parts["load_samples"].append(_parquet(used(sdir / "samples.parquet"), "load_samples", key))
                ip = sdir / "intervals.parquet"
                if ip.is_file() or not (sdir / "intervals.csv").is_file():
                    parts["load_intervals"].append(_parquet(used(ip), "load_intervals", key))
                else:
                    parts["load_intervals"].append(_csv(used(sdir / "intervals.csv"), "load_intervals", key))

    if (run / "chunks").is_dir():
        inp.present.add("chunks")
        parts["chunk_stats"].append(_csv(used(run / "chunks" / "chunks.tsv"), "chunk_stats",
                                         delimiter="\t"))

    pj = run / "metrics" / "partition.json"
    if pj.is_file():
        inp.present.add("metrics")
        doc = _json(used(pj))
        stages = doc.get("stages") if isinstance(doc, dict) else None
        if not isinstance(stages, dict):
            raise MetricsError(f"{pj}: expected an object with a \"stages\" object")
        rows = []
        for name, m in stages.items():
            if not isinstance(m, dict):
                raise MetricsError(f"{pj}: stage {name!r} is not an object")
            rows.append({"stage": name, "jobs": m.get("jobs"), "rows": m.get("rows"),
                         "wall_seconds": m.get("wall_seconds", m.get("seconds")),
                         "busy_seconds": m.get("busy_seconds"), "rows_per_s": m.get("rows_per_s"),
                         "peak_rss_mb": m.get("peak_rss_mb"), "start_epoch_s": m.get("start")})
        parts["stage_metrics"].append(_rows_table(rows, "stage_metrics", pj))
    for jp in sorted((run / "metrics" / "jobs").glob("*.json")):
        if not isinstance(_json(used(jp)), dict):
            raise MetricsError(f"{jp}: expected a JSON object (job metrics)")

    for tp in sorted((run / "targets").glob("*.json")):
        doc = _json(used(tp))
        if not isinstance(doc, dict):
            raise MetricsError(f"{tp}: expected a JSON object (target description)")
        inp.targets[tp.stem] = doc

    for tdir in _subdirs(run / "queries"):
        for edir in _subdirs(tdir):
            inp.present.add("queries")
            const = {"target": tdir.name, "engine": edir.name}
            pp, jp = edir / "results.parquet", edir / "results.json"
            if pp.is_file() or not jp.is_file():
                parts["query_runs"].append(_parquet(used(pp), "query_runs", const))
            else:
                parts["query_runs"].append(_rows_table(_json_rows(used(jp)), "query_runs", jp, const))
            sp = edir / "summary.json"
            load = _json(used(sp)).get("load") if sp.is_file() else None
            if isinstance(load, dict) and isinstance(load.get("chunk_tables"), dict):
                # Loading the chunk tables into a target's server is a storage figure too.
                row = {**load["chunk_tables"], "target": tdir.name}
                idx = load.get("secondary_index") or {}
                row.update(index_rows=idx.get("rows"), index_seconds=idx.get("seconds"))
                parts["chunk_loads"].append(_rows_table([row], "chunk_loads", sp))

    for tdir in _subdirs(run / "restart"):
        # <kind>.json only: summary.json and <kind>.error.json sit beside them.
        for kp in sorted(p for p in tdir.glob("*.json")
                         if p.stem != "summary" and not p.name.endswith(".error.json")):
            inp.present.add("restart")
            rows = [dict(r, phase_order=i) for i, r in enumerate(_json_rows(used(kp)))]
            parts["restart_phases"].append(
                _rows_table(rows, "restart_phases", kp, {"target": tdir.name, "kind": kp.stem}))

    for stage in require:
        if stage not in inp.present:
            where = {"metrics": "metrics/partition.json", "chunks": "chunks/chunks.tsv"}.get(stage, f"{stage}/")
            raise MetricsError(f"{run / where}: required stage '{stage}' has no metrics in this run")
    inp.views = {v: _concat(v, parts[v]) for v in VIEWS}
    return inp


# ---------------------------------------------------------------- SQL
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
    try:
        con.register("out_table", table)
        con.execute(f"COPY out_table TO '{str(path).replace(chr(39), chr(39) * 2)}' "
                    "(FORMAT csv, HEADER true)")
    finally:
        con.close()
    if table.num_rows == 0:   # be sure the header is there
        text = Path(path).read_text() if Path(path).exists() else ""
        if not text.strip():
            Path(path).write_text(",".join(table.column_names) + "\n")


def make_tables(run_dir, out_dir=None, require=()) -> dict:
    """``catbench tables``: every final table + summary.md + provenance.json into ``out_dir``
    (default results/<run>/tables). Returns {name: path}."""
    from . import provenance
    inp = collect(run_dir, require)
    out = Path(out_dir) if out_dir else Path(run_dir) / "tables"
    out.mkdir(parents=True, exist_ok=True)
    tables = build(inp)
    written = {}
    for name, table in tables.items():
        write_csv(table, out / f"{name}.csv")
        written[name] = out / f"{name}.csv"
    rows = {n: t.to_pylist() for n, t in tables.items()}
    (out / "summary.md").write_text(to_markdown(summary_sections(rows, inp.targets, inp),
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


# ---------------------------------------------------------------- summary.md
def _num(v, digits=3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if v == 0:
            return "0"
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.{digits}g}" if abs(v) < 1 else f"{v:,.{max(digits - len(str(int(abs(v)))), 0)}f}"
    return str(v)


def _load_name(r: dict) -> str:
    return f"{r['target']}/{r['variant']}/{r['strategy']}"


def _order(values) -> list:
    return list(dict.fromkeys(values))


def summary_sections(t: dict, targets: dict | None = None, inp: RunInputs | None = None) -> list:
    """Seed-style side-by-side tables, fastest choices and failed checks as a list of blocks:
    ("h2", text) | ("p", text) | ("ul", [text]) | ("table", caption, header, rows)."""
    targets = targets or {}
    storage, loads, rate = t.get("storage", []), t.get("load_time", []), t.get("load_rate", [])
    queries, restart, chunks, stages = (t.get(k, []) for k in ("queries", "restart", "chunks", "stages"))
    out = []

    # ---- checks
    failed, notes = [], []
    for r in loads:
        if r.get("checksum_ok") is False:
            failed.append(f"Load {_load_name(r)}: the checksum of the loaded table does not match "
                          f"the input files ({_num(r['rows'])} rows loaded) - rows were lost or changed.")
        if r.get("optimize_stopped") is True:
            failed.append(f"Load {_load_name(r)}: OPTIMIZE TABLE was stopped at its time limit; "
                          f"optimize_seconds ({_num(r.get('optimize_seconds'))} s) is a lower bound.")
    for variant in _order(r["variant"] for r in loads):
        counts = {_load_name(r): r["rows"] for r in loads if r["variant"] == variant}
        if len(set(counts.values())) > 1:
            failed.append(f"Loads of variant {variant} did not all load the same number of rows: "
                          + ", ".join(f"{k} {_num(v)}" for k, v in counts.items()) + ".")
    for r in restart:
        if (r.get("rows_lost") or 0) > 0:
            failed.append(f"Restart {r['kind']} on {r['target']} (repetition {r['repetition']}, "
                          f"phase {r['phase']}): {_num(r['rows_lost'])} rows lost.")
    bad = _order(r["query"] for r in queries if r.get("agrees") is False)
    for q in bad:
        got = sorted({f"{r['target']}/{r['engine']}: {r.get('result_rows')} rows, digest "
                      f"{str(r.get('digest'))[:12]}" for r in queries if r["query"] == q})
        failed.append(f"Query {q} does not return the same result everywhere ({'; '.join(got)}).")
    for r in storage:
        if r.get("direct") is False:
            notes.append(f"fio {r['test']} on {r['target']} ran buffered (the filesystem refused "
                         "O_DIRECT), so it measures the page cache too.")
    for stage, present in (("storage (fio)", storage), ("load", loads), ("query", queries),
                           ("restart", restart)):
        if not present:
            notes.append(f"No {stage} results in this run.")
    out.append(("h2", "Checks"))
    if failed:
        out.append(("p", f"{len(failed)} check(s) FAILED:"))
        out.append(("ul", failed))
    else:
        out.append(("p", "All checks passed (load checksums, row counts, OPTIMIZE within its time "
                         "limit, no rows lost on restart, queries agree across targets)."))
    if notes:
        out.append(("ul", notes))

    # ---- fastest choices
    best = []
    for variant in _order(r["variant"] for r in loads):
        rs = [r for r in loads if r["variant"] == variant and r.get("seconds")]
        if rs:
            b = min(rs, key=lambda r: r["seconds"])
            best.append(f"Fastest load of variant {variant}: {b['target']} with strategy {b['strategy']}, "
                        f"{_num(b['seconds'])} s ({_num(b['rows_per_s'])} rows/s).")
    for variant in _order(r["variant"] for r in loads):
        for strategy in _order(r["strategy"] for r in loads if r["variant"] == variant):
            rs = [r for r in loads if r["variant"] == variant and r["strategy"] == strategy and r.get("seconds")]
            if len(rs) > 1:
                b = min(rs, key=lambda r: r["seconds"])
                others = ", ".join(f"{r['target']} {_num(r['seconds'])} s" for r in rs if r is not b)
                best.append(f"Fastest target for {variant}/{strategy}: {b['target']} "
                            f"({_num(b['seconds'])} s; {others}).")
    for target in _order(r["target"] for r in loads):
        for variant in _order(r["variant"] for r in loads):
            rs = [r for r in loads if r["target"] == target and r["variant"] == variant and r.get("seconds")]
            if len(rs) > 1:
                b = min(rs, key=lambda r: r["seconds"])
                best.append(f"Fastest strategy on {target} for {variant}: {b['strategy']} "
                            f"({_num(b['seconds'])} s, speed-up {_num(b.get('speedup_vs_sequential'))}x).")
    for variant in _order(r["variant"] for r in loads):
        rs = [r for r in loads if r["variant"] == variant and r.get("lookup_p99_ms") is not None]
        if rs:
            b = min(rs, key=lambda r: r["lookup_p99_ms"])
            best.append(f"Fastest point lookups (p99) of variant {variant}: {_load_name(b)}, "
                        f"{_num(b['lookup_p99_ms'])} ms.")
        rs = [r for r in loads if r["variant"] == variant and r.get("table_bytes")]
        if len(rs) > 1 and len({r["table_bytes"] for r in rs}) > 1:
            b = min(rs, key=lambda r: r["table_bytes"])
            best.append(f"Smallest table of variant {variant}: {_load_name(b)}, {_num(b['table_bytes'] / 2**20)} MiB.")
    for test in _order(r["test"] for r in storage):
        rs = [r for r in storage if r["test"] == test and r.get("MBps") is not None]
        if len(rs) > 1:
            b = max(rs, key=lambda r: r["MBps"])
            best.append(f"Fastest target for fio {test}: {b['target']} ({_num(b['MBps'])} MB/s, "
                        f"{_num(b['iops'])} IOPS).")
    for q in _order(r["query"] for r in queries):
        for cache in _order(r["cache"] for r in queries if r["query"] == q):
            rs = [r for r in queries if r["query"] == q and r["cache"] == cache and r.get("p50_s") is not None]
            if len(rs) > 1:
                b = min(rs, key=lambda r: r["p50_s"])
                best.append(f"Fastest for query {q} ({cache}): {b['target']}/{b['engine']}, "
                            f"median {_num(b['p50_s'])} s.")
    rtot = _restart_totals(restart)
    for kind in _order(k for _, k in rtot):
        rs = {tg: v for (tg, k), v in rtot.items() if k == kind}
        if len(rs) > 1:
            tg = min(rs, key=rs.get)
            best.append(f"Fastest restart ({kind}): {tg}, {_num(rs[tg])} s on average over repetitions.")
    out.append(("h2", "Fastest choices"))
    out.append(("ul", best) if best else ("p", "Only one choice per question in this run."))

    # ---- storage | load time, per strategy
    tests = _order(r["test"] for r in storage)
    fio = {(r["target"], r["test"]): r for r in storage}
    all_targets = _order([r["target"] for r in storage] + [r["target"] for r in loads])
    for strategy in _order(r["strategy"] for r in loads) or [None]:
        variants = _order(r["variant"] for r in loads if r["strategy"] == strategy)
        lt = {(r["target"], r["variant"]): r for r in loads if r["strategy"] == strategy}
        header = ["target", "filesystem"]
        header += [f"{t} MB/s" if t.startswith("seq") else f"{t} IOPS" for t in tests]
        header += [h for v in variants for h in (f"{v} load s", f"{v} rows/s", f"{v} lookup p99 ms")]
        rows = []
        for tg in all_targets:
            row = [tg, str(targets.get(tg, {}).get("fstype") or "–")]
            for t in tests:
                r = fio.get((tg, t))
                row.append(_num(None if r is None else (r["MBps"] if t.startswith("seq") else r["iops"])))
            for v in variants:
                r = lt.get((tg, v), {})
                row += [_num(r.get("seconds")), _num(r.get("rows_per_s")), _num(r.get("lookup_p99_ms"))]
            rows.append(row)
        title = "Storage | load time" + (f" (strategy {strategy})" if strategy else "")
        out.append(("h2", title))
        out.append(("table", "fio on each target next to the secondary-index load on it.", header, rows))

    # ---- load rate per interval, targets side by side
    for variant, strategy in _order((r["variant"], r["strategy"]) for r in rate):
        rs = [r for r in rate if r["variant"] == variant and r["strategy"] == strategy]
        tgs = _order(r["target"] for r in rs)
        by = {(r["target"], r["interval"]): r for r in rs}
        header = ["interval"] + [h for tg in tgs for h in (f"{tg} end s", f"{tg} rows/s",
                                                           f"{tg} write MB/s", f"{tg} table MiB")]
        rows = []
        for i in sorted({r["interval"] for r in rs}):
            row = [str(i)]
            for tg in tgs:
                r = by.get((tg, i), {})
                tb = r.get("table_bytes_end")
                row += [_num(r.get("end_s")), _num(r.get("rows_per_s")), _num(r.get("target_write_MBps")),
                        _num(None if tb is None else tb / 2**20)]
            rows.append(row)
        out.append(("h2", f"Load rate per interval ({variant}/{strategy})"))
        out.append(("table", "Rows loaded per second and bytes written to the target in each "
                             "interval since the start of the load.", header, rows))

    # ---- queries
    if queries:
        cols = _order((r["target"], r["engine"]) for r in queries)
        by = {(r["query"], r["cache"], r["target"], r["engine"]): r for r in queries}
        header = ["query", "cache"] + [f"{tg}/{e} p50 s" for tg, e in cols] + ["agrees"]
        rows = []
        for q, cache in _order((r["query"], r["cache"]) for r in queries):
            ag = all(r.get("agrees") is not False for r in queries if r["query"] == q)
            rows.append([q, cache] + [_num(by.get((q, cache, tg, e), {}).get("p50_s")) for tg, e in cols]
                        + ["yes" if ag else "NO"])
        out.append(("h2", "Query latency"))
        out.append(("table", "Median seconds per query, target and engine.", header, rows))

    # ---- restart
    if restart:
        phases = _order(r["phase"] for r in restart)
        groups = _order((r["target"], r["kind"]) for r in restart)
        header = ["target", "kind"] + [f"{p} s" for p in phases] + ["total s", "rows lost"]
        rows = []
        for tg, kind in groups:
            rs = [r for r in restart if r["target"] == tg and r["kind"] == kind]
            reps = len({r["repetition"] for r in rs}) or 1
            per = [sum(r["seconds"] or 0 for r in rs if r["phase"] == p) / reps for p in phases]
            rows.append([tg, kind] + [_num(v) for v in per] + [_num(sum(per)),
                                                                _num(sum(r.get("rows_lost") or 0 for r in rs))])
        out.append(("h2", "Restart"))
        out.append(("table", "Mean seconds per phase over repetitions.", header, rows))

    # ---- chunks and stages
    if chunks:
        import statistics
        rows_ = [(r["object_rows"] or 0) + (r["source_rows"] or 0) for r in chunks]
        sizes = [r["tsv_bytes"] for r in chunks if r.get("tsv_bytes") is not None]
        header = ["chunks", "rows min", "rows median", "rows max", "TSV MiB median", "TSV MiB max",
                  "largest / median"]
        row = [_num(len(chunks)), _num(min(rows_)), _num(float(statistics.median(rows_))), _num(max(rows_))]
        if sizes:
            med = statistics.median(sizes)
            row += [_num(med / 2**20), _num(max(sizes) / 2**20), _num(max(sizes) / med if med else None)]
        else:
            row += ["–"] * 3
        out.append(("h2", "Chunks"))
        out.append(("table", "Object+Source rows and TSV bytes per chunk (size skew).", header, [row]))
    if stages:
        out.append(("h2", "Data preparation stages"))
        out.append(("table", "Wall time and throughput of each stage.",
                    ["stage", "jobs", "rows", "wall s", "rows/s", "peak RSS MB"],
                    [[r["stage"], _num(r["jobs"]), _num(r["rows"]), _num(r["wall_seconds"]),
                      _num(r["rows_per_s"]), _num(r["peak_rss_MB"])] for r in stages]))
    return out


def _restart_totals(restart: list) -> dict:
    """{(target, kind): mean over repetitions of the summed phase seconds}."""
    acc = {}
    for r in restart:
        acc.setdefault((r["target"], r["kind"]), {}).setdefault(r["repetition"], 0.0)
        acc[(r["target"], r["kind"])][r["repetition"]] += r.get("seconds") or 0.0
    return {k: sum(v.values()) / len(v) for k, v in acc.items()}


def _md_cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def to_markdown(sections: list, title: str = "catbench summary") -> str:
    lines = [f"# {title}", ""]
    for block in sections:
        kind = block[0]
        if kind == "h2":
            lines += [f"## {block[1]}", ""]
        elif kind == "p":
            lines += [block[1], ""]
        elif kind == "ul":
            lines += [f"- {item}" for item in block[1]] + [""]
        elif kind == "table":
            _, caption, header, rows = block
            lines += [caption, "", "| " + " | ".join(map(_md_cell, header)) + " |",
                      "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
            lines += ["| " + " | ".join(map(_md_cell, r)) + " |" for r in rows] + [""]
    return "\n".join(lines)
