"""Final tables of a run: DuckDB SQL (``resources/sql/<table>.sql``) over the views that
``inputs.collect`` reads from every metrics file, written as CSV next to summary.md and
provenance.json (``catbench tables``).

The SQL may call ``ci_low(list)`` / ``ci_high(list)`` (the interval of a figure's typical
value), ``ratio_gm(num_list, den_list)`` with ``ratio_ci_low`` / ``ratio_ci_high`` (a ratio of
geometric means and its interval) at the ``report.confidence`` level, and ``vals(list)`` (the
raw repetitions as one cell, which the comparison rule tests; ``stats.py``), and read every
table it names as the view ``table_<name>`` (:data:`TABLES` builds those first).

provenance.json: what produced a run's numbers - software versions, the server settings in
force (from the load summaries), the host (CPU, cores, memory, caches) and each storage target.
Nothing secret is written: any key that looks like a password, secret, token or credential is
dropped, wherever it occurs."""

from __future__ import annotations

import datetime as _dt
import functools
import json
import os
import platform
import re
import shutil
import subprocess
from importlib import metadata
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv

from ..core.infra.resources import resources_dir
from ..core.server.memory import meminfo
from . import stats
from .inputs import MetricsError, RunInputs, collect, stale_note
from .spec import ReportSpec
from .summary import summary_sections, to_markdown
from .views import VIEWS, refuse_old_columns


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
    con.create_function("ci_note", lambda xs: None if xs is None else stats.ci_note(xs, confidence), ["DOUBLE[]"],
                        "VARCHAR", null_handling="special", side_effects=False)
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


@functools.cache
def _csv_connection():
    """One in-memory connection for every CSV a process writes: opening one costs ~20 ms of
    CPU (its thread pool), a table's CSV ~1 ms, and a report writes dozens."""
    import duckdb
    return duckdb.connect()


def write_csv(table: pa.Table, path: Path) -> None:
    """CSV with a header row (also when empty); booleans as true/false, NULL as empty."""
    import duckdb
    try:   # the relation API: the path is an argument, never pasted into SQL text
        _csv_connection().from_arrow(table).write_csv(str(path), header=True)
    except duckdb.IOException as exc:   # a full or read-only folder, as Python's own writes say it
        full = "No space left" in str(exc)
        raise OSError(28 if full else 5, "No space left on device" if full else str(exc).splitlines()[0],
                      str(path)) from None
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
    prov = provenance(run_dir, inp)
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
            refuse_old_columns(name, table.column_names, p)
            out[name] = table.to_pylist()
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


PACKAGES = ("catbench", "snakemake", "duckdb", "pyarrow", "polars", "mysql-connector-python",
            "numpy", "matplotlib", "psutil", "jsonschema", "pyyaml")
SECRET = re.compile(r"pass(word|wd)?|secret|token|credential|auth|private[_-]?key", re.I)
# differ between loads by construction; reported per load, not as "settings in force"
PER_LOAD = {"datadir", "tmpdir", "socket", "pid_file", "log_error", "general_log_file",
            "innodb_data_home_dir", "innodb_log_group_home_dir", "port"}


def scrub(value):
    """Drop every key that looks secret, recursively."""
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items() if not SECRET.search(str(k))}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


@functools.cache     # a process's packages and tools do not change while it runs
def _version(pkg: str):
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


@functools.cache
def _run(cmd: tuple) -> str | None:
    if not shutil.which(cmd[0]):
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return (out.stdout or out.stderr).strip() or None


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def versions(summaries=()) -> dict:
    v = {pkg: _version(pkg) for pkg in PACKAGES}
    v["python"] = platform.python_version()
    v["fio"] = _run(("fio", "--version"))
    v["kernel"] = platform.release()
    osr = _read("/etc/os-release") or ""
    m = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', osr, re.M)
    v["os"] = m.group(1) if m else platform.platform()
    short = sorted({((s.get("server") or {}).get("variables") or {}).get("version")
                    or (s.get("server") or {}).get("version") for _, s in summaries} - {None})
    full = sorted({(s.get("server") or {}).get("version") for _, s in summaries} - {None})
    v["server"] = short[0] if len(short) == 1 else (short or None)
    v["server_binary"] = full[0] if len(full) == 1 else (full or None)
    return v


