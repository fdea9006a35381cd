"""The run's scale and expected time, said before any job starts: rows (objects, sources,
index rows) and minutes per stage, from the job-sizing model of core/infra/jobs/requests.py (each
rule's expected seconds at jobs.rows_per_s; a load by its kind, one_load_seconds). A rule's
jobs run side by side on jobs.cpus cores as their threads allow; measuring jobs run one at a
time per node (measure_domain). A run expected to take longer than run_limit_h stops here."""

from __future__ import annotations

import math

from ..config import ConfigError
from ..targets import parse_size
from .requests import MEASURING, START_S, expected_seconds, measure_domain, requests
from .sizing import RunSizes

# A collapsed B-tree load's rate, expected: random ids loaded file by file into InnoDB here
# ran at 8.6-10.5k rows/s once the table outgrew the pool (10^6 rows, 6 MB pool, ext4 disk).
# (jobs.index_rows_per_s is the time limits' slower, safe figure.)
COLLAPSED_ROWS_PER_S = 10_000
# Bytes a row takes in the smaller variant's B-tree (load/estimate.md: 37 B for BIGINT keys
# after a sorted load): a table of more rows than the pool holds at this size outgrows it.
_ROW_BYTES = 37


def collapses(sizes: RunSizes, engine: str) -> bool:
    """A file-by-file load expected to fall to the disk's random reads (prepare/working_set.md):
    an InnoDB table that outgrows its pool, with keys that do not arrive in key order (ids
    not spatial). The others keep a steady rate (measured: MyISAM and MyRocks at 0.1-0.6 M
    rows/s, InnoDB with spatial ids at 0.3-0.4 M rows/s, 10^6 rows on a 6 MB cache)."""
    pool = parse_size(str(sizes.load.settings.get("innodb_buffer_pool_size", "128M")))
    return (engine == "innodb" and sizes.catalog.id_layout != "spatial"
            and sizes.scale.objects * _ROW_BYTES > pool)


def one_load_seconds(sizes: RunSizes, collapsing: bool, time_limit_s: float | None) -> float:
    """Expected seconds of one load job, as measured runs take them (not the time limit's
    allowance, requests.load_seconds): each repetition loads at jobs.rows_per_s (a collapsing
    one at COLLAPSED_ROWS_PER_S, stopped at ``time_limit_s``, the load's: LoadSpec's), checks
    the rows at 5x that, OPTIMIZEs like a sorted load (at most load.optimize_limit_s), looks
    up ~2,000 keys a second and starts and stops its server (~2 s)."""
    rows, rate, load = sizes.scale.objects, sizes.rates.rows_per_s, sizes.load
    loading = rows / (COLLAPSED_ROWS_PER_S if collapsing else rate)
    if collapsing and time_limit_s is not None:
        loading = min(loading, time_limit_s)
    optimize = min(load.optimize_limit_s, rows / rate)
    one = loading + rows / (5 * rate) + optimize + load.lookup_count / 2000 + 2
    limit = load.repetition_limit_s
    return (1 if limit is not None and one > limit else load.repetitions) * one


def load_job_seconds(sizes: RunSizes, loads, time_limit_s: float | None) -> float:
    """Expected seconds of the load jobs ``loads`` ((engine, resumable) per job), a resumable
    one stopped at ``time_limit_s``."""
    return sum(one_load_seconds(sizes, resumable and collapses(sizes, engine), time_limit_s)
               for engine, resumable in loads)


def rung_seconds(sizes: RunSizes, loads, time_limit_s: float | None) -> float:
    """Expected seconds of the predict stage's rungs: the run's loads on the ladder's targets at
    each multiple of its rows, with the ladder's repetitions (the rate, as one_load_seconds
    takes it, the same at every size; collapsing loads slower per row as they grow, which this
    does not count; an LSM's loads, which the rungs leave out, counted: an upper bound)."""
    lad = sizes.ladder
    share = lad.targets / max(1, len(sizes.nodes)) * lad.repetitions / sizes.load.repetitions
    return sum(lad.factors) * share * load_job_seconds(sizes, loads, time_limit_s)


def job_counts(sizes: RunSizes, loads: int) -> dict[str, dict[str, int]]:
    """{stage: {rule: jobs}} of the whole run (rule ``all``) for the run's sizes;
    ``loads``: its load_index_run jobs (targets x variants x the engine/strategy pairs that run)."""
    targets, stages, s = len(sizes.nodes), sizes.stages, sizes.scale
    out: dict[str, dict[str, int]] = {}
    if sizes.index.source == "partition":
        out["catalog"] = {"catalog_patch": 1, "catalog_part": s.parts}
        out["partition"] = {"partition_map": s.map_jobs, "partition_reduce": s.groups,
                            "index_input": 1, "chunk_list": 1}
    elif sizes.index.source == "file":
        out["index"] = {"index_read": 1}
    else:
        out["index"] = {"index_generate_part": sizes.index.jobs, "index_generate": 1}
    if "fio" in stages:
        out["fio"] = {"fio_run": targets}
    if "load_index" in stages:
        out["load_index"] = {"index_working_set": 1, "load_index_run": loads, "load_compare": 1}
    if "queries" in stages:
        q = sizes.queries
        jobs = {"mysql": ("queries_mysql", q.targets), "duckdb": ("queries_duckdb", 1), "lsdb": ("queries_lsdb", q.targets)}
        out["queries"] = {**dict(jobs[e] for e in q.engines), "queries_check": 1}
    if "restart" in stages:
        out["restart"] = {"restart_run": targets}
    if "cluster" in stages:
        out["cluster"] = {"cluster_restart_run": sizes.cluster.targets}
    if "predict" in stages:
        out["predict"] = {"ladder_rung": len(sizes.ladder.factors), "predict_loads": 1}
    out["report"] = {"target_info": targets, "tables": 1, "report_html": 1}
    return out


