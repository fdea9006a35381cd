"""A load job's knobs, read once from the validated config (its ``load`` and ``server``
sections, the schema's defaults filled in at the CLI): the driver, the strategies and the
measurements read this, never the config."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..core.server.process import Launch
from .handoff import LoadOptions


@dataclass(frozen=True)
class Lookups:
    """The point lookups after a load (load.lookup_threads, lookup_count, lookup_seconds)."""
    threads: int
    count: int
    seconds: float | None


@dataclass(frozen=True)
class LoadSpec:
    options: LoadOptions              # the strategies' knobs (load.connections ... load.chunk_rows)
    repetitions: int
    repetition_limit_s: float | None
    time_limit_s: float | None        # resumable strategies only
    sample_interval_s: float
    interval_s: float | None          # the load-rate table's (None: the load's seconds / 20)
    optimize_limit_s: float
    lookups: Lookups
    settings: dict                    # load.settings over server.settings (an engine's under both)
    launch: Launch                    # server.binary, server.tcp, server.start_timeout_s
    keep_data: bool = False           # the server's datadir stays afterwards (--keep-data)

    @classmethod
    def of(cls, cfg: dict, keep_data: bool = False) -> LoadSpec:
        """From a validated config's ``load`` and ``server`` sections."""
        load, server = cfg["load"], cfg["server"]
        return cls(LoadOptions.of(load).check(), load["repetitions"], load["repetition_limit_s"],
                   load["time_limit_s"], load["sample_interval_s"], load["interval_s"], load["optimize_limit_s"],
                   Lookups(load["lookup_threads"], load["lookup_count"], load["lookup_seconds"]),
                   {**server["settings"], **(load["settings"] or {})}, Launch.of(server), keep_data)

    def replace(self, **kw) -> LoadSpec:
        return dataclasses.replace(self, **kw)


@dataclass(frozen=True)
class LoadCase:
    """Which load: the index table's variant, the strategy and the table's storage engine."""
    variant: str
    strategy: str
    engine: str = "innodb"
