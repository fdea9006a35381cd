"""The ``queries`` stage: the DMTR-21 query suite (LV1-3, HV1-3, SHV1-2), cold and warm,
plus a concurrency run, on one storage target (engine ``mysql``) or over the Parquet
chunk files (engine ``duckdb``); the cross-check of the answers is ``check.py``.

mysql: ``queries.workers`` private servers on the target (``core.server.session``), each its own
datadir, get the chunk tables placed on them (``placement.py``; parallel LOAD DATA LOCAL INFILE)
and the suite's stored functions, the first the secondary index; queries run the Qserv way
(``engines.MysqlEngine``: each chunk query on the worker holding its chunk, merged). duckdb: the logical queries over the
Parquet chunk files (no server). Parameters: ``params.py``; runs and files: ``recorder.py``.

Output directory (one per target and engine, written by ``core.infra.files.staged_output``)::

    results.parquet   one row per query run: target, query_engine, query, cache
                      (cold | warm | concurrent-alone | concurrent-load), run, seconds,
                      result_rows, answer (short text), digest, cold_method
    summary.json      parameters, load times (chunk tables, secondary index), p50/p95/max
                      per query and cache, concurrency result, answers' digests, server
    answers.json      every query's canonical answer (for the cross-check's tolerance)
"""

from __future__ import annotations

import logging
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from ..core.index.input import list_input
from ..core.index.table import DATABASE as INDEX_DATABASE
from ..core.index.table import get_variant
from ..core.infra.files import dir_bytes, staged_output
from ..core.infra.targets import TargetError, check_target, describe_target
from ..core.server.session import Datadir, private_server
from ..core.server.status import variables
from .chunk_tables import (
    DATABASE,
    install_functions,
    load_chunk_tables,
    load_secondary_index,
    read_chunk_list,
)
from .engines import Deadline, DuckdbEngine, MysqlEngine, udf_path
from .params import draw_parameters
from .placement import held_by, place
from .query_engines import QueryLocation
from .recorder import (EVICTED, Caches, Recorder, drop_caches, evict, page_cache_held, run_concurrency_of, run_suite,
                       write_chunk_loads)
from .spec import QuerySpec
from .suite import QueryError, load_suite

log = logging.getLogger(__name__)

# A cold run must start with an empty buffer pool: no dump at shutdown, no load at start.
COLD_SERVER_SETTINGS = {"innodb_buffer_pool_dump_at_shutdown": 0, "innodb_buffer_pool_load_at_startup": 0}


class _DuckStream:
    """One concurrency stream of the duckdb engine: its own cursor."""

    def __init__(self, engine: DuckdbEngine):
        self.engine, self.cur = engine, engine.cursor()

    def run(self, q, params):
        return self.engine.run(q, params, con=self.cur)

    def close(self):
        self.cur.close()


@dataclass(frozen=True)
class QueryPaths:
    """A query job's files: the chunks (chunks.tsv and the chunk files), the index input, its output."""
    chunks_dir: Path
    index_dir: Path | None
    out_dir: Path


def run_queries_duckdb(spec: QuerySpec, paths: QueryPaths, where: QueryLocation, engine_class=DuckdbEngine) -> dict:
    """The suite over the Parquet chunk files with DuckDB (no server); ``engine_class``: a
    query engine built on :class:`DuckdbEngine`, its ``name`` the summary's."""
    import duckdb

    deadline = Deadline.of(spec.time_limit_min)
    target, name = where.target, engine_class.name
    cold, params = spec.cold, spec.params
    chunks_dir, out_dir = paths.chunks_dir, paths.out_dir
    suite = load_suite()
    chunks = read_chunk_list(chunks_dir)
    # DuckDB sizes its memory from the cgroup it starts in; a held page cache's is not the job's memory
    memory = (duckdb.sql("SELECT current_setting('memory_limit')").fetchall()[0][0] if spec.launch.page_cache_hold
              else None)
    with staged_output(out_dir) as work:
        with page_cache_held(spec.launch.page_cache_hold, f"{target}-{name}", [chunks_dir]) as (held, _):
            engine = engine_class(chunks_dir, chunks, memory_limit=memory)
            engine.deadline = deadline
            try:
                params = params or draw_parameters(spec, chunks_dir, chunks, suite, engine)
                dropped = drop_caches() if cold else False
                cold_method = "new-connection+drop_caches" if dropped else "new-connection-only"
                rec = Recorder(target, name, suite, cold_method if cold else "none")

                def restart():
                    if dropped:
                        drop_caches()
                    engine.open()

                run_suite(engine, Caches(restart, cold, (lambda: evict(engine.files())) if spec.evicted else None),
                          suite, spec.names, params, rec, spec.repeats)
                conc = run_concurrency_of(spec, lambda: _DuckStream(engine), suite, params, rec)
            finally:
                engine.close()
        summary = {"target": target, "query_engine": name, "cold_method": rec.cold_method, "params": params,
                   "queries": list(spec.names), "repetitions": spec.repetitions, "concurrency": conc,
                   "chunks": len(chunks), "duckdb_version": duckdb.__version__, "load": {"parquet": engine.layout()},
                   "evicted_method": EVICTED if spec.evicted else None, "page_cache": held}
        rec.write(work, summary)
    return summary


