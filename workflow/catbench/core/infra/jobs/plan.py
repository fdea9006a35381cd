"""The run's scale and expected time, said before any job starts: rows (objects, sources,
index rows) and minutes per stage, from the job-sizing model of core/infra/jobs/requests.py (each
rule's expected seconds at jobs.rows_per_s; a load by its kind, one_load_seconds). A rule's
jobs run side by side on jobs.cpus cores as their threads allow; measuring jobs run one at a
time per node (measure_domain). A run expected to take longer than run_limit_h stops here."""

from __future__ import annotations

import math

from ...sky.copies import map_batches, part_copies
from ..config import ConfigError, estimated_objects, n_groups, stage_targets
from ..targets import parse_size
from .requests import MEASURING, START_S, expected_seconds, measure_domain, requests

# A collapsed B-tree load's rate, expected: the 2017 study's load fell to under 200 files of
# ~94k rows per 30 min (~10k rows/s) once its table outgrew the pool, and random ids loaded
# file by file into InnoDB here ran at 8.6-10.5k rows/s (10^6 rows, 6 MB pool, ext4 disk).
# (jobs.index_rows_per_s is the time limits' slower, safe figure.)
COLLAPSED_ROWS_PER_S = 10_000
# Bytes a row takes in the smaller variant's B-tree (load/estimate.md: 37 B for BIGINT keys
# after a sorted load): a table of more rows than the pool holds at this size outgrows it.
_ROW_BYTES = 37


def collapses(cfg: dict, engine: str) -> bool:
    """A file-by-file load expected to fall to the disk's random reads (prepare/working_set.md):
    an InnoDB table that outgrows its pool, with keys that do not arrive in key order (ids
    not spatial). The others keep a steady rate (measured: MyISAM and MyRocks at 0.1-0.6 M
    rows/s, InnoDB with spatial ids at 0.3-0.4 M rows/s, 10^6 rows on a 6 MB cache)."""
    settings = {**cfg["server"]["settings"], **cfg["load"]["settings"]}
    pool = parse_size(str(settings.get("innodb_buffer_pool_size", "128M")))
    return (engine == "innodb" and cfg["catalog"]["id_layout"] != "spatial"
            and estimated_objects(cfg) * _ROW_BYTES > pool)


def one_load_seconds(cfg: dict, collapsing: bool, time_limit_s: float | None) -> float:
    """Expected seconds of one load job, as measured runs take them (not the time limit's
    allowance, requests.load_seconds): each repetition loads at jobs.rows_per_s (a collapsing
    one at COLLAPSED_ROWS_PER_S, stopped at ``time_limit_s``, the load's: LoadSpec's), checks
    the rows at 5x that, OPTIMIZEs like a sorted load (at most load.optimize_limit_s), looks
    up ~2,000 keys a second and starts and stops its server (~2 s)."""
    rows, j, load = estimated_objects(cfg), cfg["jobs"], cfg["load"]
    loading = rows / (COLLAPSED_ROWS_PER_S if collapsing else j["rows_per_s"])
    if collapsing and time_limit_s is not None:
        loading = min(loading, time_limit_s)
    optimize = min(load["optimize_limit_s"], rows / j["rows_per_s"])
    one = loading + rows / (5 * j["rows_per_s"]) + optimize + load["lookup_count"] / 2000 + 2
    limit = load.get("repetition_limit_s")
    return (1 if limit is not None and one > limit else load.get("repetitions", 1)) * one


def load_job_seconds(cfg: dict, loads, time_limit_s: float | None) -> float:
    """Expected seconds of the load jobs ``loads`` ((engine, resumable) per job), a resumable
    one stopped at ``time_limit_s``."""
    return sum(one_load_seconds(cfg, resumable and collapses(cfg, engine), time_limit_s) for engine, resumable in loads)


