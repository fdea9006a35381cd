"""The report's PNG plots (matplotlib, Agg), each answering one question, all from the final
tables: one module per plot in this package, registered by being here. A plot module gives
``ORDER`` (its place in the report), ``TABLES`` (the final tables it reads) and
``draw(plt, *tables, path) -> bool``, which writes its file (a figure saying "no ... in this
run" when a stage is absent) and says whether it had data; a module with ``OPTIONAL = True``
has no file without data (a prediction: not a rule's output, made after the run); its caption is
``resources/report/plot_<module>.rst``. Conventions (style.py): the Okabe-Ito colour-blind-safe
palette, one colour per target (the same in every plot), legends outside the axes (below
them), units on every axis, intervals as whiskers (the report.confidence interval of the
typical value, or of the speed-up ratio)."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from .style import _plt

_MODULES = sorted((importlib.import_module(f"{__name__}.{m.name}") for m in pkgutil.iter_modules(__path__)
                   if m.name != "style"), key=lambda mod: mod.ORDER)
# plot name -> its module, in the report's order
REGISTRY = {mod.__name__.rpartition(".")[2]: mod for mod in _MODULES}
PLOTS = tuple(REGISTRY)
# the plots every report writes (the report rule's outputs)
ALWAYS = tuple(name for name, mod in REGISTRY.items() if not getattr(mod, "OPTIONAL", False))


def draw_all(tables: dict, out: Path) -> dict:
    """Every plot of :data:`PLOTS` into ``out``/<name>.png: {name: drawn with data}. An optional
    plot without data has no file (one left by an earlier report is removed)."""
    plt = _plt()
    drawn = {}
    for name, mod in REGISTRY.items():
        path = out / f"{name}.png"
        optional = name not in ALWAYS
        has = not optional or any(tables.get(t) for t in mod.TABLES)
        drawn[name] = has and mod.draw(plt, *(tables.get(t, []) for t in mod.TABLES), path)
        if optional and not drawn[name]:
            path.unlink(missing_ok=True)
    return drawn
