"""A query job's knobs, read once from the validated config (its ``queries``, ``partition``,
``server`` sections and the run ``seed``; the schema's defaults filled in at the CLI) with the
command line's overrides on top: the suite's runs, the parameter draw, the engines and the
private server read this, never the config."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.infra.jobs.repeat import Repeats
from ..core.sky.geometry import Geometry
from ..core.server.process import Launch
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
            Launch.of(server), over.get("time_limit_min"), int(over.get("workers", qs["workers"])))
