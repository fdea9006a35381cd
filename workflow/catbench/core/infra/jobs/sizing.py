"""The run's sizes as the job-sizing model reads them: the one module of core/infra/jobs
that reads the config dict. ``RunSizes.of(cfg)`` takes the validated config (defaults
filled by the schema) and keeps what requests.py (each rule's threads, memory, time limit)
and plan.py (the run's expected time) compute from: rates, the catalog's scale, each
stage's work and the targets' nodes. Core imports no stage, so this view is core's own,
not the stages' specs."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...sky.chunking import auto_stripes, auto_sub_stripes, densest, rows_in
from ...sky.copies import copy_layout, map_batches, part_copies
from ..config import estimated_objects, estimated_rows, ladder_targets, n_groups, stage_targets
from ..targets import parse_size
from .shapes import CatalogShape, IndexWork


@dataclass(frozen=True)
class Rates:
    """jobs: the cores a run uses and the deliberately slow rates its time limits assume."""
    cpus: int
    rows_per_s: float           # jobs.rows_per_s: catalog rows read, written or scanned
    index_rows_per_s: float     # jobs.index_rows_per_s: index rows inserted into a server


@dataclass(frozen=True)
class Scale:
    """Rows at the config's scale, and the prepare stages' job counts."""
    rows: int           # catalog rows: objects and their sources
    objects: int        # index rows (with index.source file: the files' rows)
    part_rows: int      # the largest catalog part's rows (the objects it keeps, with sources)
    map_rows: int       # the largest map job's rows (map_batches: parts located one after another)
    patch_rows: int     # the patch's rows
    group_rows: int     # a reduce job's rows
    parts: int          # catalog parts (part_copies)
    map_jobs: int       # partition map jobs (map_batches)
    groups: int         # partition reduce jobs (n_groups)


@dataclass(frozen=True)
class Chunks:
    """How crowded the partition's chunks are (core/sky/chunking.py): the Objects of the
    densest chunk and sub-chunk, and the stripes ``auto`` would pick for partition.auto_*_rows."""
    density: float          # objects per deg² at the densest place
    stripes: int            # partition.num_stripes (auto already resolved by the config check)
    sub_stripes: int        # partition.num_sub_stripes_per_stripe
    chunk_rows: int         # Objects in the densest chunk
    sub_chunk_rows: int     # Objects in the densest sub-chunk
    bound: int              # partition.auto_chunk_rows
    auto: tuple[int, int]   # (stripes, sub-stripes) auto picks
    overlap_deg: float = 0.0   # partition.overlap_deg

    @classmethod
    def of(cls, cfg: dict, objects: int) -> Chunks:
        part = cfg["partition"]
        density, ns, nss = densest(cfg["catalog"]), part["num_stripes"], part["num_sub_stripes_per_stripe"]
        auto_ns = auto_stripes(density, part["auto_chunk_rows"])
        auto_nss = auto_sub_stripes(density, auto_ns, part["auto_sub_chunk_rows"], float(part["overlap_deg"]))
        return cls(density=density, stripes=ns, sub_stripes=nss,
                   chunk_rows=rows_in(density, 180.0 / ns, objects),
                   sub_chunk_rows=rows_in(density, 180.0 / (ns * nss), objects),
                   bound=part["auto_chunk_rows"], auto=(auto_ns, auto_nss), overlap_deg=float(part["overlap_deg"]))


@dataclass(frozen=True)
class LoadWork:
    """load: a load job's repetitions (the most it may make: load.max_repetitions when the
    loads adapt), limits and lookups; ``settings``: server.settings with load.settings over
    them (a free-form map)."""
    repetitions: int
    repetition_limit_s: float | None
    optimize_limit_s: float
    lookup_seconds: float | None
    lookup_count: int
    settings: dict


@dataclass(frozen=True)
class LadderWork:
    """predict.in_run: the rungs the predict stage runs, each the run's B-tree loads at a multiple
    of its rows; ``loads`` a target counts every engine's (variants × engines × strategies), an
    upper bound: the layer below the engines' registry cannot tell an LSM, which the rungs leave out."""
    factors: tuple[int, ...]
    targets: int
    loads: int
    repetitions: int


@dataclass(frozen=True)
class FioWork:
    """fio: a fio job's tests."""
    repetitions: int
    max_repetitions: int | None
    runtime_s: float
    size: int               # fio.size in bytes


@dataclass(frozen=True)
class RestartWork:
    """restart: a restart job's restarts (repetitions: the most a kind may make, restart.max_repetitions
    when they adapt); ``settings``: server.settings with restart.settings over them."""
    repetitions: int
    kinds: tuple[str, ...]
    buffer_pool_dump: tuple
    warm_timeout_s: float
    settings: dict


@dataclass(frozen=True)
class ClusterWork:
    """cluster: a Galera job's nodes and restarts; ``settings``: server.settings with
    cluster.settings over them."""
    nodes: int
    repetitions: int
    kinds: tuple[str, ...]
    load_window_s: float    # cluster.load before_s + down_s + after_s
    settings: dict
    targets: int            # targets the cluster stage runs on


