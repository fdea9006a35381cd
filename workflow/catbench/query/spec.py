"""A query job's knobs, read once from the validated config (its ``queries``, ``partition``,
``server`` sections and the run ``seed``; the schema's defaults filled in at the CLI) with the
command line's overrides on top: the suite's runs, the parameter draw, the engines and the
private server read this, never the config."""

from __future__ import annotations

from dataclasses import dataclass

import psutil

from ..core.infra.jobs.repeat import Repeats
from ..core.infra.sizes import parse_size
from ..core.sky.geometry import Geometry
from ..core.server.process import Launch
from .lsdb.cluster import ClusterOptions
from .suite import QUERY_NAMES, QueryError


@dataclass(frozen=True)
class Concurrency:
    """DMTR-21's concurrency run (queries.concurrency): HV2 streams beside one LV1 stream."""
    streams: int
    seconds: float
    lv1_interval_s: float


@dataclass(frozen=True)
class Draw:
    """How the queries' parameters are drawn: the run seed, the config's per-query parameters
    (queries.parameters.<Q>, over DMTR-21's), the tries a box gets to return data, the
    Objects a drawn box holds, the pairs SHV1 counts and MySQL's distance tests for them at most
    (about), and the draw's time."""
    seed: int
    given: dict
    max_tries: int
    target_rows: int
    target_pairs: int
    budget_s: float
    target_tests: int


@dataclass(frozen=True)
class LsdbSpec:
    """The lsdb engine (queries.lsdb): its Dask cluster and how the HATS catalogs are cut."""
    cluster: ClusterOptions
    pixel_threshold: int | None
    highest_order: int | None
    n_neighbors: int

    @classmethod
    def of(cls, qs: dict, threads: int, mem_mb: int, minutes: int) -> LsdbSpec:
        """From ``queries.lsdb`` and the job's ``threads`` and memory; refused naming the key when
        the job cannot hold the workers."""
        ls = qs["lsdb"]
        workers = int(ls["workers"])
        if workers > threads:
            raise QueryError(f"config key 'queries.lsdb.workers': {workers} Dask workers in a job of {threads} "
                             f"CPU(s) (jobs.cpus); at most {threads}")
        # the job's memory shared (by hand, without --mem-mb: the machine's)
        job = mem_mb << 20 if mem_mb else psutil.virtual_memory().total
        memory = parse_size(ls["memory"]) if ls["memory"] else job // workers
        return cls(ClusterOptions(workers, max(1, threads // workers), memory, ls["cluster"], minutes),
                   ls["pixel_threshold"], ls["highest_order"], int(ls["n_neighbors"]))


@dataclass(frozen=True)
class QuerySpec:
    names: tuple[str, ...]    # queries.queries (or --queries)
    repeats: Repeats          # queries.repetitions, max_repetitions, precision, budget_s
    concurrency: Concurrency
    connections: int          # chunk queries in flight a worker (mysql engine)
    load_connections: int     # connections loading the chunk tables
    index_variant: str        # the secondary index's schema (core.index.table)
    cold: bool                # cold runs before the warm ones
    params: dict | None       # every query's parameters (--params-json); None: drawn
    draw: Draw
    geometry: Geometry
    settings: dict            # the server's options (the cold runs' added by the stage)
    launch: Launch            # server.binary, server.tcp, server.start_timeout_s
    time_limit_min: float | None = None   # the stage's (--time-limit-min: its rule's runtime)
    workers: int = 1          # worker servers the chunk tables are spread over (mysql engine)
    lsdb: LsdbSpec | None = None   # the lsdb engine's (with the job's threads and memory: --threads, --mem-mb)
    evicted: bool = False     # runs with the layout's page cache dropped, the engine kept (duckdb, lsdb)

    @property
    def repetitions(self) -> int:
        return self.repeats.min_n

    @classmethod
    def of(cls, cfg: dict, over: dict | None = None) -> QuerySpec:
        """From a validated config and the CLI's overrides (repetitions, concurrency (a partial
        section), names, cold, params, settings; None or absent: the
        config's; time_limit_min). Unknown query names fail naming the config key."""
        over = {k: v for k, v in (over or {}).items() if v is not None}
        qs, part, server = cfg["queries"], cfg["partition"], cfg["server"]
        names = tuple(over.get("names") or qs["queries"])
        unknown = set(names) - set(QUERY_NAMES)
        if unknown:
            raise QueryError(f"config key 'queries.queries': unknown queries {sorted(unknown)}; "
                             f"choose from {', '.join(QUERY_NAMES)}")
        repetitions = int(over.get("repetitions", qs["repetitions"]))
        cc = {**qs["concurrency"], **over.get("concurrency", {})}
        return cls(
            names, Repeats.of({**qs, "repetitions": repetitions}),
            Concurrency(int(cc["streams"]), float(cc["seconds"]), float(cc["lv1_interval_s"])),
            int(qs["connections"]), int(qs["load_connections"]), qs["index_variant"],
            over.get("cold", qs["cold"]), over.get("params"),
            Draw(int(cfg["seed"]), {k: dict(v or {}) for k, v in qs["parameters"].items()},
                 int(qs["draw"]["max_tries"]), int(qs["draw"]["target_rows"]),
                 int(qs["draw"]["target_pairs"]), float(qs["draw"]["budget_s"]), int(qs["draw"]["target_tests"])),
            Geometry(part["num_stripes"], part["num_sub_stripes_per_stripe"], float(part["overlap_deg"])),
            over.get("settings", server["settings"]),
            Launch.of(server), over.get("time_limit_min"), int(over.get("workers", qs["workers"])),
            LsdbSpec.of(qs, int(over.get("threads") or 1), int(over.get("mem_mb") or 0),
                        int(over.get("time_limit_min") or 60)) if over.get("engine") == "lsdb" else None,
            bool(over.get("evicted", qs["evicted"])))
