"""The loading strategies of the secondary ("director") index: one module each in this
package, registered by being here (``REGISTRY``: name -> Strategy, in their ``ORDER``): the
table it creates, how it loads, and how much scratch room it needs on the target. What each
one does and why is in ``load/strategies.md``.

A strategy module gives ``ORDER`` (its place) and ``STRATEGY``, a :class:`~.base.Strategy`
whose ``load`` gets a ``LoadJob`` (private server, empty table in the job's storage engine,
validated input, scratch dir) and returns an ``Outcome`` (trace, per-file checksums, timed
phases); the driver then checks row count and checksum against the input, so no strategy
can pass with missing or extra rows. The SQL it sends is in ``resources/sql/index/``. Each
one declares the storage engines it cannot run on (``unsupported``, with the reason):
``load_pairs`` gives the loads a config asks for and those it cannot have.
"""

from __future__ import annotations

import importlib
import pkgutil

from ...core.index.table import ENGINES, Engine
from ...core.server.loaddata import LoadError
from .base import INNODB, Strategy

_MODULES = sorted((importlib.import_module(f"{__name__}.{m.name}") for m in pkgutil.iter_modules(__path__)
                   if m.name != "base"), key=lambda mod: mod.ORDER)
REGISTRY: dict[str, Strategy] = {mod.STRATEGY.name: mod.STRATEGY for mod in _MODULES}
STRATEGIES = tuple(REGISTRY)
__all__ = ["REGISTRY", "STRATEGIES", "Strategy", "get_strategy", "load_pairs", "table_ddl", "table_name"]


def get_strategy(name: str) -> Strategy:
    try:
        return REGISTRY[name]
    except KeyError:
        raise LoadError(f"unknown loading strategy {name!r}; available: {', '.join(STRATEGIES)}") from None


def table_name(variant, strategy: str) -> str:
    return f"{variant.name}_{strategy.replace('-', '_')}"


def table_ddl(variant, strategy: str, database: str, table: str, engine: Engine = INNODB) -> str:
    return get_strategy(strategy).table_ddl(variant, database, table, engine)


def load_pairs(strategies, engines, skip=()) -> tuple[list[tuple[str, str]], list[dict]]:
    """The (engine, strategy) loads of ``load.engines`` x ``load.strategies`` that run, in
    config order, and those that do not, each with its reason (a strategy's registry entry,
    or ``load.skip``); LoadError naming the keys when none runs (a config that asks for
    nothing runnable is a mistake) or when a ``load.skip`` entry names no pair of them."""
    pairs, skipped = [], []
    unused = set(skip) - {f"{e}/{s}" for e in engines for s in strategies}
    if unused:
        raise LoadError(f"config key load.skip names {', '.join(sorted(unused))}, which is not an "
                        f"engine/strategy pair of load.engines ({', '.join(engines)}) x load.strategies "
                        f"({', '.join(strategies)})")
    for e in engines:
        if e not in ENGINES:
            raise LoadError(f"unknown storage engine {e!r} in config key load.engines; choose from "
                            f"{', '.join(ENGINES)}")
        for s in strategies:
            strategy = get_strategy(s)
            if f"{e}/{s}" in skip:
                skipped.append({"engine": e, "strategy": s, "reason": "skipped by config key load.skip"})
            elif strategy.supports(e):
                pairs.append((e, s))
            else:
                skipped.append({"engine": e, "strategy": s, "reason": strategy.unsupported[e]})
    if not pairs:
        raise LoadError(f"none of config key load.strategies ({', '.join(strategies)}) runs on a storage "
                        f"engine of load.engines ({', '.join(engines)}): "
                        + "; ".join(f"{x['strategy']} on {x['engine']}: {x['reason']}" for x in skipped))
    return pairs, skipped
