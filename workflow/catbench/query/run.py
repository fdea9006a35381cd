"""The ``queries`` stage: the DMTR-21 query suite (LV1-3, HV1-3, SHV1-2), cold and warm,
plus a concurrency run, on one storage target (engine ``mysql``) or over the Parquet
chunk files (engine ``duckdb``); then a cross-check that every answer agrees.

mysql: a private server on the target gets the chunk tables (parallel LOAD DATA LOCAL
INFILE), the secondary index and the suite's stored functions; queries run the Qserv
way (executor.MysqlEngine). duckdb: the logical queries over read_parquet (no server).

Parameters (object id, boxes, radii, cuts) come from ``queries.parameters`` in the config
or are drawn with the seed from the data, checked with DuckDB so every query returns
data; the same data and seed give the same parameters on every target and engine.

Output directory (one per target and engine)::

    results.parquet   one row per query run: target, engine, query, cache
                      (cold | warm | concurrent-alone | concurrent-load), run, seconds,
                      result_rows, answer (short text), digest, cold_method
    summary.json      parameters, load times (chunk tables, secondary index), p50/p95/max
                      per query and cache, concurrency result, answers' digests, server
    answers.json      every query's canonical answer (for the cross-check's tolerance)
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..core.server import Server
from ..core.server_tools import SOCKET_PATH_MAX, variables
from .chunk_tables import (
    ChunkInfo,
    chunk_file,
    install_functions,
    load_chunk_tables,
    load_secondary_index,
    read_chunk_list,
)
from .engines import DuckdbEngine, MysqlEngine, udf_path
from .suite import QUERY_NAMES, Answer, QueryError, compare, load_suite

log = logging.getLogger(__name__)

ARCSEC = 1.0 / 3600.0
# Defaults of the ``queries`` config section (the schema may add them; these are the fallback).
DEFAULTS = {
    "repetitions": 3,
    "connections": 4,          # chunk queries in flight per user query (mysql)
    "load_connections": 2,     # parallel LOAD DATA connections for the chunk tables
    "index_variant": "qserv",  # secondary index schema (load_index.VARIANTS)
    "cold": True,              # cold runs: server restart (+ drop_caches when permitted)
    "queries": list(QUERY_NAMES),
    "concurrency": {"streams": 2, "seconds": 10.0, "lv1_interval_s": 0.1},
    "draw": {"max_tries": 50},
    "parameters": {},
}
PARAM_DEFAULTS = {
    "LV3": {"box_deg": 1.0, "z_min": 20.0, "z_max": 23.0, "gr_min": 0.2, "gr_max": 1.0,
            "iz_min": 0.0, "iz_max": 0.4},
    "HV2": {"min_color": 4.0},
    "SHV1": {"box_deg": 2.0},          # radius_deg defaults to the partition overlap
    "SHV2": {"box_deg": 1.0, "radius_deg": 0.5 * ARCSEC},
}
BOX_KEYS = ("ra_min", "ra_max", "dec_min", "dec_max")
RESULT_SCHEMA = pa.schema([
    ("target", pa.string()), ("engine", pa.string()), ("query", pa.string()), ("cache", pa.string()),
    ("run", pa.int32()), ("seconds", pa.float64()), ("result_rows", pa.int64()), ("answer", pa.string()),
    ("digest", pa.string()), ("cold_method", pa.string()),
])


def settings_of(cfg: dict) -> dict:
    """The ``queries`` config section with defaults filled in."""
    q = dict(cfg.get("queries") or {})
    out = {**DEFAULTS, **q}
    out["concurrency"] = {**DEFAULTS["concurrency"], **(q.get("concurrency") or {})}
    out["draw"] = {**DEFAULTS["draw"], **(q.get("draw") or {})}
    out["parameters"] = dict(q.get("parameters") or {})
    unknown = set(out["queries"]) - set(QUERY_NAMES)
    if unknown:
        raise QueryError(f"config key 'queries.queries': unknown queries {sorted(unknown)}; "
                         f"choose from {', '.join(QUERY_NAMES)}")
    return out


# ---- parameters -------------------------------------------------------------------------

def _clamp_box(ra, dec, size) -> dict:
    half = size / 2.0
    ra = min(max(ra, half), 360.0 - half)
    dec = min(max(dec, -90.0 + half), 90.0 - half)
    return {"ra_min": ra - half, "ra_max": ra + half, "dec_min": dec - half, "dec_max": dec + half}


def draw_parameters(cfg: dict, chunks_dir, chunks: list[ChunkInfo], qs: dict | None = None,
                    suite=None, engine: DuckdbEngine | None = None) -> dict:
    """Every query's parameters: the config's ``queries.parameters.<Q>`` where given, else
    drawn with the run seed from the data so that the query returns data (checked with DuckDB).
    Deterministic: same data + seed + config = same parameters."""
    qs = qs or settings_of(cfg)
    suite = suite or load_suite()
    given = {k: dict(v or {}) for k, v in qs["parameters"].items()}
    bad = set(given) - set(QUERY_NAMES)
    if bad:
        raise QueryError(f"config key 'queries.parameters': unknown queries {sorted(bad)}")
    overlap = float(cfg["partition"]["overlap_deg"])
    rng = np.random.default_rng([int(cfg.get("seed", 0)), 3_2013])
    own = engine is None
    engine = engine or DuckdbEngine(chunks_dir, chunks)
    weights_src = np.array([c.source_rows for c in chunks], float)
    weights_obj = np.array([c.object_rows for c in chunks], float)
    tries = int(qs["draw"]["max_tries"])
    out: dict[str, dict] = {}
    try:
        # One object with Sources for LV1 and LV2 (unless given).
        shared_id = None
        for name in ("LV1", "LV2"):
            p = given.get(name, {})
            if "object_id" not in p:
                if shared_id is None:
                    c = chunks[rng.choice(len(chunks), p=weights_src / weights_src.sum())]
                    ids = pq.read_table(chunk_file(chunks_dir, "Source", c.chunk_id, "parquet"),
                                        columns=["objectId"])["objectId"].to_numpy()
                    shared_id = int(ids[rng.integers(len(ids))])
                p = {**p, "object_id": shared_id}
            out[name] = {"object_id": int(p["object_id"])}
        out["HV1"], out["HV3"] = {}, {}
        out["HV2"] = {**PARAM_DEFAULTS["HV2"], **given.get("HV2", {})}
        for name in ("LV3", "SHV1", "SHV2"):
            p = {**PARAM_DEFAULTS[name], **given.get(name, {})}
            if name == "SHV1":
                p.setdefault("radius_deg", overlap)
                if float(p["radius_deg"]) > overlap:
                    raise QueryError(f"config key 'queries.parameters.SHV1.radius_deg': {p['radius_deg']} is "
                                     f"larger than partition.overlap_deg ({overlap}); pairs across sub-chunks "
                                     f"would be missed")
            size = float(p.pop("box_deg"))
            if all(k in p for k in BOX_KEYS):
                out[name] = p
                continue
            if any(k in p for k in BOX_KEYS):
                raise QueryError(f"config key 'queries.parameters.{name}': give all of {', '.join(BOX_KEYS)} "
                                 f"or none (then a box of box_deg is drawn)")
            for attempt in range(tries):
                c = chunks[rng.choice(len(chunks), p=weights_obj / weights_obj.sum())]
                t = pq.read_table(chunk_file(chunks_dir, "Object", c.chunk_id, "parquet"), columns=["ra_PS", "decl_PS"])
                k = int(rng.integers(t.num_rows))
                cand = {**p, **_clamp_box(float(t["ra_PS"][k].as_py()), float(t["decl_PS"][k].as_py()), size)}
                ans = engine.run(suite[name], cand)
                n = ans.rows[0][0] if ans.columns == ["n"] else len(ans.rows)
                if n and n > 0:
                    out[name] = cand
                    log.info("%s: drew box ra %.4f..%.4f dec %.4f..%.4f (%d tries, %s)", name, cand["ra_min"],
                             cand["ra_max"], cand["dec_min"], cand["dec_max"], attempt + 1, ans.summary())
                    break
            else:
                raise QueryError(f"query {name}: no box of {size} deg in {tries} draws returns data; set "
                                 f"queries.parameters.{name} (a box, or looser cuts) in the config")
    finally:
        if own:
            engine.close()
    return {k: {kk: (float(v) if isinstance(v, (float, np.floating)) else v) for kk, v in d.items()}
            for k, d in out.items()}


# ---- running ----------------------------------------------------------------------------

def drop_caches() -> bool:
    """Drop the OS page cache (needs root and a writable /proc/sys); False when refused."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def _stats(xs) -> dict:
    a = np.asarray(xs, float)
    if a.size == 0:
        return {"n": 0, "p50_s": None, "p95_s": None, "max_s": None}
    return {"n": int(a.size), "p50_s": float(np.percentile(a, 50)), "p95_s": float(np.percentile(a, 95)),
            "max_s": float(a.max())}


