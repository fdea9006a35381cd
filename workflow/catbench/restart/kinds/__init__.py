"""The restart kinds: one module each in this package, registered by being here. A kind
module names itself (``KIND``, the config's ``restart.kinds`` value), says when it runs
(``ORDER``), gives ``run(run, rep) -> (rows, detail)`` and its summary figures
(``HEADLINES``, see headlines.py); see ``clean.py``.

Run order: clean uses the fully loaded, settled table; crash-during-load drops it and ends
with it fully loaded again (by resuming), so the first crash-under-queries hits a freshly
loaded index whose redo since the last checkpoint is still to be applied."""

from __future__ import annotations

import importlib
import pkgutil

_MODULES = sorted((importlib.import_module(f"{__name__}.{m.name}") for m in pkgutil.iter_modules(__path__)),
                  key=lambda mod: mod.ORDER)
# kind -> its module, in run order
MODULES = {mod.KIND: mod for mod in _MODULES}
# kind -> function(run, repetition) -> (rows, detail), in run order
KINDS = {kind: mod.run for kind, mod in MODULES.items()}
