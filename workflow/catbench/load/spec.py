"""A load job's knobs, read once from the validated config (its ``load`` and ``server``
sections, the schema's defaults filled in at the CLI): the driver, the strategies and the
measurements read this, never the config. ``EstimateSpec``: what the run-level estimate of
space and time (estimate.py) reads of the whole config."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pathlib import Path

from ..core.infra.config import estimated_objects, target_dir
from ..core.infra.jobs.repeat import Repeats
from ..core.infra.targets import parse_size
from ..core.server.process import Launch
from .job import LoadOptions
from .strategies import load_pairs


@dataclass(frozen=True)
class Lookups:
    """The point lookups after a load (load.lookup_threads, lookup_count, lookup_seconds)."""
    threads: int
    count: int
    seconds: float | None


@dataclass(frozen=True)
class LoadSpec:
    options: LoadOptions              # the strategies' knobs (load.connections ... load.chunk_rows)
    repeats: Repeats                  # load.repetitions, max_repetitions, precision, budget_s
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
        return cls(LoadOptions.of(load).check(), Repeats.of(load), load["repetition_limit_s"],
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


@dataclass(frozen=True)
class LoadMatrix:
    """The loads a run asks for: every variant of ``load.variants`` by the (engine, strategy)
    pairs of ``load.engines`` x ``load.strategies`` that run, less ``load.skip``."""
    variants: tuple[str, ...]
    strategies: tuple[str, ...]
    engines: tuple[str, ...]
    skip: tuple[str, ...]

    @classmethod
    def of(cls, cfg: dict) -> LoadMatrix:
        load = cfg["load"]
        return cls(tuple(load["variants"]), tuple(load["strategies"]), tuple(load["engines"]), tuple(load["skip"]))

    def pairs(self) -> list[tuple[str, str]]:
        """The (engine, strategy) pairs that run, in config order (LoadError when none does)."""
        return load_pairs(self.strategies, self.engines, self.skip)[0]


@dataclass(frozen=True)
class TargetPlace:
    """Where a run keeps its files on one storage target (``targets.<name>``)."""
    path: Path                        # <targets.<name>.path>/<run>
    node: str | None                  # the SLURM node it is on (None: this machine's)


@dataclass(frozen=True)
class EstimateSpec:
    """What a run will do, as far as its estimate of space and time needs (estimate.py):
    the index rows and the figures bounding an input line, the measuring stages, and each
    job's size knobs and server settings."""
    rows: int                         # index rows: the catalog's objects (or index.file's rows)
    patch_objects: int                # catalog.patch.objects: the largest local id of a key
    num_stripes: int                  # partition.num_stripes
    num_sub_stripes: int              # partition.num_sub_stripes_per_stripe
    stages: tuple[str, ...]
    fio_bytes: int | None             # fio.size, when fio is among the stages
    loads: LoadMatrix
    load_settings: dict               # load.settings over server.settings
    restart_variant: str
    restart_settings: dict            # restart.settings over server.settings
    targets: dict[str, TargetPlace]   # in the config's order

    @classmethod
    def of(cls, cfg: dict) -> EstimateSpec:
        """From a validated config."""
        p, server = cfg["partition"], cfg["server"]["settings"]
        return cls(estimated_objects(cfg), cfg["catalog"]["patch"]["objects"], p["num_stripes"],
                   p["num_sub_stripes_per_stripe"], tuple(cfg["stages"]),
                   parse_size(cfg["fio"]["size"]) if "fio" in cfg["stages"] else None, LoadMatrix.of(cfg),
                   {**server, **(cfg["load"]["settings"] or {})}, cfg["restart"]["variant"],
                   {**server, **cfg["restart"]["settings"]},
                   {t: TargetPlace(target_dir(cfg, t), v.get("node")) for t, v in cfg["targets"].items()})