class Recorder:
    """Collects runs and checks every run of a query returns the first run's answer."""

    def __init__(self, target: str, engine: str, suite: dict, cold_method: str):
        self.target, self.engine, self.suite, self.cold_method = target, engine, suite, cold_method
        self.rows: list[dict] = []
        self.answers: dict[str, Answer] = {}
        self.digests: dict[str, str] = {}
        self._lock = threading.Lock()

    def add(self, query: str, cache: str, run: int, seconds: float, answer: Answer) -> Answer:
        q = self.suite[query]
        canon = answer.canonical(q.order)
        digest = canon.digest()
        with self._lock:
            if query not in self.answers:
                self.answers[query] = canon
                self.digests[query] = digest
            elif digest != self.digests[query]:
                msg = compare(query, self.answers[query], canon, f"{self.engine} first run",
                              f"{self.engine} {cache} run {run}")
                if msg:
                    raise QueryError(f"target {self.target}: {msg}")
            self.rows.append({"target": self.target, "engine": self.engine, "query": query, "cache": cache,
                              "run": run, "seconds": seconds, "result_rows": len(canon.rows),
                              "answer": canon.summary(q.order), "digest": digest,
                              "cold_method": self.cold_method})
        return canon

    def stats(self) -> dict:
        out: dict[str, dict] = {}
        for r in self.rows:
            out.setdefault(r["query"], {}).setdefault(r["cache"], []).append(r["seconds"])
        return {q: {c: _stats(v) for c, v in d.items()} for q, d in out.items()}


