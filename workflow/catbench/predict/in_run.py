"""The run's own ladder (stage ``predict``): the run's loads are its smallest rung; each of
predict.in_run.factors is one more rung, a run of its own (``<run>-rung<k>``, its loads only,
on predict.in_run.targets) at that multiple of the run's index rows with every scaled memory,
the sort memory and the input files scaled alike (``spec.py``'s rung). The loads are then
predicted at predict.target_rows with the run's cache a row (``target_pool``)."""

from __future__ import annotations

import copy
from dataclasses import dataclass

from ..core.index.table import ENGINES
from ..core.infra.config import ConfigError
from ..core.infra.targets import parse_size
from .ladder import LEAST
from .spec import PredictSpec, _rung_config


@dataclass(frozen=True)
class InRun:
    run: str
    rows: int                     # the run's index rows: its smallest rung
    factors: tuple[int, ...]      # predict.in_run.factors
    targets: tuple[str, ...]      # predict.in_run.targets, null: the run's own
    repetitions: int              # predict.in_run.repetitions: each rung's load.repetitions
    target_rows: int              # predict.target_rows: the rows the loads are predicted at

    @classmethod
    def of(cls, cfg: dict) -> InRun:
        """From a validated config whose stages hold ``predict`` (checked here: ConfigError)."""
        pred = cfg["predict"]
        own = pred["in_run"]
        if "load_index" not in cfg["stages"]:
            raise ConfigError("config key 'stages': the predict stage ladders the run's loads, so it needs "
                              "load_index too")
        targets = tuple(own["targets"] or cfg["targets"])
        unknown = [t for t in targets if t not in cfg["targets"]]
        if unknown:
            raise ConfigError(f"config key 'predict.in_run.targets': {', '.join(unknown)} not among the "
                              f"run's targets ({', '.join(cfg['targets'])})")
        spec = PredictSpec.of(cfg)
        rows = round(spec.rows_per_object * cfg["catalog"]["patch"]["objects"])
        if rows * max(own["factors"]) >= pred["target_rows"]:
            raise ConfigError(f"config key 'predict.target_rows' ({pred['target_rows']:,}): not past the "
                              f"largest rung ({rows:,} rows × {max(own['factors'])}): nothing to predict")
        _check_least(spec)
        return cls(cfg["run"], rows, tuple(sorted(own["factors"])), targets, own["repetitions"],
                   pred["target_rows"])

    def rung_runs(self) -> list[str]:
        """The rungs' runs past the run itself (rung 1), smallest first."""
        return [f"{self.run}-rung{k}" for k in range(2, 2 + len(self.factors))]


def _check_least(spec: PredictSpec) -> None:
    """The run's own loads are a rung: each scaled setting at least a rung's least
    (ladder.LEAST), or its fixed parts would make it behave unlike the larger rungs."""
    for key, (least, what, why) in LEAST.items():
        value = spec.settings.get(key)
        if key in spec.scale_settings and value is not None and parse_size(value) < least:
            raise ConfigError(f"config key 'load.settings.{key}' ({value}): the predict stage takes the run's "
                              f"own loads as its smallest rung, and a rung's {what} is at least "
                              f"{least / 2**20:g} MiB ({why})")


def rung_config(cfg: dict, k: int) -> dict:
    """Rung ``k`` (2, 3, …) of the run's ladder: a whole config (base null) of the run's loads
    at ``factors[k-2]`` × its rows, on the ladder's targets, its index input generated."""
    own = InRun.of(cfg)
    if not 2 <= k < 2 + len(own.factors):
        raise ConfigError(f"rung {k}: the run's ladder has rungs 2 to {1 + len(own.factors)}")
    base = copy.deepcopy(cfg)
    base["stages"] = ["load_index"]
    base["targets"] = {t: cfg["targets"][t] for t in own.targets}
    base["load"]["repetitions"] = own.repetitions
    # the run's rows are the ladder's reference: a rung scales its memories by rows ÷ the run's
    base["predict"] = {**cfg["predict"], "target_rows": own.rows, "pool_per_row_bytes": None,
                       "rows": [own.rows * f for f in own.factors]}
    if base["index"]["source"] == "partition":   # the generator writes the partition's index files
        base["index"]["source"] = "generate"
    rung = _rung_config(base, PredictSpec.of(base), k, own.rows * own.factors[k - 2])
    rung["predict"] = {**cfg["predict"], "rung": k}
    return rung


def target_pool(cfg: dict) -> int | None:
    """The cache at predict.target_rows (``catbench predict --pool``): the run's own × target rows
    ÷ the run's rows; None where predict.pool_per_row_bytes gives it. ConfigError when the run's
    engines have caches of different sizes (one --pool cannot say both)."""
    spec, own = PredictSpec.of(cfg), InRun.of(cfg)
    if spec.pool_per_row_bytes:
        return None
    sizes = {spec.target_pool(e) for e in cfg["load"]["engines"] if e in ENGINES}
    if len(sizes) != 1:
        raise ConfigError("config key 'predict.pool_per_row_bytes': the run's engines have caches of different "
                          "sizes; give the cache a row at the target")
    return round(sizes.pop() * own.target_rows / own.rows)