def _check_room(target_name: str, target_path, chunks_dir, index_files: list[Path]) -> None:
    """Room for the chunk tables and the index (InnoDB: ~3x the TSV bytes, as load_index
    estimates) plus a fresh datadir, checked before the server is initialised: a full
    target fails here naming it, not half-way through mariadb-install-db."""
    input_bytes = sum(f.stat().st_size for f in index_files) + sum(
        f.stat().st_size for f in Path(chunks_dir).glob("*/chunk_*.tsv"))
    try:
        check_target(target_name, target_path, need_bytes=3 * input_bytes + (512 << 20))
    except TargetError as exc:
        raise QueryError(str(exc)) from exc


@dataclass(frozen=True)
class _Filled:
    """Filled servers: the first's provenance and the loads' figures (summary.json's ``load``)."""
    server: dict            # binary, version, settings, variables
    chunk_tables: dict      # chunk_tables.load_chunk_tables' figures over every worker (trace included)
    secondary_index: dict
    workers: list           # each worker's chunks, rows, bytes and seconds


def _sum_loads(loads: list[dict]) -> dict:
    """The workers' chunk-table loads as one (they load one after another): counts and seconds
    summed, each worker's own beside them."""
    total = {k: sum(d[k] for d in loads) for k in ("chunks", "files", "rows", "bytes", "create_s", "load_s", "seconds")}
    total.update(connections=loads[0]["connections"], trace=[t for d in loads for t in d["trace"]],
                 rows_per_s=total["rows"] / total["load_s"] if total["load_s"] > 0 else None,
                 rows_by_table={k: sum(d["rows_by_table"][k] for d in loads) for k in loads[0]["rows_by_table"]})
    return total


def _fill_servers(servers: list, chunks_dir, chunks, placement: dict, index_files: list[Path],
                  spec: QuerySpec) -> _Filled:
    """Stored functions on every worker, the secondary index on the first (the czar's), each
    worker's chunk tables on it; returns the first's provenance and the load times."""
    for srv in servers:
        conn = srv.connect()
        try:
            if srv is servers[0]:
                server_info = {"binary": srv.binary, "version": srv.version, "settings": srv.settings,
                               "variables": variables(conn)}
            install_functions(conn, udf_path("mysql"))
        finally:
            conn.close()
    index = load_secondary_index(servers[0], index_files, spec.index_variant)
    loads = [load_chunk_tables(srv, chunks_dir, [c for c in chunks if c.chunk_id in held_by(placement, k)],
                               spec.load_connections) for k, srv in enumerate(servers)]
    load = _sum_loads(loads)
    # what this layout keeps on the target: the tablespaces' files, beside the other engines' layouts
    load["stored_bytes"] = sum(dir_bytes(srv.datadir / DATABASE) for srv in servers)
    index["stored_bytes"] = dir_bytes(servers[0].datadir / INDEX_DATABASE)
    log.info("target %s: secondary index %d rows in %.2f s; chunk tables %d rows in %.2f s on %d worker(s)",
             servers[0].name, index["rows"], index["seconds"], load["rows"], load["seconds"], len(servers))
    return _Filled(server_info, load, index,
                   [{k: d[k] for k in ("chunks", "rows", "bytes", "seconds")} for d in loads])


