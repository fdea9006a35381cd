"""The ladder's arithmetic: the same study at smaller row counts with every memory and the
input files' count scaled by the rows, so table ÷ pool, working set ÷ pool, input ÷ sort
memory and rows per file match the target's. The least each scaled size may get and the
checks of the rungs' rows are here; the rungs' configs are written by ``spec.py``."""

from __future__ import annotations

import re

from ..core.index.table import ENGINES
from ..core.infra.config import ConfigError
from ..core.infra.targets import parse_size

# A rung's least buffer pool: InnoDB takes 6 MiB, but a rung of 1,261,000 rows (6.4 MiB pool)
# collapsed at table ÷ pool 1.37 where rungs of 2.5–10 M rows (13–52 MiB) did at 0.49–0.81:
# the pool's and the tablespace's fixed parts are no longer small beside it.
MIN_POOL = 10 * 2 ** 20
# The least of each scaled setting a rung may get, and why: below it the server would not
# run the rung as the target's scaled copy (InnoDB raises a redo log under 4 MiB to 4 MiB).
LEAST = {"innodb_buffer_pool_size": (MIN_POOL, "buffer pool", "beside which InnoDB's fixed parts are not small"),
         "innodb_log_file_size": (4 * 2 ** 20, "redo log", "InnoDB's least: it would run a larger one")}
# The least sort memory a rung gets: DuckDB's sort on 2 threads fails ("failed to pin
# block") at 52 MB on 2.5 M CHAR(28) keys and runs at 80 MB; below this a rung sorts in
# memory where the target would spill, which predict's sort check then sees.
MIN_SORT_MEMORY = 128 * 2 ** 20


def cf_option(settings: dict, option: str) -> str | None:
    """An option's value in the rocksdb_default_cf_options of server options ``settings``
    (None: not set, RocksDB's default)."""
    for item in str(settings.get("rocksdb_default_cf_options") or "").split(";"):
        name, _, val = item.strip().partition("=")
        if name.strip() == option and val.strip():
            return val.strip()
    return None


def cf_size(settings: dict, option: str) -> float | None:
    """A size in the rocksdb_default_cf_options (None: not set, RocksDB's default)."""
    val = cf_option(settings, option)
    return None if val is None else float(parse_size(val.upper()))


def sst_file(settings: dict) -> float | None:
    """An LSM's SST file size (target_file_size_base; None: RocksDB's default, lsm.SST_FILE)."""
    return cf_size(settings, "target_file_size_base")


def memtables(engine: str, settings: dict) -> float:
    """An LSM's memtables' bytes at most (write_buffer_size × max_write_buffer_number, RocksDB's
    64 MiB × 2 where not set): the server's own memory beside its block cache; 0 for a B-tree."""
    if engine not in ENGINES or not ENGINES[engine].lsm:
        return 0.0
    count = cf_option(settings, "max_write_buffer_number")
    return (cf_size(settings, "write_buffer_size") or 64 * 2 ** 20) * (int(count) if count and count.isdigit() else 2)


def page_cache_left(ram: float, *, pool: float, memtable_bytes: float, own: float) -> float:
    """The RAM left to the table's pages in the page cache (ρ's numerator, predict/model.md):
    ``ram`` less the pool, an LSM's memtables and the server's own memory (predict.ram_own)."""
    return max(0.0, ram - pool - memtable_bytes - own)


def kib(n: float, unit: str = "KiB") -> str:
    """A size in whole KiB: ``K`` for a server option, ``KiB`` for load.sort_memory."""
    return f"{max(1, round(n / 1024))}{unit}"


def scaled_options(value: str, factor: float) -> str:
    """An option string ``name=size;…`` (``rocksdb_default_cf_options``) with every size
    scaled (``write_buffer_size=64m`` → the rung's memtable), counts and words kept."""
    out = []
    for item in (i.strip() for i in value.split(";") if i.strip()):
        name, _, val = (v.strip() for v in item.partition("="))
        if re.fullmatch(r"[0-9]+[kKmMgG]", val):
            val = kib(parse_size(val.upper()) * factor, "k")
        out.append(f"{name}={val}")
    return ";".join(out)


def scaled_size(key: str, scaled: float, k: int, rung_rows: float) -> str:
    """Server option ``key`` at ``scaled`` bytes in rung ``k`` of ``rung_rows`` rows, refused
    under the least a rung may get (:data:`LEAST`)."""
    least, what, why = LEAST.get(key, (0, "", ""))
    if scaled < least:
        raise ConfigError(f"predict.rows: rung {k} ({rung_rows:,.0f} rows) would have a "
                          f"{scaled / 2**20:.1f} MiB {what} ({key}), under a rung's least "
                          f"({least / 2**20:g} MiB, {why}): it would not behave as the target's; "
                          f"use more rows in that rung")
    return kib(scaled, "K")


def check_rows(rows: tuple, target_rows: int) -> None:
    """predict.rows: some rungs, each smaller than the target."""
    if not rows:
        raise ConfigError("predict.rows: no rungs (give the rows of two or three smaller runs)")
    if max(rows) >= target_rows:
        raise ConfigError(f"predict.rows: a rung of {max(rows):,} rows is not smaller than "
                          f"predict.target_rows ({target_rows:,})")


def check_objects(rows: tuple, objects: list[int], per_object: float) -> None:
    """The rungs' objects (smallest first) differ: a rung is a whole number of objects."""
    for a, b in zip(objects, objects[1:]):
        if a == b:
            raise ConfigError(f"predict.rows: {sorted(rows)} make two rungs of the same {a:,} objects "
                              f"({a * per_object:,.0f} rows; a rung is a whole number of objects of "
                              f"{per_object:,.0f} rows on this sky): give rungs that differ by more")


DIRECT = ("O_DIRECT", "O_DIRECT_NO_FSYNC")   # innodb_flush_method values that bypass the page cache


def buffered(engine: str, flush_method) -> bool:
    """Whether the engine reads its table through the page cache: InnoDB unless its
    innodb_flush_method bypasses it (None: MariaDB >= 10.6's default, O_DIRECT); MyISAM and
    MyRocks here always."""
    return engine != "innodb" or str(flush_method or "O_DIRECT").upper() not in DIRECT


ONE_LADDER = 1.25   # the most a per-row setting may differ between rungs of one ladder


def check_one_ladder(per_row: dict, rungs: str, what: str, fmt: str = ",.0f") -> None:
    """A ConfigError where a setting a row (``{run: value}``) differs between the rungs by over
    :data:`ONE_LADDER`: rungs of two configs, whose fit would read the setting's effect as the
    scale's. ``rungs`` names them, ``what`` the setting's unit."""
    if not per_row:
        return
    lo, hi = min(per_row, key=per_row.get), max(per_row, key=per_row.get)
    if per_row[hi] > ONE_LADDER * per_row[lo]:
        raise ConfigError(f"--results: {rungs} are not one ladder: {lo} had {per_row[lo]:{fmt}} {what} a row, "
                          f"{hi} {per_row[hi]:{fmt}}; give the rungs of one config (catbench ladder)")
