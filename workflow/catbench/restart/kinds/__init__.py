"""The restart kinds: one module each in this package, registered by being here. A kind
module names itself (``KIND``, the config's ``restart.kinds`` value), says when it runs
(``ORDER``) and gives ``run(run, rep) -> (rows, detail)``; see ``clean.py``.

Run order: clean uses the fully loaded, settled table; crash-during-load drops it and ends
with it fully loaded again (by resuming), so the first crash-under-queries hits a freshly
loaded index whose redo since the last checkpoint is still to be applied."""

from __future__ import annotations

import importlib
import pkgutil

_MODULES = sorted((importlib.import_module(f"{__name__}.{m.name}") for m in pkgutil.iter_modules(__path__)),
                  key=lambda mod: mod.ORDER)
# kind -> function(run, repetition) -> (rows, detail), in run order
KINDS = {mod.KIND: mod.run for mod in _MODULES}
