"""Every rule's request — threads, memory (MiB), time limit (minutes) — from the config
alone (as ``sizing.RunSizes`` holds it), never from the machine that parses the workflow:
the ONE place the rules (through ``cli/workflow/dag.py``), the SLURM profile and the limit
check read.

Time limits are the job's work at the config's scale divided by deliberately slow rates
(``jobs.rows_per_s`` for reading, writing and scanning catalog rows, ``jobs.index_rows_per_s``
for inserting index rows into a server) plus a fixed allowance for start-up. Each number
keeps the config key that sizes it, so a request that does not fit a cluster names the
key to edit.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ..targets import settings_mb
from .sizing import Chunks, QueryWork, RestartWork, RunSizes

# Start-up and wind-down of any job: imports, a private server's start, checksums.
BASE_S = 300
# What that start-up is expected to take (BASE_S is a time limit's allowance for it):
# Snakemake's job start and the command's imports, 2-3 s measured.
START_S = 3
# Rules that measure a target (or the engine under test): they run alone (see measure_domain).
MEASURING = ("fio_run", "load_index_run", "queries_mysql", "queries_duckdb", "queries_lsdb", "restart_run", "cluster_restart_run",
             "ladder_rung")
# Aggregations of small result files: they run where Snakemake runs (its localrules), not as a
# cluster job each, and hold every measure domain while they run: a measuring job never meets
# one, even where Snakemake runs on a node it measures (a one-node Slurm, a workstation).
LOCAL = ("load_compare", "queries_check", "tables", "report_html")
# Rules that are not measuring but use jobs.cpus worker processes or threads (a map job
# shares them with the other map jobs: _map_threads).
PARALLEL = ("index_generate_part", "partition_map", "index_read")
# Queries that scan every chunk table; the others touch a few chunks.
SCANNING_QUERIES = ("HV1", "HV2", "HV3", "SHV1", "SHV2")
_ROW_BYTES_BASE = 16          # 8-byte columns of an Object row besides the fillers
CLIENT_MB = 1500              # a loader or restart client beside its server


@dataclass
class Request:
    """One rule's request; ``keys`` names the config key behind each number."""
    threads: int
    mem_mb: int
    runtime: int
    keys: dict = field(default_factory=dict)
    measuring: bool = False      # holds its node's measure domain: no other measuring job beside it
    whole_node: bool = False     # takes its node's CPUs (Slurm --exclusive; every core of a local run)
    beside: int = 0              # CPUs of the jobs it submits to its own node (a SLURMCluster's workers)
    local: bool = False          # runs where Snakemake runs (LOCAL)

    def as_dict(self) -> dict:
        return {"threads": self.threads, "mem_mb": self.mem_mb, "runtime": self.runtime}


def _minutes(seconds: float) -> int:
    return max(1, math.ceil((BASE_S + seconds) / 60))