def plan(sizes: RunSizes, loads: list, *, time_limit_s: float | None) -> dict:
    """Rows, jobs and expected minutes per stage and in total. ``sizes``: sizing.RunSizes.of(config);
    ``loads``: (engine, resumable) of every load job (resumable: a file-by-file strategy);
    ``time_limit_s``: where such a load stops (load/spec.py ``LoadSpec.of(config).time_limit_s``:
    core reads no stage's key)."""
    counts = job_counts(sizes, len(loads))
    seconds, req = expected_seconds(sizes), requests(sizes)
    cpus = sizes.rates.cpus
    nodes = len({measure_domain(sizes, t) for t in sizes.nodes})   # measuring side by side
    minutes = {}
    for stage, rules in counts.items():
        total = 0.0
        for rule, jobs in rules.items():
            side = nodes if rule in MEASURING else max(1, cpus // req[rule].threads)
            work = jobs * START_S + (load_job_seconds(sizes, loads, time_limit_s) if rule == "load_index_run"
                                     else rung_seconds(sizes, loads, time_limit_s) if rule == "ladder_rung"
                                     else jobs * seconds[rule])
            total += math.ceil(jobs / side) * work / max(1, jobs)
        minutes[stage] = total / 60
    objects = sizes.scale.objects
    sources = objects * sizes.catalog.sources_per_object if "catalog" in counts else 0
    return {"objects": objects, "sources": int(sources), "index_rows": objects,
            "jobs": sum(sum(r.values()) for r in counts.values()), "counts": counts,
            "minutes": minutes, "total_minutes": sum(minutes.values()), "limit_h": sizes.run_limit_h,
            "chunks": sizes.chunks if "partition" in counts else None}


def duration(minutes: float) -> str:
    return f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.1f} h"


def lines(p: dict) -> list[str]:
    """The plan for a person: two lines, a third on the chunks' crowding when the catalog is
    partitioned, and a fourth suggesting stripes when a chunk holds more than the bound."""
    stages = ", ".join(f"{s} {duration(m)}" for s, m in p["minutes"].items())
    out = [f"plan: {p['objects']:,} objects, {p['sources']:,} sources, {p['index_rows']:,} index rows; "
           f"{p['jobs']} jobs",
           f"plan: expected ~{duration(p['total_minutes'])} ({stages}; at jobs.rows_per_s, collapsing "
           f"loads at ~{COLLAPSED_ROWS_PER_S:,} rows/s, measuring jobs one at a time); "
           f"limit run_limit_h = {p['limit_h']:g} h"]
    return out + chunk_lines(p.get("chunks"))


def chunk_lines(c) -> list[str]:
    """The densest chunk's Objects, and stripes suggested when they are over partition.auto_chunk_rows."""
    if c is None:
        return []
    out = [f"plan: chunks at {c.stripes} x {c.sub_stripes} stripes: the densest holds ~{c.chunk_rows:,} "
           f"objects (~{c.sub_chunk_rows:,} a sub-chunk) at {c.density:,.0f} objects/deg\u00b2"]
    if c.chunk_rows > c.bound:
        out.append(f"plan: suggestion: a chunk would hold more than partition.auto_chunk_rows = {c.bound:,} "
                   f"objects, so per-chunk queries scan more and the chunks say little about skew; "
                   f"partition.num_stripes: auto and num_sub_stripes_per_stripe: auto pick "
                   f"{c.auto[0]} x {c.auto[1]} for this density")
    return out


# The stages a stage's target rule builds (the index input comes with the loads, queries and
# restarts). `all` and the report build the whole run; a file or a job's rule, only that.
_UP_TO_INDEX = ("catalog", "partition", "index")
TARGET_STAGES = {
    "catalog": ("catalog",), "partition": ("catalog", "partition"), "fio": ("fio",),
    "load_index": (*_UP_TO_INDEX, "load_index"), "queries": (*_UP_TO_INDEX, "queries"),
    "restart": (*_UP_TO_INDEX, "restart"), "cluster": (*_UP_TO_INDEX, "cluster"),
    "predict": (*_UP_TO_INDEX, "fio", "load_index", "predict"),
}
WHOLE_RUN = ("all", "report", "report_html", "tables")


def check_limit(p: dict, targets=None):
    """ConfigError naming run_limit_h when what ``targets`` (Snakemake's command-line targets;
    none: the default rule `all`) build is expected to take longer than the limit."""
    targets = list(targets or ["all"])
    if any(t in WHOLE_RUN for t in targets):
        minutes = p["minutes"]
    else:
        wanted = {s for t in targets for s in TARGET_STAGES.get(t, ())}
        minutes = {s: m for s, m in p["minutes"].items() if s in wanted}
    total = sum(minutes.values())
    if total > 60 * p["limit_h"]:
        longest = sorted(minutes.items(), key=lambda kv: -kv[1])
        stages = ", ".join(f"{s} {duration(m)}" for s, m in longest if m >= 1)
        raise ConfigError(f"config key 'run_limit_h': the run is expected to take ~{total / 60:.1f} h "
                          f"({stages}), over the limit of {p['limit_h']:g} h; raise run_limit_h to run it "
                          f"(e.g. --config run_limit_h={math.ceil(total / 60)}), or make it smaller")