@dataclass(frozen=True)
class QueryWork:
    """queries: a query suite's runs and streams."""
    repetitions: int
    max_repetitions: int | None
    budget_s: float | None
    cold: bool
    queries: tuple[str, ...]
    streams: int
    stream_seconds: float   # queries.concurrency.seconds
    targets: int            # targets the queries stage runs on
    shv1_tests: int = 0     # MySQL's distance tests SHV1's drawn box is sized to (queries.draw.target_tests)
    shv1_rows: int = 0      # the Objects a drawn box holds at most (queries.draw.target_rows)
    workers: int = 1        # worker servers a mysql query job starts (queries.workers)
    engines: tuple[str, ...] = ("mysql", "duckdb")   # queries.engines
    lsdb_jobs: bool = False  # queries.lsdb.cluster slurm: the lsdb engine's Dask workers are Slurm jobs of their own


@dataclass(frozen=True)
class RunSizes:
    """What core/infra/jobs sizes jobs and plans the run from, read once from the validated config."""
    rates: Rates
    scale: Scale
    catalog: CatalogShape
    index: IndexWork
    load: LoadWork
    fio: FioWork
    restart: RestartWork
    cluster: ClusterWork
    queries: QueryWork
    ladder: LadderWork
    chunks: Chunks
    server_settings: dict           # server.settings
    nodes: dict                     # {target: targets.<t>.node or None}, in the config's order
    stages: tuple[str, ...]
    run_limit_h: float

    @classmethod
    def of(cls, cfg: dict) -> RunSizes:
        jobs, server = cfg["jobs"], cfg["server"]["settings"]
        load, fio = cfg["load"], cfg["fio"]
        rs, cl, q, ir = cfg["restart"], cfg["cluster"], cfg["queries"], cfg["predict"]["in_run"]
        return cls(
            rates=Rates(cpus=jobs["cpus"], rows_per_s=jobs["rows_per_s"], index_rows_per_s=jobs["index_rows_per_s"]),
            scale=_scale(cfg),
            catalog=CatalogShape.of(cfg),
            index=IndexWork.of(cfg),
            load=LoadWork(repetitions=max(load["repetitions"], load["max_repetitions"] or 0),
                          repetition_limit_s=load["repetition_limit_s"],
                          optimize_limit_s=load["optimize_limit_s"], lookup_seconds=load["lookup_seconds"],
                          lookup_count=load["lookup_count"], settings={**server, **(load["settings"] or {})}),
            fio=FioWork(repetitions=fio["repetitions"], max_repetitions=fio["max_repetitions"],
                        runtime_s=fio["runtime_s"], size=parse_size(fio["size"])),
            restart=RestartWork(repetitions=max(rs["repetitions"], rs["max_repetitions"] or 0),
                                kinds=tuple(rs["kinds"]),
                                buffer_pool_dump=tuple(rs["buffer_pool_dump"]), warm_timeout_s=rs["warm_timeout_s"],
                                settings={**server, **rs["settings"]}),
            cluster=ClusterWork(nodes=cl["nodes"], repetitions=cl["repetitions"], kinds=tuple(cl["kinds"]),
                                load_window_s=sum(cl["load"][k] for k in ("before_s", "down_s", "after_s")),
                                settings={**server, **cl["settings"]}, targets=len(stage_targets(cfg, "cluster"))),
            queries=QueryWork(repetitions=q["repetitions"], max_repetitions=q["max_repetitions"],
                              budget_s=q["budget_s"], cold=q["cold"], queries=tuple(q["queries"]),
                              streams=q["concurrency"]["streams"], stream_seconds=q["concurrency"]["seconds"],
                              targets=len(stage_targets(cfg, "queries")),
                              shv1_tests=0 if {"box_deg", "ra_min"} & set(q["parameters"].get("SHV1") or {})
                              else q["draw"]["target_tests"],
                              shv1_rows=q["draw"]["target_rows"], workers=q["workers"],
                              engines=tuple(q["engines"]), lsdb_jobs=q["lsdb"]["cluster"] == "slurm"),
            ladder=LadderWork(factors=tuple(ir["factors"]), targets=len(ladder_targets(cfg)),
                              loads=len(load["variants"]) * len(load["engines"]) * len(load["strategies"]),
                              repetitions=ir["repetitions"]),
            chunks=Chunks.of(cfg, estimated_objects(cfg)),
            server_settings=dict(server),
            nodes={t: v.get("node") for t, v in cfg["targets"].items()},
            stages=tuple(cfg["stages"]),
            run_limit_h=cfg["run_limit_h"],
        )


def _scale(cfg: dict) -> Scale:
    cat = cfg["catalog"]
    rows, objects = estimated_rows(cfg), estimated_objects(cfg)
    keep = copy_layout(cat)["keep"]     # objects kept per copy (a crowded sky thins most)
    copies = part_copies(cat)
    kept = [int(keep[c.start:c.stop].sum()) for c in copies]
    per = 1 + cat["sources_per_object"]
    batches, groups = map_batches(cfg), n_groups(cfg)
    return Scale(rows=rows, objects=objects,
                 part_rows=max(kept, default=0) * per,
                 # a map job locates several parts, one after the other (map_batches)
                 map_rows=max((sum(kept[p] for p in b) for b in batches), default=0) * per,
                 patch_rows=cat["patch"]["objects"] * (1 + cat["sources_per_object"]),
                 group_rows=math.ceil(rows / groups),
                 parts=len(copies), map_jobs=len(batches), groups=groups)
