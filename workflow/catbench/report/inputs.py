"""Every metrics file of a run, read, validated and typed: the inputs of the final tables
(DuckDB views, see ``tables``) and of ``provenance``.

Input layout read under ``results/<run>/`` (a stage that is absent gives an empty table with
the right header; a file that a present stage needs but is missing or unreadable raises
:class:`MetricsError` naming that file)::

    fio/<target>/fio.csv                       target,test,MBps,iops,clat_p50_us,clat_p99_us,direct,
                                               numjobs,size_bytes,runtime_s,json,[repetition]
    load/<target>/<variant>/<engine>/<strategy>/  one directory per load, all four files required
                                               (an older layout is refused: OLD_LOAD_LAYOUT):
        summary.json                           target, variant, engine, strategy, files, rows, seconds,
                                               rows_per_s, table_bytes, lookup_p50_s, lookup_p99_s,
                                               lookup_qps, optimize_seconds, optimize_stopped,
                                               checksum_ok, [sort_seconds], server{version,variables},
                                               [repetitions: the same figures per repetition]
        trace.parquet                          per file: file, rows, start, end, cumulative_rows
        samples.parquet                        time series: time, table_bytes, [dev_read_bytes,
                                               dev_write_bytes, cpu_percent, rss_bytes, Innodb_*]
        intervals.parquet (or intervals.csv)   interval, start_s, end_s, files, rows,
                                               input_read_MBps, target_write_MBps, table_bytes, ...
        (trace, samples and intervals carry a ``repetition`` column; absent = repetition 0, and a
        summary.json without ``repetitions`` is one repetition: the figures of its top level)
    load/not_run.json                          [{engine, strategy, reason}]: engine x strategy left out (optional)
    index/working_set.json                     the loads' predicted insert working set (optional)
    chunks/chunks.tsv                          chunkId, object_rows, source_rows, overlap_rows,
                                               parquet_bytes, tsv_bytes   (required if chunks/ exists)
    metrics/partition.json                     {"stages": {name: {jobs, rows, wall_seconds, ...}}}
    metrics/index.json                         the same, of an index-only run (index.source: generate)
    metrics/jobs/*.json                        per-job metrics (validated only)
    targets/<target>.json                      filesystem, device, size (for provenance / summary)
    queries/<target>/<query_engine>/results.parquet  (or results.json) query runs, see QUERY_RUNS
    queries/<target>/mysql/chunk_loads.parquet, chunk_times.parquet  per chunk: file loads, chunk queries
    queries/<target>/<query_engine>/summary.json  "load": the layout's build and bytes (view layout_loads)
    restart/<target>/<kind>.json               restart phases, see RESTART_PHASES
    cluster/<target>/<kind>.json               Galera node restarts (restart/cluster/run_cluster.py): "rows" =
                                               phases (CLUSTER_PHASES), "load" = the workload per window
                                               and node (CLUSTER_LOAD), "failed" = a check that failed
    {fio,load,queries,restart,cluster}/**/isolation.json   whether each measuring job ran alone (view isolation)
    predict/prediction.json                    this run predicted from rungs (catbench predict --out):
                                               "predictions", "validation", ["restarts"] (optional)

Query runs (``results.parquet`` columns, or ``results.json`` = a list of such objects or ``{"rows":
[...]}``; ``target``/``query_engine`` default to the directories; ``engine`` in an earlier run's)::

    target str, query_engine str, query str, cache str ('cold' | 'warm'), run int, seconds float,
    result_rows int, answer str (a short rendering of the result; non-strings are JSON-encoded),
    digest str (hash of the full result, used to check that targets/engines agree)

Restart phases (``<kind>.json`` = a list of objects or ``{"rows": [...]}``; ``target``/``kind``
default to the directory/file names; phases keep their order in the file)::

    target str, kind str, repetition int, phase str, seconds float, rows_expected int,
    rows_found int, rows_lost int, redo_bytes int, recovery_MBps float
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from ..core.index.table import ENGINES
from ..core.infra.metrics import OLD_LOAD_LAYOUT
from .at_scale import curve_rows, prediction_row, restart_rows
from .findings.queries_at_scale import query_tables
from .spec import MetricsError
from .views import LAYOUTS, VIEWS, concat, csv_table, json_rows, parquet_table, read_json, rows_table

log = logging.getLogger(__name__)
STAGES = ("fio", "load", "chunks", "metrics", "queries", "restart", "cluster")
# the stages whose jobs measure (an isolation.json beside their results)
MEASURING = ("fio", "load", "queries", "restart", "cluster")


@dataclass
class RunInputs:
    """Every metrics file of a run, validated and typed (one pyarrow table per view)."""
    run_dir: Path
    views: dict = field(default_factory=dict)
    summaries: list = field(default_factory=list)   # (path, parsed summary.json)
    targets: dict = field(default_factory=dict)     # name -> targets/<name>.json
    files: list = field(default_factory=list)       # every file read
    present: set = field(default_factory=set)       # stages found
    prediction: dict = field(default_factory=dict)  # {"prediction", "prediction_validation", "prediction_curve": rows}
    own: dict = field(default_factory=dict)         # {"index": sources.json, "patch": files.json, "stages_<x>": <x>.json}
    stale: list = field(default_factory=list)       # result folders of another config, left out (collect's only=)

    def rows(self, view: str) -> list:
        return self.views[view].to_pylist()


def _subdirs(d: Path) -> list:
    return sorted(p for p in d.iterdir() if p.is_dir() and not p.name.startswith(".")) if d.is_dir() else []


def _load_summary(path: Path, key: dict) -> tuple[dict, pa.Table]:
    s = read_json(path)
    if not isinstance(s, dict):
        raise MetricsError(f"{path}: expected a JSON object (a load summary)")
    row = dict(s)
    for k, v in key.items():
        row[k] = s.get(k) or v
    server = s.get("server") if isinstance(s.get("server"), dict) else {}
    variables = server.get("variables") if isinstance(server.get("variables"), dict) else {}
    row["server_version"] = variables.get("version") or server.get("version")
    # the engine's page cache: InnoDB's buffer pool, MyRocks' block cache
    engine = ENGINES.get(row["engine"])
    row["buffer_pool_bytes"] = variables.get(engine.cache_variable if engine else "innodb_buffer_pool_size")
    row["summary_path"] = str(path)
    reps = s.get("repetitions") if isinstance(s.get("repetitions"), list) else None
    if reps is not None and not all(isinstance(r, dict) for r in reps):
        raise MetricsError(f"{path}: \"repetitions\" must be a list of objects")
    runs = [{**{k: row.get(k) for k in ("target", "variant", "engine", "strategy", "files", "buffer_pool_bytes",
                                         "time_limit_s")},
             **{k: v for k, v in r.items() if not isinstance(v, (dict, list))}} for r in reps or [dict(row)]]
    for i, r in enumerate(runs):
        r.setdefault("repetition", i)
    row["n"] = len(runs)
    row = {k: v for k, v in row.items() if not isinstance(v, (dict, list))}
    return s, rows_table([row], "load_summaries", path), rows_table(runs, "load_runs", path)


class _Reader:
    """One pass over a run directory: every file read is recorded, tables go to their view."""

    def __init__(self, run: Path, only=None):
        self.run = run
        self.inp = RunInputs(run)
        self.parts = {v: [] for v in VIEWS}
        self.keep = None if only is None else {Path(p).resolve() for p in only}   # the tables rule's inputs
        self.above = None if only is None else self.keep | {a for p in self.keep for a in p.parents}

    def ours(self, p: Path) -> bool:   # one of this config's results, in one or above one
        return self.keep is None or p.resolve() in self.above or any(a in self.keep for a in p.resolve().parents)

    def dirs(self, d: Path) -> list:
        """The subfolders of ``d`` this config wrote; the others (a renamed target, a strategy no
        longer run: an earlier config's results) go to RunInputs.stale, unread."""
        subs = _subdirs(d)
        self.inp.stale += [p for p in subs if not self.ours(p)]
        return [p for p in subs if self.ours(p)]

    def used(self, p: Path) -> Path:
        self.inp.files.append(p)
        return p

    def add(self, view: str, table: pa.Table) -> None:
        self.parts[view].append(table)

    def fio(self) -> None:
        for tdir in self.dirs(self.run / "fio"):
            self.inp.present.add("fio")
            self.add("fio_runs", csv_table(self.used(tdir / "fio.csv"), "fio_runs", {"target": tdir.name}))

    def loads(self) -> None:
        for tdir in self.dirs(self.run / "load"):
            for vdir in self.dirs(tdir):
                for edir in self.dirs(vdir):
                    if edir.name not in ENGINES:
                        raise MetricsError(f"{edir}: not a storage engine's folder; a load folder {OLD_LOAD_LAYOUT}")
                    for sdir in self.dirs(edir):
                        self.inp.present.add("load")
                        self._load(sdir, {"target": tdir.name, "variant": vdir.name, "engine": edir.name,
                                          "strategy": sdir.name})
        nr = self.run / "load" / "not_run.json"
        rows = json_rows(self.used(nr)) if nr.is_file() else []
        if rows:
            self.add("load_not_run", rows_table(rows, "load_not_run", nr))
        ws = self.run / "index" / "working_set.json"
        if ws.is_file():
            doc = read_json(self.used(ws))
            if not isinstance(doc, dict) or not isinstance(doc.get("variants"), dict):
                raise MetricsError(f"{ws}: expected an object with a \"variants\" object")
            rows = [{**v, "variant": name, "id_layout": doc.get("id_layout"), "order": doc.get("order"),
                     "pool_pages": doc.get("pool_pages")} for name, v in doc["variants"].items()]
            self.add("working_set", rows_table(rows, "working_set", ws))

    def _load(self, sdir: Path, key: dict) -> None:
        summary, table, runs = _load_summary(self.used(sdir / "summary.json"), key)
        key = {k: table.column(k)[0].as_py() for k in key}
        self.inp.summaries.append((sdir / "summary.json", summary))
        self.add("load_summaries", table)
        self.add("load_runs", runs)
        self.add("load_trace", parquet_table(self.used(sdir / "trace.parquet"), "load_trace", key))
        self.add("load_samples", parquet_table(self.used(sdir / "samples.parquet"), "load_samples", key))
        ip = sdir / "intervals.parquet"
        if ip.is_file() or not (sdir / "intervals.csv").is_file():
            self.add("load_intervals", parquet_table(self.used(ip), "load_intervals", key))
        else:
            self.add("load_intervals", csv_table(self.used(sdir / "intervals.csv"), "load_intervals", key))

    def chunks(self) -> None:
        if (self.run / "chunks").is_dir():
            self.inp.present.add("chunks")
            self.add("chunk_stats", csv_table(self.used(self.run / "chunks" / "chunks.tsv"), "chunk_stats", delimiter="\t"))

    def metrics(self) -> None:
        # partition.json: catalog + partition (its "catalog": at_scale.py your_catalog); index.json: an index study's
        for pj in (self.run / "metrics" / "partition.json", self.run / "metrics" / "index.json"):
            if pj.is_file():
                self.inp.present.add("metrics")
                doc = self.inp.own["stages_" + pj.stem] = read_json(self.used(pj))
                self.add("stage_metrics", rows_table(_stage_rows(pj, doc), "stage_metrics", pj))
        for jp in sorted((self.run / "metrics" / "jobs").glob("*.json")):
            if not isinstance(read_json(self.used(jp)), dict):
                raise MetricsError(f"{jp}: expected a JSON object (job metrics)")

    def targets(self) -> None:
        tps = sorted((self.run / "targets").glob("*.json"))
        self.inp.stale += [tp for tp in tps if not self.ours(tp)]
        for tp in (tp for tp in tps if self.ours(tp)):
            doc = read_json(self.used(tp))
            if not isinstance(doc, dict):
                raise MetricsError(f"{tp}: expected a JSON object (target description)")
            self.inp.targets[tp.stem] = doc

    def own_files(self) -> None:
        """What was read of the user's files: index/sources.json (index.source: file) and
        catalog/patch/files.json (catalog.patch.file): each file's path, bytes, CRC-32, rows."""
        for kind, path in (("index", self.run / "index" / "sources.json"),
                           ("patch", self.run / "catalog" / "patch" / "files.json")):
            if path.is_file():
                doc = read_json(self.used(path))
                if not isinstance(doc, dict) or not isinstance(doc.get("files"), list):
                    raise MetricsError(f"{path}: expected a JSON object with the files read")
                self.inp.own[kind] = doc

    def queries(self) -> None:
        for tdir in self.dirs(self.run / "queries"):
            for edir in self.dirs(tdir):
                self.inp.present.add("queries")
                const = {"target": tdir.name, "query_engine": edir.name}
                pp, jp = edir / "results.parquet", edir / "results.json"
                if pp.is_file() or not jp.is_file():
                    self.add("query_runs", parquet_table(self.used(pp), "query_runs", const))
                else:
                    self.add("query_runs", rows_table(json_rows(self.used(jp)), "query_runs", jp, const))
                self._loads(edir / "summary.json", tdir.name, edir.name)
                for name, view in (("chunk_loads", "chunk_load_files"), ("chunk_times", "query_chunk_runs")):
                    if (edir / f"{name}.parquet").is_file():   # per chunk (mysql engine)
                        self.add(view, parquet_table(self.used(edir / f"{name}.parquet"), view,
                                                {"target": tdir.name} if view == "chunk_load_files" else const))

    def _loads(self, sp: Path, target: str, engine: str) -> None:
        """The engine's summary.json ``load``: the chunk tables' load (mysql) and its layout on the
        target, its rows, build seconds and bytes kept (views.LAYOUTS)."""
        load = read_json(self.used(sp)).get("load") if sp.is_file() else None
        if not isinstance(load, dict):
            return
        if isinstance(load.get("chunk_tables"), dict):
            # Loading the chunk tables into a target's server is a storage figure too.
            row = {**load["chunk_tables"], "target": target}
            idx = load.get("secondary_index") or {}
            row.update(index_rows=idx.get("rows"), index_seconds=idx.get("seconds"))
            self.add("chunk_loads", rows_table([row], "chunk_loads", sp))
        layout = LAYOUTS[engine](load) if engine in LAYOUTS else None
        if layout:
            self.add("layout_loads", rows_table([{**layout, "target": target, "query_engine": engine}],
                                                "layout_loads", sp))

    def restarts(self) -> None:
        for tdir in self.dirs(self.run / "restart"):
            # <kind>.json only: summary.json, isolation.json and <kind>.error.json sit beside them.
            for kp in sorted(p for p in tdir.glob("*.json")
                             if p.stem not in ("summary", "isolation") and not p.name.endswith(".error.json")):
                self.inp.present.add("restart")
                rows = [dict(r, phase_order=i) for i, r in enumerate(json_rows(self.used(kp)))]
                self.add("restart_phases",
                         rows_table(rows, "restart_phases", kp, {"target": tdir.name, "kind": kp.stem}))

    def clusters(self) -> None:
        for tdir in self.dirs(self.run / "cluster"):
            # <kind>.json only: summary.json, isolation.json, <kind>.error.json and node logs sit beside them.
            for kp in sorted(p for p in tdir.glob("*.json")
                             if p.stem not in ("summary", "isolation") and not p.name.endswith(".error.json")):
                self.inp.present.add("cluster")
                doc = read_json(self.used(kp))
                rows, load = (doc.get("rows"), doc.get("load", [])) if isinstance(doc, dict) else (None, None)
                if not all(isinstance(x, list) and all(isinstance(r, dict) for r in x) for x in (rows, load)):
                    raise MetricsError(f"{kp}: expected an object with \"rows\" and \"load\" lists of objects "
                                       "(a cluster restart kind)")
                const = {"target": tdir.name, "kind": kp.stem}
                if rows:
                    rows = [dict(r, phase_order=i, failed=doc.get("failed")) for i, r in enumerate(rows)]
                    self.add("cluster_phases", rows_table(rows, "cluster_phases", kp, const))
                if load:
                    self.add("cluster_load", rows_table(load, "cluster_load", kp, const))

    def isolation(self) -> None:
        for stage in MEASURING:
            for ip in sorted(p for p in (self.run / stage).rglob("isolation.json") if self.ours(p.parent)):
                rec = read_json(self.used(ip))
                if not isinstance(rec, dict):
                    raise MetricsError(f"{ip}: expected a JSON object (an isolation record)")
                row = {k: ("; ".join(map(str, v)) or None) if isinstance(v, list) else v
                       for k, v in rec.items() if not isinstance(v, dict)}
                row.update(stage=stage, job=ip.parent.relative_to(self.run).as_posix())
                self.add("isolation", rows_table([row], "isolation", ip))

    def prediction(self) -> None:
        pp = self.run / "predict" / "prediction.json"
        if not pp.is_file():
            return
        doc = read_json(self.used(pp))
        parts = [doc.get(k) if isinstance(doc, dict) else None for k in ("predictions", "validation")]
        if not all(isinstance(x, list) and all(isinstance(r, dict) and isinstance(r.get("key"), dict) for r in x)
                   for x in parts):
            raise MetricsError(f"{pp}: expected an object with \"predictions\" and \"validation\" lists of "
                               "objects with a \"key\" (catbench predict --out)")
        for name, rows in zip(("predictions", "validation"), parts):
            for i, r in enumerate(rows):
                prediction_row(pp, f"{name}[{i}]", r)
        self.inp.prediction = {name: [{**r["key"], **{k: v for k, v in r.items() if k != "key"}} for r in rows]
                               for name, rows in zip(("prediction", "prediction_validation"), parts)}
        self.inp.prediction["prediction_curve"] = curve_rows(pp, doc.get("curve") or [])
        self.inp.prediction["restart_at_scale"] = restart_rows(doc.get("restarts"))
        self.inp.prediction.update(query_tables(pp, doc.get("queries")))


def _stage_rows(pj: Path, doc) -> list:
    """Rows of view stage_metrics from metrics/partition.json."""
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
    return rows


def collect(run_dir, require=(), only=None) -> RunInputs:
    """Read and validate every metrics file of ``run_dir`` (= results/<run>); with ``only`` (the
    files and folders this config's jobs wrote), only those: another config's are left out, logged."""
    run = Path(run_dir)
    if not run.is_dir():
        raise MetricsError(f"{run}: results directory does not exist")
    reader = _Reader(run, only)
    for step in (reader.fio, reader.loads, reader.chunks, reader.metrics, reader.targets, reader.own_files,
                 reader.queries, reader.restarts, reader.clusters, reader.isolation, reader.prediction):
        step()
    inp = reader.inp
    for stage in require:
        if stage not in inp.present:
            where = {"metrics": "metrics/partition.json (or index.json)",
                     "chunks": "chunks/chunks.tsv"}.get(stage, f"{stage}/")
            raise MetricsError(f"{run / where}: required stage '{stage}' has no metrics in this run")
    inp.views = {v: concat(v, reader.parts[v]) for v in VIEWS}
    if inp.stale:
        log.warning(stale_note(inp))
    return inp


def stale_note(inp: RunInputs) -> str | None:
    """One line naming the result folders of another config that were left out (None: none)."""
    names = ", ".join(sorted(p.relative_to(inp.run_dir).as_posix() for p in inp.stale))
    return (f"Left out, not results of this config (an earlier config's, still in {inp.run_dir}): {names}. "
            "Remove them, or give a changed config another run name to keep both.") if names else None
