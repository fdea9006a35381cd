"""The ``lsdb`` engine's query job on one storage target: the HATS collections built there
from the chunk files (``build.py``, timed like the mysql engine's chunk load), the suite run
cold and warm and under the concurrency test with LSDB on the stage's Dask cluster
(``cluster.py``), the same parameters as the other engines (drawn with DuckDB from the same
chunk files), its files written as theirs (``recorder.py``). The collections are removed at the
end unless kept (``--keep-data``); a later run with ``--keep-data`` reuses kept ones that were cut
as it asks and still tally with its chunk files (``build.kept_build``)."""

from __future__ import annotations

import logging
import shutil

import pyarrow as pa
import pyarrow.parquet as pq

from ...core.infra.files import staged_output
from ...core.infra.targets import TargetError, check_target, describe_target
from ..chunk_tables import read_chunk_list
from ..engines import Deadline
from ..params import draw_parameters
from ..query_engines import QueryLocation
from ..recorder import EVICTED, Caches, Recorder, drop_caches, evict, page_cache_held, run_concurrency_of, run_suite
from ..spec import QuerySpec
from ..suite import QueryError, load_suite
from .build import BuildOptions, build_catalogs, chunk_files, kept_build, order_for
from .cluster import dask_cluster
from .engine import LsdbEngine

log = logging.getLogger(__name__)
FOLDER = "catbench-lsdb"


class _Stream:
    """A concurrency stream: the engine's client is shared (Dask's client is thread-safe)."""

    def __init__(self, engine: LsdbEngine):
        self.engine = engine

    def run(self, q, params):
        return self.engine.run(q, params)

    def close(self):
        pass


def _build_options(spec: QuerySpec, chunks) -> BuildOptions:
    """The collections' cut: ``queries.lsdb.pixel_threshold`` (default: the largest chunk's
    Objects, tiles about Qserv's chunks) and ``queries.lsdb.highest_order`` (default: from the
    densest chunk's crowding)."""
    opts = spec.lsdb
    threshold = opts.pixel_threshold or max(c.object_rows for c in chunks)
    order = opts.highest_order
    if order is None:
        area = (180.0 / spec.geometry.num_stripes) ** 2     # a chunk: a stripe's height square
        order = order_for(max(c.source_rows for c in chunks) / area, threshold)
    return BuildOptions(threshold, order, spec.geometry.overlap_deg)


# A tile in memory: its rows, the cross-match's or join's copies of them, the margin's
TILE_COPIES = 4