def job_counts(cfg: dict, loads: int) -> dict[str, dict[str, int]]:
    """{stage: {rule: jobs}} of the whole run (rule ``all``) for a validated config;
    ``loads``: its load_index_run jobs (targets x variants x the engine/strategy pairs that run)."""
    targets, stages = list(cfg["targets"]), cfg["stages"]
    out: dict[str, dict[str, int]] = {}
    if cfg["index"]["source"] == "partition":
        out["catalog"] = {"catalog_patch": 1, "catalog_part": len(part_copies(cfg["catalog"]))}
        out["partition"] = {"partition_map": len(map_batches(cfg)), "partition_reduce": n_groups(cfg),
                            "index_input": 1, "chunk_list": 1}
    elif cfg["index"]["source"] == "file":
        out["index"] = {"index_read": 1}
    else:
        out["index"] = {"index_generate_part": cfg["index"]["jobs"], "index_generate": 1}
    if "fio" in stages:
        out["fio"] = {"fio_run": len(targets)}
    if "load_index" in stages:
        out["load_index"] = {"index_working_set": 1, "load_index_run": loads, "load_compare": 1}
    if "queries" in stages:
        out["queries"] = {"queries_mysql": len(stage_targets(cfg, "queries")), "queries_duckdb": 1,
                          "queries_check": 1}
    if "restart" in stages:
        out["restart"] = {"restart_run": len(targets)}
    if "cluster" in stages:
        out["cluster"] = {"cluster_restart_run": len(stage_targets(cfg, "cluster"))}
    out["report"] = {"target_info": len(targets), "tables": 1, "report_html": 1}
    return out


def plan(cfg: dict, loads: list, *, time_limit_s: float | None) -> dict:
    """Rows, jobs and expected minutes per stage and in total. ``loads``: (engine, resumable)
    of every load job (resumable: a file-by-file strategy); ``time_limit_s``: where such a
    load stops (load/spec.py ``LoadSpec.of(config).time_limit_s``: core reads no stage's key)."""
    counts = job_counts(cfg, len(loads))
    seconds, req = expected_seconds(cfg), requests(cfg)
    cpus = cfg["jobs"]["cpus"]
    nodes = len({measure_domain(cfg, t) for t in cfg["targets"]})   # measuring side by side
    minutes = {}
    for stage, rules in counts.items():
        total = 0.0
        for rule, jobs in rules.items():
            side = nodes if rule in MEASURING else max(1, cpus // req[rule].threads)
            work = jobs * START_S + (load_job_seconds(cfg, loads, time_limit_s) if rule == "load_index_run"
                                     else jobs * seconds[rule])
            total += math.ceil(jobs / side) * work / max(1, jobs)
        minutes[stage] = total / 60
    objects = estimated_objects(cfg)
    sources = objects * cfg["catalog"]["sources_per_object"] if "catalog" in counts else 0
    return {"objects": objects, "sources": int(sources), "index_rows": objects,
            "jobs": sum(sum(r.values()) for r in counts.values()), "counts": counts,
            "minutes": minutes, "total_minutes": sum(minutes.values()), "limit_h": cfg["run_limit_h"]}


def duration(minutes: float) -> str:
    return f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.1f} h"


def lines(p: dict) -> list[str]:
    """The plan for a person, two lines."""
    stages = ", ".join(f"{s} {duration(m)}" for s, m in p["minutes"].items())
    return [f"plan: {p['objects']:,} objects, {p['sources']:,} sources, {p['index_rows']:,} index rows; "
            f"{p['jobs']} jobs",
            f"plan: expected ~{duration(p['total_minutes'])} ({stages}; at jobs.rows_per_s, collapsing "
            f"loads at ~{COLLAPSED_ROWS_PER_S:,} rows/s, measuring jobs one at a time); "
            f"limit run_limit_h = {p['limit_h']:g} h"]


# The stages a stage's target rule builds (the index input comes with the loads, queries and
# restarts). `all` and the report build the whole run; a file or a job's rule, only that.
_UP_TO_INDEX = ("catalog", "partition", "index")
TARGET_STAGES = {
    "catalog": ("catalog",), "partition": ("catalog", "partition"), "fio": ("fio",),
    "load_index": (*_UP_TO_INDEX, "load_index"), "queries": (*_UP_TO_INDEX, "queries"),
    "restart": (*_UP_TO_INDEX, "restart"), "cluster": (*_UP_TO_INDEX, "cluster"),
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
