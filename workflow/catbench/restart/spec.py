"""A restart job's knobs, read once from the validated config (its ``restart`` and
``server`` sections and the run's ``seed``, the schema's defaults filled in at the CLI):
the driver, the kinds, the warm check and the probe read this, never the config."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.infra.jobs.repeat import Repeats
from ..core.infra.sizes import parse_size
from ..core.server.process import Launch
from .errors import RestartError
from .options import BUFFER_POOL_MODES, FAULTS, KINDS


@dataclass(frozen=True)
class Warm:
    """When lookups after a start count as warm again: a batch p50 within ``factor`` x the
    p50 before the restart, batches of ``batch`` lookups, given up after ``timeout_s``
    (restart.warm_factor, warm_batch, warm_timeout_s)."""
    factor: float
    batch: int
    timeout_s: float


@dataclass(frozen=True)
class RestartSpec:
    """A restart job: which kinds run how often on which index variant, the warm check, the
    private server's options and start, the seed, and a fault drill or None."""
    kinds: tuple[str, ...]            # restart.kinds, in the kinds' run order (kinds/ ORDER)
    repeats: Repeats                  # restart.repetitions, max_repetitions, precision, budget_s
    variant: str                      # the index table's variant (core.index.table)
    buffer_pool_modes: tuple[str, ...]  # restart.buffer_pool_dump: "off", "on" as given
    buffer_pool_dump_pct: int
    warm: Warm
    lookup_count: int                 # lookup keys picked from the input
    query_threads: int                # crash-under-queries: clients running the HV suite
    settings: dict                    # restart.settings over server.settings
    launch: Launch                    # server.binary, no TCP, restart.start_timeout_s
    seed: int                         # kill points and lookup keys
    crash_point: tuple[float, float] = (0.0, 1.0)  # restart.crash_point: share of files committed before a kill
    memory_probe: int = 0             # restart.memory_probe: bytes of fresh memory first-touched, timed
    lookup_probe: int = 0             # restart.lookup_probe: the largest map's bytes the lookup probe times
    keep_data: bool = False           # the server's datadir stays afterwards (--keep-data)
    fault: str | None = None          # a fault drill of FAULTS (the stage must fail cleanly)

    @classmethod
    def of(cls, cfg: dict, keep_data: bool = False, fault: str | None = None) -> RestartSpec:
        """From a validated config's ``restart``, ``server`` and ``seed``; RestartError for a
        kind, buffer-pool mode or fault drill that does not exist."""
        rs, server = cfg["restart"], cfg["server"]
        kinds, modes = rs["kinds"], rs["buffer_pool_dump"]
        bad = [k for k in kinds if k not in KINDS]
        if bad or not kinds:
            raise RestartError(f"unknown restart kind(s) {bad}; choose from {', '.join(KINDS)}")
        if rs["repetitions"] < 1:
            raise RestartError(f"repetitions must be at least 1, not {rs['repetitions']}")
        bad = [m for m in modes if m not in BUFFER_POOL_MODES]
        if bad or not modes:
            raise RestartError(f"buffer_pool_modes must be a non-empty subset of {BUFFER_POOL_MODES}, not {bad}")
        if fault is not None and fault not in FAULTS:
            raise RestartError(f"unknown fault drill {fault!r}; available: {', '.join(FAULTS)}")
        lo, hi = rs["crash_point"]
        if not 0 <= lo <= hi <= 1:
            raise RestartError(f"restart.crash_point must be [low, high] with 0 <= low <= high <= 1, not {[lo, hi]}")
        if not 0 < rs["warm_factor"]:
            raise RestartError("warm_factor must be positive")
        lookup_probe = parse_size(rs["lookup_probe"])
        if 0 < lookup_probe < 2 ** 11 * 64:   # two map sizes at least: the curve past its end is their slope
            raise RestartError(f"restart.lookup_probe must be 0K (none) or at least 128K, not {rs['lookup_probe']}")
        return cls(tuple(k for k in KINDS if k in kinds), Repeats.of(rs), rs["variant"], tuple(modes),
                   rs["buffer_pool_dump_pct"], Warm(rs["warm_factor"], rs["warm_batch"], rs["warm_timeout_s"]),
                   rs["lookup_count"], rs["query_threads"], {**server["settings"], **rs["settings"]},
                   Launch(server["binary"], False, rs["start_timeout_s"]), cfg["seed"], (float(lo), float(hi)),
                   parse_size(rs["memory_probe"]), lookup_probe, keep_data, fault)