def _timed(engine, q, params):
    t0 = time.perf_counter()
    ans = engine.run(q, params)
    return time.perf_counter() - t0, ans


def run_suite(engine, restart, suite: dict, names, params: dict, rec: Recorder, repetitions: int,
              cold: bool) -> None:
    """Cold runs (``restart()`` before each query) then warm runs (after one warm-up)."""
    if cold:
        for rep in range(1, repetitions + 1):
            for n in names:
                restart()
                s, ans = _timed(engine, suite[n], params[n])
                c = rec.add(n, "cold", rep, s, ans)
                log.info("%s %s cold run %d: %.4f s, %s", rec.target, n, rep, s, c.summary(suite[n].order))
    for n in names:
        rec.add(n, "warmup", 0, *_timed(engine, suite[n], params[n]))
        for rep in range(1, repetitions + 1):
            s, ans = _timed(engine, suite[n], params[n])
            c = rec.add(n, "warm", rep, s, ans)
        log.info("%s %s warm: p50 %.4f s, %s", rec.target, n,
                 float(np.median([r["seconds"] for r in rec.rows if r["query"] == n and r["cache"] == "warm"])),
                 c.summary(suite[n].order))
    rec.rows = [r for r in rec.rows if r["cache"] != "warmup"]


def run_concurrency(make_runner, suite: dict, params: dict, rec: Recorder, streams: int, seconds: float,
                    lv1_interval_s: float) -> dict:
    """DMTR-21 3.5: ``streams`` HV2 streams plus one LV1 stream for ``seconds``; LV1 latency
    alone (same duration, before) and under that load. ``make_runner()`` gives an object with
    ``run(query, params)`` and ``close()`` for one stream."""
    if streams <= 0 or seconds <= 0:
        return {"skipped": True}
    lv1, hv2 = suite["LV1"], suite["HV2"]

    def lv1_stream(cache: str, stop: threading.Event, lat: list):
        r = make_runner()
        try:
            k = 0
            while not stop.is_set():
                s, ans = _timed(r, lv1, params["LV1"])
                k += 1
                rec.add("LV1", cache, k, s, ans)
                lat.append(s)
                stop.wait(lv1_interval_s)
        finally:
            r.close()

    def hv2_stream(i: int, deadline: float, lat: list):
        r = make_runner()
        try:
            k = 0
            while time.monotonic() < deadline:
                s, ans = _timed(r, hv2, params["HV2"])
                k += 1
                rec.add("HV2", "concurrent-load", i * 100000 + k, s, ans)
                lat.append(s)
        finally:
            r.close()

    alone: list[float] = []
    stop = threading.Event()
    t = threading.Thread(target=lv1_stream, args=("concurrent-alone", stop, alone))
    t.start()
    time.sleep(seconds)
    stop.set()
    t.join()

    loaded: list[float] = []
    hv2_lat: list[float] = []
    stop = threading.Event()
    deadline = time.monotonic() + seconds
    errors: list[BaseException] = []

    def guard(fn, *a):
        try:
            fn(*a)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            errors.append(exc)
            stop.set()

    ths = [threading.Thread(target=guard, args=(hv2_stream, i + 1, deadline, hv2_lat)) for i in range(streams)]
    t0 = time.monotonic()
    for th in ths:
        th.start()
    lt = threading.Thread(target=guard, args=(lv1_stream, "concurrent-load", stop, loaded))
    lt.start()
    for th in ths:
        th.join()
    stop.set()
    lt.join()
    wall = time.monotonic() - t0
    if errors:
        raise errors[0]
    out = {"streams": streams, "seconds": seconds, "wall_s": wall, "lv1_interval_s": lv1_interval_s,
           "lv1_alone": _stats(alone), "lv1_load": _stats(loaded), "hv2": _stats(hv2_lat)}
    if out["lv1_alone"]["p50_s"] and out["lv1_load"]["p50_s"]:
        out["lv1_slowdown_p50"] = out["lv1_load"]["p50_s"] / out["lv1_alone"]["p50_s"]
    log.info("concurrency: LV1 p50 alone %.4f s, under %d HV2 streams %.4f s; %d HV2 done (p50 %.2f s)",
             out["lv1_alone"]["p50_s"] or 0, streams, out["lv1_load"]["p50_s"] or 0, out["hv2"]["n"],
             out["hv2"]["p50_s"] or 0)
    return out


