"""The storage engines the index table can live in: one module each in this package, registered
by being here (``ENGINES``: name -> :class:`Engine`, in their ``ORDER``). A module gives ``NAME``,
``ORDER`` (its place) and ``ENGINE``; the schema's ``load.engines`` takes the names from the
modules' text (``{x-registry: [core/index/engines, NAME]}``), the report its label, cache words
and markers from the entry, so a new engine is its module (and, for a plugin, a line of
``core/server/binaries.py`` PLUGINS, which owns how a plugin is loaded)."""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Engine:
    """A storage engine of the index table (config ``load.engines``) and what differs with it."""
    name: str                    # as in the config
    sql_name: str                # ENGINE= of the DDL
    plugin: str | None           # the server plugin catbench loads for it (core/server/binaries.py PLUGINS)
    settings: dict = field(hash=False)  # server options of its loads; load.settings overrides them
    table_files: str = ""        # glob under the datadir of the files holding the table's data
    flush_sql: str | None = None  # resource run before the table's bytes are measured
    bulk_sql: tuple = ()         # resources beginning and ending strategy bulk's session
    bulk_transactions: bool = True  # bulk commits (load.transaction_rows); else the end statement does
    cache_variable: str = ""     # server variable sizing its page/block cache (table/cache ratios)
    # status counter of the cache's reads from disk (a sampled counter, core/server/status.py STATUS_COUNTERS):
    # the page misses of an insert, which the scale model's `misses` form is fitted to
    miss_counter: str = ""
    # A file's rows and its ledger row commit together (load/ledger.py); without transactions
    # a resumed load first checks that the table holds exactly the ledger's files
    transactional: bool = True
    files_sql: str | None = None  # resource: one row of figures of the table's files (after flush_sql)
    # an LSM tree: a key check probes several sorted runs (a row's misses may pass one), and a
    # miss only reads a block (nothing is written back), one device read each
    lsm: bool = False
    # how the report names and draws it: its name, its cache in words, a scatter marker, and the
    # line and marker of its one-file-at-a-time curve
    label: str = ""
    cache_words: str = ""
    marker: str = "o"
    curve_style: tuple = ("-", ".")


_MODULES = sorted((importlib.import_module(f"{__name__}.{m.name}") for m in pkgutil.iter_modules(__path__)),
                  key=lambda mod: mod.ORDER)
ENGINES: dict[str, Engine] = {mod.ENGINE.name: mod.ENGINE for mod in _MODULES}


def btrees(engines) -> list[str]:
    """Of ``engines`` (names), those that are no LSM: what a rung of the run's own ladder loads
    (an LSM's ladder keeps the config's LSM in rungs apart: predict/spec.py ``_split_lsm``)."""
    return [e for e in engines if e in ENGINES and not ENGINES[e].lsm]
