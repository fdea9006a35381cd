"""The views the final tables' SQL reads (DuckDB names): one pyarrow schema per view, the
columns a metrics file must have for it (the others of the schema may be absent -> NULL), and
how one metrics file (JSON, Parquet, CSV) becomes a view's typed table. ``inputs`` walks a run's
files and fills the views with them."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from .spec import MetricsError

S, I, F, B = pa.string(), pa.int64(), pa.float64(), pa.bool_()  # noqa: E741
KEY = [("target", S), ("variant", S), ("engine", S), ("strategy", S)]

REP = [("repetition", I)]
# The engines' own counters a load's samples keep (core/server/status.py STATUS_COUNTERS), per row
# in load_io.csv: InnoDB's reads, writes, misses, flushes and redo; MyRocks' WAL, flushes,
# compactions and write stalls; MyISAM's key blocks read and written.
ENGINE_COUNTERS = ("Innodb_data_read", "Innodb_data_written", "Innodb_buffer_pool_reads",
                   "Innodb_buffer_pool_pages_flushed", "Innodb_os_log_written", "Rocksdb_wal_bytes",
                   "Rocksdb_flush_write_bytes", "Rocksdb_compact_read_bytes", "Rocksdb_compact_write_bytes",
                   "Rocksdb_stall_micros", "Rocksdb_stall_total_stops", "Rocksdb_stall_total_slowdowns",
                   "Rocksdb_block_cache_miss", "Rocksdb_block_cache_index_miss",
                   "Rocksdb_block_cache_index_bytes_insert", "Key_reads", "Key_writes")
FIO_RUNS = pa.schema([("target", S), ("test", S), ("MBps", F), ("iops", F), ("clat_p50_us", F),
                      ("clat_p99_us", F), ("direct", B), ("numjobs", I), ("size_bytes", I),
                      ("runtime_s", F)] + REP)
LOAD_SUMMARIES = pa.schema(KEY + [
    ("files", I), ("rows", I), ("seconds", F), ("rows_per_s", F), ("sort_seconds", F),
    ("table_bytes", I), ("table_bytes_final", I), ("lookup_qps", F), ("lookup_p50_s", F),
    ("lookup_p99_s", F), ("optimize_seconds", F), ("optimize_stopped", B),
    ("optimize_skipped", B), ("optimize_limit_s", F), ("checksum_ok", B), ("server_version", S),
    ("buffer_pool_bytes", I), ("n", I), ("stopped", B), ("time_limit_s", F), ("table_pool_ratio", F),
    ("row_bytes", I), ("summary_path", S)])
# One row per repetition of a load (summary.json "repetitions", or its top level).
LOAD_RUNS = pa.schema(KEY + REP + [
    ("files", I), ("rows", I), ("seconds", F), ("sort_seconds", F), ("table_bytes", I),
    ("lookup_qps", F), ("lookup_p50_s", F), ("lookup_p99_s", F), ("optimize_seconds", F),
    ("optimize_stopped", B), ("checksum_ok", B), ("buffer_pool_bytes", I), ("stopped", B),
    ("table_pool_ratio", F), ("time_limit_s", F), ("server_cpu_s", F), ("job_cpu_s", F), ("host_cpus", I),
    ("resumed_at_file", I)])
LOAD_INTERVALS = pa.schema(KEY + REP + [
    ("interval", I), ("start_s", F), ("end_s", F), ("files", I), ("rows", I), ("rows_per_s", F),
    ("input_read_MBps", F), ("target_write_MBps", F), ("innodb_write_MBps", F),
    ("table_bytes", I)])
LOAD_TRACE = pa.schema(KEY + REP + [("file", S), ("rows", I), ("bytes", I), ("start", F), ("end", F),
                                    ("cumulative_rows", I)])
LOAD_SAMPLES = pa.schema(KEY + REP + [("time", F), ("table_bytes", I), ("dev_read_bytes", I),
                                      ("dev_write_bytes", I), ("dev_read_ios", I), ("dev_write_ios", I),
                                      ("cpu_percent", F), ("rss_bytes", I), ("server_user_s", F),
                                      ("server_sys_s", F), ("Handler_write", I)]
                         + [(c, I) for c in ENGINE_COUNTERS])
LOAD_NOT_RUN = pa.schema([("engine", S), ("strategy", S), ("reason", S)])
# index/working_set.json, one row per variant: what the loads should expect (prepare/working_set.py)
WORKING_SET = pa.schema([("variant", S), ("id_layout", S), ("order", S), ("pool_pages", I),
                         ("rows_per_leaf", I), ("window_rows", I), ("leaves", I), ("table_over_pool", F),
                         ("working_set_pages", I), ("working_set_over_pool", F), ("collapse_expected", B)])
CHUNK_STATS = pa.schema([("chunkId", I), ("object_rows", I), ("source_rows", I),
                         ("overlap_rows", I), ("parquet_bytes", I), ("tsv_bytes", I),
                         ("ra_centre", F), ("dec_centre", F)])
STAGE_METRICS = pa.schema([("stage", S), ("jobs", I), ("rows", I), ("wall_seconds", F),
                           ("busy_seconds", F), ("rows_per_s", F), ("peak_rss_mb", F),
                           ("start_epoch_s", F)])
CHUNK_LOADS = pa.schema([("target", S), ("chunks", I), ("files", I), ("rows", I), ("bytes", I),
                         ("create_s", F), ("load_s", F), ("seconds", F), ("connections", I),
                         ("index_rows", I), ("index_seconds", F)])
# queries/<target>/<engine>/summary.json "load": what each engine reads, what building it took, the
# bytes it keeps (mysql: the chunk tables and the index; lsdb: the HATS collections; duckdb: the chunk files)
LAYOUT_LOADS = pa.schema([("target", S), ("query_engine", S), ("layout", S), ("rows", I), ("seconds", F),
                          ("bytes", I), ("index_seconds", F), ("index_bytes", I)])


def _mysql_layout(load: dict) -> dict | None:
    tables, index = load.get("chunk_tables"), load.get("secondary_index") or {}
    if not isinstance(tables, dict):
        return None
    by = tables.get("rows_by_table") or {}
    return {"layout": "InnoDB chunk tables + secondary index", "rows": (by.get("Object") or 0) + (by.get("Source") or 0)
            or tables.get("rows"), "seconds": tables.get("seconds"), "bytes": tables.get("stored_bytes"),
            "index_seconds": index.get("seconds"), "index_bytes": index.get("stored_bytes")}


def _hats_layout(load: dict) -> dict | None:
    tables = (load.get("hats") or {}).get("tables")
    if not isinstance(tables, dict):
        return None
    return {"layout": "HATS collections (tiles, margins, objectId index)"
            + (", kept from an earlier run" if load["hats"].get("reused") else ""),
            **{k: sum(t.get(k) or 0 for t in tables.values()) for k in ("rows", "seconds", "bytes")}}


def _parquet_layout(load: dict) -> dict | None:
    p = load.get("parquet")
    return {"layout": "Parquet chunk files (the partition's)", "rows": p.get("rows"), "seconds": None,
            "bytes": p.get("bytes")} if isinstance(p, dict) else None


# query engine -> its summary.json "load" read into a LAYOUT_LOADS row
LAYOUTS = {"mysql": _mysql_layout, "lsdb": _hats_layout, "duckdb": _parquet_layout}

# queries/<target>/mysql/chunk_loads.parquet: each chunk file's load (query/recorder.py)
CHUNK_LOAD_FILES = pa.schema([("target", S), ("kind", S), ("chunkId", I), ("rows", I), ("bytes", I),
                              ("seconds", F)])
# queries/<target>/mysql/chunk_times.parquet: each chunk query of a run (query/recorder.py)
QUERY_CHUNK_RUNS = pa.schema([("target", S), ("query_engine", S), ("query", S), ("cache", S), ("run", I),
                              ("chunkId", I), ("seconds", F), ("result_rows", I)])
QUERY_RUNS = pa.schema([("target", S), ("query_engine", S), ("query", S), ("cache", S), ("run", I),
                        ("seconds", F), ("result_rows", I), ("answer", S), ("digest", S)])
RESTART_PHASES = pa.schema([("target", S), ("kind", S), ("repetition", I), ("phase", S),
                            ("seconds", F), ("rows_expected", I), ("rows_found", I),
                            ("rows_lost", I), ("redo_bytes", I), ("recovery_MBps", F),
                            ("buffer_pool_load", S), ("phase_order", I)])
# cluster/<target>/<kind>.json "rows": one node restart's phases (restart/cluster/rows.py ROW_KEYS);
# failed: the kind's "failed" (a check that stopped the stage)
CLUSTER_PHASES = pa.schema([("target", S), ("kind", S), ("repetition", I), ("node", S), ("phase", S),
                            ("seconds", F), ("clock", S), ("transfer", S), ("transfer_bytes", F),
                            ("transfer_MBps", F), ("donor", S), ("acked_inserts", I), ("acked_lost", I),
                            ("checksums_equal", B), ("failed", S), ("phase_order", I)])
# its "load": the workload per window (before / during / transfer / after) and node (LOAD_KEYS)
CLUSTER_LOAD = pa.schema([("target", S), ("kind", S), ("repetition", I), ("window", S), ("window_s", F),
                          ("node", S), ("role", S), ("lookups_ok", I), ("lookups_failed", I),
                          ("lookups_per_s", F), ("lookup_p50_ms", F), ("lookup_p99_ms", F),
                          ("insert_rows", I), ("inserts_per_s", F), ("insert_max_latency_s", F),
                          ("insert_failures", I)])
# <a measuring job's results>/isolation.json (core/infra/jobs/isolation.py); job = its directory
ISOLATION = pa.schema([("stage", S), ("job", S), ("target", S), ("host", S), ("slurm_job", S),
                       ("slurm_exclusive", B), ("start", F), ("end", F), ("alone", B), ("shared_locks", S),
                       ("other_catbench_jobs", S), ("other_slurm_jobs", S)])

VIEWS = {"fio_runs": FIO_RUNS, "load_summaries": LOAD_SUMMARIES, "load_runs": LOAD_RUNS,
         "load_intervals": LOAD_INTERVALS,
         "load_trace": LOAD_TRACE, "load_samples": LOAD_SAMPLES, "chunk_stats": CHUNK_STATS,
         "stage_metrics": STAGE_METRICS, "query_runs": QUERY_RUNS,
         "restart_phases": RESTART_PHASES, "chunk_loads": CHUNK_LOADS, "layout_loads": LAYOUT_LOADS,
         "chunk_load_files": CHUNK_LOAD_FILES, "query_chunk_runs": QUERY_CHUNK_RUNS, "load_not_run": LOAD_NOT_RUN,
         "working_set": WORKING_SET, "cluster_phases": CLUSTER_PHASES, "cluster_load": CLUSTER_LOAD,
         "isolation": ISOLATION}
# Columns an earlier layout wrote under another name: such a run is refused, naming the catbench
# that reads it (no release reads two layouts).
OLD_COLUMNS = {name: {"engine": ("query_engine", "eb0a633")} for name in ("query_runs", "query_chunk_runs", "queries")}


def refuse_old_columns(name: str, columns: list[str], path) -> None:
    """A MetricsError naming ``path`` where view or table ``name`` has a column of an earlier layout."""
    for col, (now, commit) in OLD_COLUMNS.get(name, {}).items():
        if col in columns and now not in columns:
            raise MetricsError(f"{path}: column `{col}` is `{now}` since commit {commit}: a run written before it "
                               f"is read by catbench at {commit}~1 (git checkout {commit}~1), or run its "
                               f"stage again")


# required columns of each file (the others of the schema may be absent -> NULL)
REQUIRED = {
    "fio_runs": ("test", "MBps", "iops", "clat_p50_us", "clat_p99_us"),
    "load_summaries": ("rows", "seconds"),
    "load_runs": ("rows", "seconds"),
    "load_intervals": ("interval", "start_s", "end_s", "files", "rows"),
    "load_trace": ("rows", "start", "end", "cumulative_rows"),
    "load_samples": ("time", "table_bytes"),
    "chunk_stats": ("chunkId", "object_rows", "source_rows"),
    "stage_metrics": (),
    "query_runs": ("query", "cache", "seconds"),
    "restart_phases": ("phase", "seconds"),
    "chunk_loads": ("rows", "seconds"),
    "layout_loads": ("query_engine", "layout", "rows"),
    "chunk_load_files": ("chunkId", "rows", "seconds"),
    "query_chunk_runs": ("query", "cache", "run", "chunkId", "seconds"),
    "load_not_run": ("engine", "strategy", "reason"),
    "working_set": ("variant", "working_set_pages", "working_set_over_pool"),
    "cluster_phases": ("phase", "seconds"),
    "cluster_load": ("window", "node"),
    "isolation": ("alone",),
}


# ---- one metrics file read into a view's typed table (MetricsError naming the file)

def read_json(path: Path):
    if not path.is_file():
        raise MetricsError(f"{path}: missing metrics file")
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MetricsError(f"{path}: not valid JSON ({exc})") from exc


def json_rows(path: Path) -> list:
    doc = read_json(path)
    if isinstance(doc, dict) and isinstance(doc.get("rows"), list):
        doc = doc["rows"]
    if not isinstance(doc, list) or not all(isinstance(r, dict) for r in doc):
        raise MetricsError(f"{path}: expected a list of row objects (or {{\"rows\": [...]}})")
    return doc


def conform(table: pa.Table, view: str, path: Path, const: dict | None = None) -> pa.Table:
    """Select/cast the columns of ``view`` from ``table``; constants fill key columns (a
    ``repetition`` column absent from the file is repetition 0)."""
    schema, const = VIEWS[view], const or {}
    refuse_old_columns(view, table.column_names, path)
    if "repetition" in schema.names and "repetition" not in table.column_names:
        table = table.append_column("repetition", pa.array([0] * len(table), I))
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


def rows_table(rows: list, view: str, path: Path, const: dict | None = None) -> pa.Table:
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
    return conform(raw, view, path, const)


def parquet_table(path: Path, view: str, const: dict) -> pa.Table:
    if not path.is_file():
        raise MetricsError(f"{path}: missing metrics file")
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise MetricsError(f"{path}: not a readable Parquet file ({exc})") from exc
    return conform(table, view, path, const)


def csv_table(path: Path, view: str, const: dict | None = None, delimiter: str = ",") -> pa.Table:
    if not path.is_file():
        raise MetricsError(f"{path}: missing metrics file")
    try:
        table = pacsv.read_csv(path, parse_options=pacsv.ParseOptions(delimiter=delimiter))
    except (OSError, pa.ArrowException) as exc:
        raise MetricsError(f"{path}: not a readable CSV file ({exc})") from exc
    return conform(table, view, path, const)


def concat(view: str, parts: list) -> pa.Table:
    return pa.concat_tables(parts) if parts else VIEWS[view].empty_table()