@dataclass(frozen=True)
class _Workers:
    """The servers a query job runs on and where its chunks are (``queries.workers``)."""
    servers: list
    placement: dict[int, int]

    def restart(self, dropped: bool) -> dict:
        """Every worker stopped, the page cache dropped (when it could be), every worker started;
        the seconds summed over the workers, which stop and start one after another."""
        stop_s = sum(srv.stop() for srv in self.servers)
        if dropped:
            drop_caches()
        return {"stop_s": stop_s, "start_s": sum(srv.start() for srv in self.servers)}


def _measure_on_server(workers: _Workers, spec: QuerySpec, suite: dict, chunks, params: dict,
                       deadline: Deadline) -> dict:
    """Cold runs (the servers restarted before each query), warm runs and the concurrency run,
    each query stopped at the stage's ``deadline``."""
    variant = get_variant(spec.index_variant)
    cold = spec.cold

    def engine_of():
        return MysqlEngine(workers.servers, chunks, spec.geometry, spec.connections, index_variant=variant,
                           placement=workers.placement)

    engine = engine_of()
    engine.deadline = deadline
    try:
        dropped = drop_caches() if cold else False
        cold_method = "server-restart+drop_caches" if dropped else "server-restart-only"
        rec = Recorder(workers.servers[0].name, "mysql", suite, cold_method if cold else "none")
        restarts = []

        def restart():
            engine.close_pool()
            restarts.append(workers.restart(dropped))
            engine.open()

        run_suite(engine, Caches(restart, cold), suite, spec.names, params, rec, spec.repeats)
        conc = run_concurrency_of(spec, engine_of, suite, params, rec)
    finally:
        engine.close()
    return {"recorder": rec, "concurrency": conc, "restarts": restarts}


def _server_name(worker: int, workers: int) -> str:
    return "queries" if workers == 1 else f"queries-w{worker}"


def run_queries(spec: QuerySpec, paths: QueryPaths, where: QueryLocation) -> dict:
    """The suite on one storage target with the mysql engine (see the module docstring)."""
    deadline = Deadline.of(spec.time_limit_min)
    params = spec.params
    target_name, target_path = where.target, where.path
    chunks_dir, index_dir, out_dir = paths.chunks_dir, paths.index_dir, paths.out_dir
    suite = load_suite()
    chunks = read_chunk_list(chunks_dir)
    placement = place([c.chunk_id for c in chunks], spec.workers)
    index_files = list_input(index_dir)
    _check_room(target_name, target_path, chunks_dir, index_files)
    with staged_output(out_dir) as work:
        if params is None:
            params = draw_parameters(spec, chunks_dir, chunks, suite)
        settings = {**COLD_SERVER_SETTINGS, **spec.settings}
        with ExitStack() as stack:      # every worker stopped on every way out
            servers = [stack.enter_context(private_server(
                target_name, target_path, _server_name(k, spec.workers), settings, launch=spec.launch,
                data=Datadir(keep=where.keep_data))) for k in range(spec.workers)]
            filled = _fill_servers(servers, chunks_dir, chunks, placement, index_files, spec)
            trace = filled.chunk_tables.pop("trace")
            deadline.left(f"target {target_name}: loading the chunk tables and the secondary index")
            runs = _measure_on_server(_Workers(servers, placement), spec, suite, chunks, params, deadline)
        rec = runs["recorder"]
        summary = {"target": target_name, "query_engine": "mysql", "cold_method": rec.cold_method, "params": params,
                   "queries": list(spec.names), "repetitions": spec.repetitions, "connections": spec.connections,
                   "workers": spec.workers, "concurrency": runs["concurrency"], "chunks": len(chunks),
                   "load": {"chunk_tables": filled.chunk_tables, "secondary_index": filled.secondary_index,
                            "workers": filled.workers},
                   "restarts": runs["restarts"], "server": {**filled.server, "timings": dict(servers[0].timings)},
                   "storage": describe_target(target_path)}
        rec.write(work, summary)
        write_chunk_loads(work, target_name, trace)
    return summary