def _write_outputs(work: Path, rec: Recorder, summary: dict):
    pq.write_table(pa.Table.from_pylist(rec.rows, schema=RESULT_SCHEMA), work / "results.parquet")
    summary["stats"] = rec.stats()
    summary["digests"] = rec.digests
    summary["answers"] = {q: a.summary(rec.suite[q].order) for q, a in rec.answers.items()}
    (work / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    (work / "answers.json").write_text(json.dumps({q: a.to_json() for q, a in rec.answers.items()},
                                                  default=str) + "\n")


def _finish(work: Path, out_dir: Path):
    if out_dir.exists():
        shutil.rmtree(out_dir)
    work.rename(out_dir)


def _cfg_defaults(cfg, repetitions, concurrency, names):
    qs = settings_of(cfg)
    if repetitions is not None:
        qs["repetitions"] = int(repetitions)
    if concurrency is not None:
        qs["concurrency"] = {**qs["concurrency"], **concurrency}
    if names:
        qs["queries"] = list(names)
    return qs


class _DuckStream:
    def __init__(self, engine: DuckdbEngine):
        self.engine, self.cur = engine, engine.cursor()

    def run(self, q, params):
        return self.engine.run(q, params, con=self.cur)

    def close(self):
        self.cur.close()


def run_queries_duckdb(cfg: dict, chunks_dir, out_dir, repetitions: int | None = None,
                       concurrency: dict | None = None, names=None, cold: bool | None = None,
                       target: str = "parquet", params: dict | None = None) -> dict:
    """The suite over the Parquet chunk files with DuckDB (no server)."""
    qs = _cfg_defaults(cfg, repetitions, concurrency, names)
    cold = qs["cold"] if cold is None else cold
    suite = load_suite()
    chunks = read_chunk_list(chunks_dir)
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.partial-", dir=out_dir.parent))
    engine = DuckdbEngine(chunks_dir, chunks)
    try:
        params = params or draw_parameters(cfg, chunks_dir, chunks, qs, suite, engine)
        dropped = drop_caches() if cold else False
        cold_method = "new-connection+drop_caches" if dropped else "new-connection-only"
        rec = Recorder(target, "duckdb", suite, cold_method if cold else "none")

        def restart():
            if dropped:
                drop_caches()
            engine.open()

        run_suite(engine, restart, suite, qs["queries"], params, rec, qs["repetitions"], cold)
        cc = qs["concurrency"]
        conc = (run_concurrency(lambda: _DuckStream(engine), suite, params, rec, int(cc["streams"]),
                                float(cc["seconds"]), float(cc["lv1_interval_s"]))
                if {"LV1", "HV2"} <= set(qs["queries"]) else {"skipped": True})
        import duckdb
        summary = {"target": target, "engine": "duckdb", "cold_method": rec.cold_method, "params": params,
                   "queries": qs["queries"], "repetitions": qs["repetitions"], "concurrency": conc,
                   "chunks": len(chunks), "duckdb_version": duckdb.__version__, "load": None}
        _write_outputs(work, rec, summary)
        _finish(work, out_dir)
        return summary
    finally:
        engine.close()
        shutil.rmtree(work, ignore_errors=True)


def run_queries(cfg: dict, target_name: str, target_path, chunks_dir, index_dir, out_dir,
                settings: dict | None = None, repetitions: int | None = None, concurrency: dict | None = None,
                names=None, cold: bool | None = None, binary: str | None = None, tcp: bool = False,
                keep_data: bool = False, params: dict | None = None, start_timeout: float = 120) -> dict:
    """The suite on one storage target with the mysql engine (see the module docstring)."""
    qs = _cfg_defaults(cfg, repetitions, concurrency, names)
    cold = qs["cold"] if cold is None else cold
    suite = load_suite()
    chunks = read_chunk_list(chunks_dir)
    from ..core.index_input import list_input
    from ..core.targets import TargetError, check_target
    index_files = list_input(index_dir)
    # Room for the chunk tables and the index (InnoDB: ~3x the TSV bytes, as load_index
    # estimates) plus a fresh datadir, checked before the server is initialised: a full
    # target fails here naming it, not half-way through mariadb-install-db.
    input_bytes = sum(f.stat().st_size for f in index_files) + sum(
        f.stat().st_size for f in Path(chunks_dir).glob("*/chunk_*.tsv"))
    try:
        check_target(target_name, target_path, need_bytes=3 * input_bytes + (512 << 20))
    except TargetError as exc:
        raise QueryError(str(exc)) from exc
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    for stale in out_dir.parent.glob(f".{out_dir.name}.partial-*"):
        log.warning("removing %s left by an interrupted run", stale)  # e.g. after a SIGKILL
        shutil.rmtree(stale, ignore_errors=True)
    if params is None:
        params = draw_parameters(cfg, chunks_dir, chunks, qs, suite)
    # A cold run must start with an empty buffer pool: no dump at shutdown, no load at start.
    settings = {"innodb_buffer_pool_dump_at_shutdown": 0, "innodb_buffer_pool_load_at_startup": 0,
                **(settings if settings is not None else (cfg.get("server") or {}).get("settings") or {})}
    basedir = Path(target_path).absolute() / "catbench-queries"
    sock = basedir / "mysqld.sock"
    sock_dir = None
    if len(str(sock).encode()) > SOCKET_PATH_MAX:
        sock_dir = tempfile.mkdtemp(prefix="cbq-", dir="/tmp")
        sock = Path(sock_dir) / "mysqld.sock"
    try:
        srv = Server(target_name, basedir, settings, binary=binary, tcp=tcp, socket_path=sock,
                     start_timeout=start_timeout)
        srv.cleanup_stale()
    except BaseException:
        if sock_dir:
            shutil.rmtree(sock_dir, ignore_errors=True)
        raise
    if basedir.exists():
        shutil.rmtree(basedir)
    # created last: nothing between here and the try below can leave it behind
    work = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.partial-", dir=out_dir.parent))
    engine = None
    try:
        with srv:
            conn = srv.connect()
            server_info = {"binary": srv.binary, "version": srv.version, "settings": srv.settings,
                           "variables": variables(conn)}
            install_functions(conn, udf_path("mysql"))
            conn.close()
            index = load_secondary_index(srv, index_files, qs["index_variant"])
            load = load_chunk_tables(srv, chunks_dir, chunks, int(qs["load_connections"]))
            log.info("target %s: secondary index %d rows in %.2f s; chunk tables %d rows in %.2f s",
                     target_name, index["rows"], index["seconds"], load["rows"], load["seconds"])
            engine = MysqlEngine(srv, chunks, cfg["partition"], int(qs["connections"]))
            dropped = drop_caches() if cold else False
            cold_method = "server-restart+drop_caches" if dropped else "server-restart-only"
            rec = Recorder(target_name, "mysql", suite, cold_method if cold else "none")
            restarts = []

            def restart():
                engine.close_pool()
                stop_s = srv.stop()
                if dropped:
                    drop_caches()
                start_s = srv.start()
                restarts.append({"stop_s": stop_s, "start_s": start_s})
                engine.open()

            run_suite(engine, restart, suite, qs["queries"], params, rec, qs["repetitions"], cold)
            cc = qs["concurrency"]

            def runner():
                return MysqlEngine(srv, chunks, cfg["partition"], int(qs["connections"]))

            conc = (run_concurrency(runner, suite, params, rec, int(cc["streams"]), float(cc["seconds"]),
                                    float(cc["lv1_interval_s"]))
                    if {"LV1", "HV2"} <= set(qs["queries"]) else {"skipped": True})
            engine.close()
            engine = None
        from ..core.targets import describe_target
        summary = {"target": target_name, "engine": "mysql", "cold_method": rec.cold_method, "params": params,
                   "queries": qs["queries"], "repetitions": qs["repetitions"], "connections": qs["connections"],
                   "concurrency": conc, "chunks": len(chunks),
                   "load": {"chunk_tables": load, "secondary_index": index},
                   "restarts": restarts, "server": {**server_info, "timings": dict(srv.timings)},
                   "storage": describe_target(target_path)}
        _write_outputs(work, rec, summary)
        _finish(work, out_dir)
        return summary
    finally:
        if engine is not None:
            engine.close()
        shutil.rmtree(work, ignore_errors=True)
        if sock_dir:
            shutil.rmtree(sock_dir, ignore_errors=True)
        if not keep_data:
            shutil.rmtree(basedir / "data", ignore_errors=True)
            shutil.rmtree(basedir / "tmp", ignore_errors=True)


# ---- cross-check ------------------------------------------------------------------------

def check_answers(inputs, out=None) -> dict:
    """Compare every query's answer across the given output directories (targets and engines).

    Equal digests agree; different digests are compared with the tolerance (a double that
    rounds differently at the 9th digit is not a mismatch). Raises QueryError naming the
    query and both answers on a real mismatch; ``out`` (JSON) is written either way.
    """
    runs = []
    for d in inputs:
        d = Path(d)
        try:
            s = json.loads((d / "summary.json").read_text())
            a = json.loads((d / "answers.json").read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise QueryError(f"{d}: no readable summary.json/answers.json ({exc}); run `catbench queries` first")
        runs.append((f"{s['target']}/{s['engine']}", s, {q: Answer.from_json(v) for q, v in a.items()}))
    if len(runs) < 1:
        raise QueryError("queries-check needs at least one input directory")
    errors, table = [], {}
    ref_name, ref, ref_ans = runs[0]
    for name, s, _ in runs[1:]:
        if s["params"] != ref["params"]:
            errors.append(f"{name} ran with other parameters than {ref_name}: {s['params']} vs {ref['params']}")
    queries = sorted({q for _, _, a in runs for q in a}, key=lambda q: (QUERY_NAMES.index(q) if q in QUERY_NAMES
                                                                         else 99, q))
    for q in queries:
        row = {"digests": {}, "answers": {}, "agree": True}
        base = next(((n, a[q]) for n, _, a in runs if q in a), None)
        for n, s, a in runs:
            if q not in a:
                row["agree"] = False
                errors.append(f"query {q}: {n} has no answer")
                continue
            row["digests"][n] = s["digests"][q]
            row["answers"][n] = s["answers"][q]
            if s["digests"][q] != runs[0][1]["digests"].get(q):
                msg = compare(q, base[1], a[q], base[0], n)
                if msg:
                    row["agree"] = False
                    errors.append(msg)
        table[q] = row
    result = {"ok": not errors, "inputs": [str(Path(d)) for d in inputs], "queries": table, "errors": errors}
    if out:
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    if errors:
        raise QueryError("query answers disagree:\n  " + "\n  ".join(errors))
    return result