def cpu() -> dict:
    info = {"model": None, "logical_cpus": os.cpu_count(), "physical_cores": None, "sockets": None,
            "threads_per_core": None, "mhz_max": None, "caches": [], "usable_cpus": None}
    try:
        info["usable_cpus"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        pass
    lscpu = _run(("lscpu",)) or ""
    fields = dict(line.split(":", 1) for line in lscpu.splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    info["model"] = fields.get("Model name")
    try:
        sockets = int(fields.get("Socket(s)", "0"))
        cores = int(fields.get("Core(s) per socket", "0"))
        info.update(sockets=sockets or None, physical_cores=(sockets * cores) or None,
                    threads_per_core=int(fields.get("Thread(s) per core", "0")) or None)
    except ValueError:
        pass
    info["mhz_max"] = fields.get("CPU max MHz")
    if not info["model"]:
        m = re.search(r"^model name\s*:\s*(.*)$", _read("/proc/cpuinfo") or "", re.M)
        info["model"] = m.group(1) if m else platform.processor() or None
    for idx in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        c = {k: _read(str(idx / k)) for k in ("level", "type", "size", "shared_cpu_list",
                                              "coherency_line_size")}
        info["caches"].append(c)
    for key in ("L1d cache", "L1i cache", "L2 cache", "L3 cache"):
        if key in fields:
            info.setdefault("cache_totals", {})[key] = fields[key]
    return info


def memory() -> dict:
    info = meminfo()
    return {k + "_bytes": info[k] for k in ("MemTotal", "MemAvailable", "SwapTotal", "Hugepagesize") if k in info}


def server_settings(summaries) -> dict:
    """The variables the server reported (SHOW VARIABLES) during each load: those equal in every
    load as ``variables``, the rest per load; plus the settings requested in the config, and the
    RAM each load's server and its page cache had (``server.ram``: its cgroup's limit and peak)."""
    per, ram = {}, {}
    requested = {}
    for path, s in summaries:
        server = s.get("server") or {}
        name = f"{s.get('target', path.parts[-5])}/{s.get('variant', path.parts[-4])}/" \
               f"{s.get('engine') or 'innodb'}/{s.get('strategy', path.parts[-2])}"
        per[name] = dict(server.get("variables") or {})
        if server.get("ram"):
            ram[name] = {"limit_bytes": server["ram"], "peak_bytes": server.get("ram_peak")}
        for k, v in (server.get("settings") or {}).items():
            requested.setdefault(k, set()).add(str(v))
    common = {}
    if per:
        first = next(iter(per.values()))
        common = {k: v for k, v in first.items()
                  if k not in PER_LOAD and all(d.get(k) == v for d in per.values())}
    by_load = {n: {k: v for k, v in d.items() if k not in common} for n, d in per.items()}
    return {
        "variables": common,
        "variables_by_load": {n: d for n, d in by_load.items() if d},
        "requested_settings": {k: sorted(v)[0] if len(v) == 1 else sorted(v) for k, v in requested.items()},
        "binaries": sorted({(s.get("server") or {}).get("binary") for _, s in summaries} - {None}),
        "ram_by_load": ram,
    }


def provenance(run_dir, inputs=None) -> dict:
    """provenance.json of ``run_dir`` (results/<run>); ``inputs`` = the inputs.collect() result if at hand."""
    inp = inputs if inputs is not None else collect(run_dir)
    uname = platform.uname()
    doc = {
        "run": Path(run_dir).resolve().name,
        "results_dir": str(Path(run_dir)),
        "generated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "note": "host, cpu and memory describe the machine that built the tables; the load "
                "summaries and targets describe the benchmark runs",
        "versions": versions(inp.summaries),
        "host": {"hostname": uname.node, "machine": uname.machine, "kernel": uname.release,
                 "cpu": cpu(), "memory": memory()},
        "server": server_settings(inp.summaries),
        "targets": {name: doc for name, doc in sorted(inp.targets.items())},
        "load_storage": {f"{s.get('target')}/{s.get('variant')}/{s.get('engine') or 'innodb'}/{s.get('strategy')}":
                         s.get("storage")
                         for _, s in inp.summaries if isinstance(s.get("storage"), dict)},
        "stages_present": sorted(inp.present),
        "left_out": [p.relative_to(inp.run_dir).as_posix() for p in inp.stale],   # another config's results
        "metrics_files": len(inp.files),
    }
    if "index" in inp.own:   # index.source: file: each of the user's files (path, bytes, mtime, CRC-32, rows)
        doc["index_sources"] = inp.own["index"]
    if "patch" in inp.own:   # catalog.patch.file: each patch file (path, bytes, mtime, CRC-32, rows), the footprint
        doc["patch_files"] = inp.own["patch"]
    return scrub(doc)