def _mem(sizes: RunSizes) -> dict:
    """Memory per job: a catalog part or chunk group, never the whole catalog; a server's
    buffer pool plus its client."""
    cat = sizes.catalog
    row_bytes = 8 * (_ROW_BYTES_BASE + cat.filler_columns)
    return {
        "part": 500 + 6 * row_bytes * cat.max_objects_per_part * (1 + cat.sources_per_object) // 2**20,
        "group": 500 + 4 * row_bytes * cat.max_rows_per_group // 2**20,
        # index generation: the job and each worker (jobs.cpus) hold the patch (with its Sources)
        # and one copy's rows as columns and text
        "index": (1 + sizes.rates.cpus) * (
            200 + 3 * row_bytes * cat.patch_objects * (1 + cat.sources_per_object) // 2**20),
        "server": server_job_mb(sizes.server_settings),
        "load": server_job_mb(sizes.load.settings),
        "restart": server_job_mb(sizes.restart.settings),
        # a Galera cluster: every node's buffers (cluster.settings over server.settings, 128M
        # pool when unset) and its gcache pages, beside one client
        "cluster": CLIENT_MB + sizes.cluster.nodes * (64 + (settings_mb(sizes.cluster.settings) or 128)),
    }


def server_job_mb(settings: dict) -> int:
    """Memory of a job running a private server with ``settings``: the server's buffers
    plus its client (loader, lookups, query threads)."""
    return CLIENT_MB + settings_mb(settings)


# Near-neighbour pairs a second (SHV1 on MySQL, 2 cores: ~1.4e9 pairs of a 300k-object,
# 150k objects/deg² sky at 85 x 12 stripes in 40-58 s a run).
NEAR_PAIRS_PER_S = 25e6
# MySQL's distance tests a second in SHV1's sub-chunk join (2 cores: 1.7e8 tests, 119,271
# Objects each against ~1,400 of its sub-chunk and overlap, in 310-325 s a cold run).
SHV1_TESTS_PER_S = 0.5e6
SHV1_BOX_DEG2 = 4.0     # DMTR-21's SHV1 box, 2 deg on a side, before it shrinks to the density


def _crowding_seconds(name: str, chunks: Chunks, rate: float, q: QueryWork, rows: int) -> float:
    """What a query costs more on a crowded sky: a query of a box reads the densest chunk's
    rows (per-chunk dispatch); SHV1 tests each Object of its drawn box against its sub-chunk and
    that sub-chunk's overlap (as many as ``queries.draw.target_tests`` at most), or, with a box
    given, each Object of the densest chunk against its sub-chunk's."""
    if name in ("HV1", "HV2", "HV3", "LV1", "LV2"):
        return 0.0
    near = 0.0
    if name == "SHV1" and q.shv1_tests:
        side = 180.0 / (chunks.stripes * chunks.sub_stripes) + 2.0 * chunks.overlap_deg
        box = min(rows, q.shv1_rows, chunks.density * SHV1_BOX_DEG2)
        near = min(box * chunks.density * side ** 2, q.shv1_tests) / SHV1_TESTS_PER_S
    elif name == "SHV1":
        near = chunks.chunk_rows * chunks.sub_chunk_rows / NEAR_PAIRS_PER_S
    return chunks.chunk_rows / (5 * rate) + near


def _query_seconds(q: QueryWork, rows: int, rate: float, chunks: Chunks) -> float:
    # warm runs may adapt up to queries.max_repetitions (core/infra/jobs/repeat.py)
    runs = max(q.repetitions, q.max_repetitions or 0) + (q.repetitions if q.cold else 0)
    scans = sum(1 for name in q.queries if name in SCANNING_QUERIES)
    others = len(q.queries) - scans
    streams = 2 * q.stream_seconds if q.streams else 0
    crowding = sum(5 * _crowding_seconds(name, chunks, rate, q, rows) for name in q.queries)
    return runs * (scans * (rows / rate + 10) + others * 10 + crowding) + streams


def _runtimes(sizes: RunSizes) -> dict:
    """Seconds of work per rule (before BASE_S), with the key that sizes it."""
    s, j = sizes.scale, sizes.rates
    rate, irate = j.rows_per_s, j.index_rows_per_s
    fio, rs, cl = sizes.fio, sizes.restart, sizes.cluster
    index_load = s.objects / irate
    restart_runs, crash_loads = _restarts(rs)
    r, ir = "jobs.rows_per_s", "jobs.index_rows_per_s"
    chunk_order = sizes.index.order != "generation"
    suite = _query_seconds(sizes.queries, s.rows, rate, sizes.chunks)
    return {
        "catalog_patch": (s.patch_rows / rate, r),
        "catalog_part": (s.part_rows / rate, r),
        "partition_map": (s.map_rows / rate, r),
        "partition_reduce": (2 * s.group_rows / rate, r),
        "index_input": ((2 + 2 * chunk_order) * s.objects / rate, r),
        # index.source generate: a job's share of the rows, both variants, over its workers
        "index_generate_part": (2 * s.objects / sizes.index.jobs / rate, r),
        "index_generate": (2 * chunk_order * s.objects / rate, r),   # index.order chunk: read, sort, write
        # index.source file: read and check every row, its uniqueness and (chunk order) a sort, then write
        "index_read": ((3 + chunk_order) * s.objects / rate, r),
        "index_working_set": (0, r),
        "chunk_list": (0, r),
        "target_info": (0, r),
        # four tests of runtime_s (each repeated), each file laid out first at (slowly) 20 MB/s
        "fio_run": (4 * max(fio.repetitions, fio.max_repetitions or 0)
                    * (fio.runtime_s + fio.size / 20e6), "fio.runtime_s"),
        "load_index_run": (load_seconds(sizes), ir),
        "queries_mysql": (index_load + s.rows / rate + suite, r),
        "queries_duckdb": (suite, r),
        # hats-import's catalog, margin and index: at a 400th of jobs.rows_per_s (a 100th measured)
        "queries_lsdb": (400 * s.rows / rate + _lsdb_cold_seconds(sizes.queries) + suite, r),
        "load_compare": (0, r),
        "queries_check": (0, r),
        "restart_run": ((1 + crash_loads) * index_load + restart_runs * (rs.warm_timeout_s + 60), ir),
        # formation, a replicated load (twice a single server's), then per restart the load
        # windows, a node start and a full copy at (slowly) 5 MB/s
        "cluster_restart_run": (120 + 2 * index_load + cl.repetitions * len(cl.kinds) * (
            cl.load_window_s + 120 + 250 * s.objects / 5e6), ir),
        "tables": (0, r),
        "report_html": (0, r),
        # the largest rung: its loads at that multiple of the rows, one after the other
        "ladder_rung": (_rung_seconds(sizes), ir),
        "predict_loads": (60, r),
    }


def _rung_seconds(sizes: RunSizes) -> float:
    """The predict stage's largest rung: its loads at that multiple of the rows, one after the other."""
    lad = sizes.ladder
    return max(lad.factors) * lad.targets * lad.loads * lad.repetitions * load_seconds(sizes) / sizes.load.repetitions


def _restarts(rs: RestartWork) -> tuple[int, int]:
    """A restart job's restarts, and its index loads beyond the first: one more per
    crash-during-load (killed, then resumed)."""
    return (rs.repetitions * (len(rs.kinds) + len(rs.buffer_pool_dump) - 1),
            rs.repetitions * ("crash-during-load" in rs.kinds))


def load_seconds(sizes: RunSizes) -> float:
    """A load_index_run job's time limit allowance: its repetitions, each loading the index at
    jobs.index_rows_per_s, reading the input twice, OPTIMIZE and the lookups (what a run is
    expected to take instead: core/infra/jobs/plan.py one_load_seconds)."""
    s, j, load = sizes.scale, sizes.rates, sizes.load
    one_load = s.objects / j.index_rows_per_s + 2 * s.objects / j.rows_per_s + load.optimize_limit_s + (
        load.lookup_seconds or load.lookup_count / 100)
    # a load repeats (load.repetitions) unless one repetition outlasts load.repetition_limit_s
    limit = load.repetition_limit_s
    return (1 if limit is not None and one_load > limit else load.repetitions) * one_load


def _expected_query_seconds(q: QueryWork, rows: int, rate: float, chunks: Chunks) -> float:
    """A query suite as expected, not allowed (measured on 2 cores: ~0.1 s a query, a scan
    at ~5x jobs.rows_per_s, a cold run's server restart ~1 s, more on a crowded sky:
    _crowding_seconds), warm runs adapting up to queries.max_repetitions within
    queries.budget_s a query."""
    total = 2 * q.stream_seconds if q.streams else 0
    for name in q.queries:
        one = 0.1 + (rows / (5 * rate) if name in SCANNING_QUERIES else 0) + _crowding_seconds(name, chunks, rate, q, rows)
        more = max(q.repetitions, q.max_repetitions or 0) * one
        total += (q.repetitions * (one + 1) if q.cold else 0) + max(
            q.repetitions * one, min(more, q.budget_s or more))
    return total


def expected_seconds(sizes: RunSizes) -> dict[str, float]:
    """Seconds of work of one job of each rule at the config's scale, as expected (START_S
    more per job for its start): what core/infra/jobs/plan.py adds up before a run, from rates
    measured on 2 cores rather than the time limits' allowances. The loads are plan's own."""
    out = {rule: seconds for rule, (seconds, _) in _runtimes(sizes).items()}
    s, rate, fio, index = sizes.scale, sizes.rates.rows_per_s, sizes.fio, sizes.index
    # measured at 10^8 rows on 2 cores: generation 4 M rows/s, the chunk-order sort 1.4 M rows/s
    out["index_generate_part"] = s.objects / index.jobs / (10 * rate)
    out["index_generate"] = (index.order != "generation") * s.objects / (5 * rate)
    out["index_read"] = (2 + (index.order != "generation")) * s.objects / (5 * rate)
    # fio lays out its files at disk speed (~200 MB/s and up), not the allowance's 20 MB/s
    out["fio_run"] = 4 * max(fio.repetitions, fio.max_repetitions or 0) * (fio.runtime_s + fio.size / 200e6)
    # a restart run is over in ~2 s once the server answers (measured); its allowance is the warm timeout
    runs, crash_loads = _restarts(sizes.restart)
    out["restart_run"] = (1 + crash_loads) * s.objects / rate + runs * 2
    suite = _expected_query_seconds(sizes.queries, s.rows, rate, sizes.chunks)
    # the director index (a sorted load) and the chunk tables (~rate / 3 rows/s) before the suite
    out["queries_mysql"] = s.objects / rate + 3 * s.rows / rate + suite
    out["queries_duckdb"] = suite
    # measured (a 150,000-Object survey patch, 2 cores): hats-import ~1,600 rows/s a table with its
    # margin and index, ~95 s each, ~40 s of its Dask stages on a tiny catalog; a cold run's new cluster ~7 s
    out["queries_lsdb"] = 40 + 100 * s.rows / rate + _lsdb_cold_seconds(sizes.queries) + suite
    # measured at the bench's 4.76 M rows: the replicated load at ~rate, a node back in 3-20 s,
    # an SST at ~25 MB/s after the donor's 10 s sleep (232 s a target against 370 s here)
    cl = sizes.cluster
    out["cluster_restart_run"] = 10 + 2 * s.objects / rate + cl.repetitions * len(cl.kinds) * (
        cl.load_window_s + 20 + 250 * s.objects / 50e6)
    del out["load_index_run"]   # by each load's kind: plan.load_job_seconds
    return out


def _lsdb_cold_seconds(q: QueryWork) -> float:
    """The lsdb engine's cold runs: each starts a new Dask cluster (~7 s on 2 cores)."""
    return 8.0 * q.repetitions * len(q.queries) if q.cold else 0.0


def _map_threads(sizes: RunSizes) -> int:
    """Threads of each map job: jobs.cpus shared among the map jobs. One map job (a
    catalog under partition.max_rows_per_map rows) maps jobs.cpus parts at once; more run
    side by side on one thread each."""
    return max(1, sizes.rates.cpus // sizes.scale.map_jobs)


def requests(sizes: RunSizes) -> dict[str, Request]:
    """{rule: Request} for every rule that runs a job, from the run's sizes (sizing.RunSizes)."""
    mem, cpus = _mem(sizes), sizes.rates.cpus
    map_threads = _map_threads(sizes)
    server_key = "server.settings.innodb_buffer_pool_size"
    # index.order chunk: DuckDB's sort of the index input beside the job's own memory
    sort_mb = sizes.index.sort_bytes // 2**20 if sizes.index.order == "chunk" else 0
    mem_of = {
        "catalog_patch": (mem["part"], "catalog.max_objects_per_part"),
        "catalog_part": (mem["part"], "catalog.max_objects_per_part"),
        "partition_map": (500 + map_threads * (mem["part"] - 500), "catalog.max_objects_per_part"),
        "partition_reduce": (mem["group"], "partition.max_rows_per_group"),
        "index_input": (mem["part"] + sort_mb, "catalog.max_objects_per_part"),
        "index_generate_part": (mem["index"], "catalog.patch.objects"),
        "index_generate": (500 + sort_mb, "index.sort_memory" if sort_mb else None),
        # a batch of index.file.batch_rows rows (columns, located, text: ~100 B a row) and DuckDB's memory
        "index_read": (500 + 100 * sizes.index.batch_rows // 2**20
                       + sizes.index.sort_bytes // 2**20, "index.sort_memory"),
        "index_working_set": (1500, None),
        "chunk_list": (1000, None),
        "target_info": (500, None),
        "fio_run": (1000, None),
        "load_index_run": (mem["load"], server_key),
        "queries_mysql": (mem["server"] * sizes.queries.workers, server_key),   # each worker its own server
        "queries_duckdb": (4000, None),
        "queries_lsdb": (4000, None),     # the Dask workers' share it (queries.lsdb.memory)
        "load_compare": (500, None),
        "queries_check": (1000, None),
        "restart_run": (mem["restart"], "restart.settings.innodb_buffer_pool_size"),
        "cluster_restart_run": (mem["cluster"], "cluster.nodes"),
        "tables": (2000, None),
        "report_html": (2000, None),
        # a rung's Snakemake beside its loads' own servers and clients
        "ladder_rung": (1000 + mem["load"] * max(sizes.ladder.factors), server_key),
        "predict_loads": (2000, None),
    }
    out = {}
    for rule, (seconds, runtime_key) in _runtimes(sizes).items():
        # an lsdb job whose Dask workers are Slurm jobs of their own is their client: the worker
        # jobs take the node's CPUs, which this job would hold were it exclusive; it still holds the
        # node's measure domain, or the run's next measuring job would queue for the node ahead of
        # the worker jobs (and measure beside them)
        client = rule == "queries_lsdb" and sizes.queries.lsdb_jobs
        measuring = rule in MEASURING
        whole = measuring and not client
        mb, mem_key = mem_of[rule]
        many = whole or rule in PARALLEL
        threads = (map_threads if rule == "partition_map" else cpus) if many else 1
        out[rule] = Request(threads=threads, mem_mb=int(mb), runtime=_minutes(seconds),
                            measuring=measuring, whole_node=whole, beside=cpus if client else 0,
                            local=rule in LOCAL,
                            keys={"threads": "jobs.cpus" if many else None,
                                  "mem_mb": mem_key, "runtime": runtime_key})
    return out


def measure_domain(sizes: RunSizes, target: str | None) -> str:
    """The resource a measuring job holds alone: its target's node when the config names
    one (targets.<t>.node), else the host that runs the unpinned jobs. Two measuring jobs
    never share a node, nor a disk of it."""
    node = sizes.nodes[target] if target else None
    return "measure_node_" + re.sub(r"\W", "_", node) if node else "measure_host"


def measure_domains(sizes: RunSizes) -> list[str]:
    """Every measure_domain() of the run (each a resource with capacity 1)."""
    return sorted({measure_domain(sizes, None), *(measure_domain(sizes, t) for t in sizes.nodes)})