def tile_bytes(chunks_dir, chunks, rows: int) -> int:
    """What ``rows`` Object rows take in memory (the chunk files' column widths), TILE_COPIES times."""
    schema = pq.read_schema(chunk_files(chunks_dir, chunks, "Object")[0])
    width = sum(max(1, f.type.bit_width // 8) if pa.types.is_primitive(f.type) else 16 for f in schema)
    return TILE_COPIES * rows * width


def _check_memory(spec: QuerySpec, chunks_dir, chunks, build: BuildOptions) -> None:
    """One tile must fit a worker's memory limit, refused before any work naming both keys."""
    need, limit = tile_bytes(chunks_dir, chunks, build.pixel_threshold), spec.lsdb.cluster.memory_bytes
    if need > limit:
        raise QueryError(f"config key 'queries.lsdb.memory': a Dask worker's {limit / 2**20:.0f} MiB cannot hold a "
                         f"tile of {build.pixel_threshold} rows (queries.lsdb.pixel_threshold; {need / 2**20:.0f} MiB "
                         f"with the cross-match's copies): a larger memory or a smaller pixel_threshold")


def _check_tiles(spec: QuerySpec, chunks_dir, chunks, built: dict) -> None:
    """The largest tile built must fit a worker too (a tile at the highest order may pass the threshold)."""
    limit = spec.lsdb.cluster.memory_bytes
    for table, t in built["tables"].items():
        need = tile_bytes(chunks_dir, chunks, t["largest_tile_rows"])
        if need > limit:
            raise QueryError(f"config key 'queries.lsdb.memory': HATS tile {t['largest_tile']} of {table} holds "
                             f"{t['largest_tile_rows']} rows ({need / 2**20:.0f} MiB with the cross-match's copies), "
                             f"past a Dask worker's {limit / 2**20:.0f} MiB: a larger memory, or a higher "
                             f"queries.lsdb.highest_order to split it")


def _check_room(where: QueryLocation, chunks_dir) -> None:
    """Room for the collections (the chunk files' Parquet bytes twice: the tiles, their margins
    and indexes, and hats-import's intermediate files) before anything is written."""
    need = 2 * sum(f.stat().st_size for f in chunks_dir.glob("*/chunk_*.parquet")) + (256 << 20)
    try:
        check_target(where.target, where.path, need_bytes=need)
    except TargetError as exc:
        raise QueryError(str(exc)) from exc


def _remove(root) -> None:
    """Remove ``root`` (its Dask cluster stopped: no worker writes into it any more), naming it if left."""
    shutil.rmtree(root, ignore_errors=True)
    if root.exists():
        log.warning("%s could not be removed: remove it by hand", root)


def run_queries_lsdb(spec: QuerySpec, paths, where: QueryLocation) -> dict:
    """The suite with the lsdb engine on ``where`` (see the module docstring)."""
    deadline = Deadline.of(spec.time_limit_min)
    suite = load_suite()
    chunks_dir = paths.chunks_dir
    chunks = read_chunk_list(chunks_dir)
    build = _build_options(spec, chunks)
    _check_memory(spec, chunks_dir, chunks, build)
    _check_room(where, chunks_dir)
    root = where.path / FOLDER
    with staged_output(paths.out_dir) as work:
        params = spec.params or draw_parameters(spec, chunks_dir, chunks, suite)
        kept = kept_build(root / "hats", chunks_dir, chunks, build) if where.keep_data else None
        shutil.rmtree(root if kept is None else root / "dask", ignore_errors=True)    # what a killed run left
        opts = spec.lsdb.cluster
        try:
            with (page_cache_held(spec.launch.page_cache_hold, f"{where.target}-lsdb", [chunks_dir, root / "hats"],
                                  first="build") as (held, phase), dask_cluster(opts, root / "dask") as cluster):
                built = kept or build_catalogs(chunks_dir, chunks, root / "hats", build, cluster.client)
                phase("queries")      # the build's writes and reads apart from what the queries cache
                _check_tiles(spec, chunks_dir, chunks, built)
                deadline.left(f"target {where.target}: building the HATS catalogs")
                engine = LsdbEngine(root / "hats", cluster, chunks_dir, chunks, spec.lsdb.n_neighbors)
                engine.deadline = deadline
                if {"SHV1", "SHV2"} & set(spec.names):
                    engine.compile_joins(chunks_dir, chunks)
                compiled = engine.alignment_compiles()
                dropped = drop_caches() if spec.cold else False
                rec = Recorder(where.target, "lsdb", suite,
                               ("cluster-restart+drop_caches" if dropped else "cluster-restart-only") if spec.cold
                               else "none")

                def restart():
                    if dropped:
                        drop_caches()
                    engine.restart()

                run_suite(engine, Caches(restart, spec.cold, (lambda: evict([root / "hats"])) if spec.evicted else None),
                          suite, spec.names, params, rec, spec.repeats)
                conc = run_concurrency_of(spec, lambda: _Stream(engine), suite, params, rec)
                # what the timed runs compiled of it (the start's plans leave them nothing)
                compiles = {"at_start": compiled, "in_queries": engine.alignment_compiles() - compiled}
                engine.close()
        finally:
            if not where.keep_data:
                _remove(root)
        import dask
        import lsdb
        summary = {"target": where.target, "query_engine": "lsdb", "cold_method": rec.cold_method, "params": params,
                   "queries": list(spec.names), "repetitions": spec.repetitions, "concurrency": conc,
                   "chunks": len(chunks), "load": {"hats": built},
                   "dask": {"kind": opts.kind, "workers": opts.workers, "threads": opts.threads,
                            "tile_alignment_compiles": compiles,
                            "memory_bytes": opts.memory_bytes, "n_neighbors": engine.neighbors_used},
                   "evicted_method": EVICTED if spec.evicted else None, "page_cache": held,
                   "versions": {"lsdb": lsdb.__version__, "dask": dask.__version__},
                   "storage": describe_target(where.path)}
        rec.write(work, summary)
    return summary
