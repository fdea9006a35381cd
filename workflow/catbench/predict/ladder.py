"""The ladder: one config's ``predict`` section turned into its rungs' configs (the same
study at smaller row counts with every memory and the input files' count scaled by the rows,
so table ÷ pool, working set ÷ pool, input ÷ sort memory and rows per file match the
target's), and the target's own figures. ``cfg`` is always a validated config, the schema's
defaults in (the command line's ``core.infra.config.load``): a rung is a copy of it."""

from __future__ import annotations

import copy
import re

from ..core.index.table import ENGINES
from ..core.infra.config import ConfigError
from ..core.infra.targets import parse_size

ROWS_PER_OBJECT = 10_088      # index rows per catalog.patch.objects (a whole copy of the patch)
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


def settings(cfg: dict) -> dict:
    """The loads' server options: load.settings over server.settings."""
    return {**((cfg.get("server") or {}).get("settings") or {}), **((cfg.get("load") or {}).get("settings") or {})}


def target_pool(cfg: dict, engine: str = "innodb", rows: float | None = None) -> int:
    """The engine's cache at the target: ``predict.pool_per_row_bytes`` × rows when set, else
    the config's own setting."""
    pred = cfg["predict"]
    rows = rows or pred["target_rows"]
    if pred["pool_per_row_bytes"]:
        return int(pred["pool_per_row_bytes"] * rows)
    var = ENGINES[engine].cache_variable if engine in ENGINES else "innodb_buffer_pool_size"
    value = settings(cfg).get(var)
    if value is None:
        raise ConfigError(f"no {var} in load.settings or server.settings, and no predict.pool_per_row_bytes: "
                          f"the target's pool is unknown")
    return parse_size(value)


def target_level_base(cfg: dict) -> float | None:
    """An LSM's first level at the target: max_bytes_for_level_base of the config's
    rocksdb_default_cf_options (None: RocksDB's default, runs.LEVEL_BASE)."""
    for item in str(settings(cfg).get("rocksdb_default_cf_options") or "").split(";"):
        name, _, val = item.strip().partition("=")
        if name.strip() == "max_bytes_for_level_base" and val.strip():
            return float(parse_size(val.strip().upper()))
    return None


def _kib(n: float, unit: str = "KiB") -> str:
    """A size in whole KiB: ``K`` for a server option, ``KiB`` for load.sort_memory."""
    return f"{max(1, round(n / 1024))}{unit}"


def _scaled_options(value: str, factor: float) -> str:
    """An option string ``name=size;…`` (``rocksdb_default_cf_options``) with every size
    scaled (``write_buffer_size=64m`` → the rung's memtable), counts and words kept."""
    out = []
    for item in (i.strip() for i in value.split(";") if i.strip()):
        name, _, val = (v.strip() for v in item.partition("="))
        if re.fullmatch(r"[0-9]+[kKmMgG]", val):
            val = _kib(parse_size(val.upper()) * factor, "k")
        out.append(f"{name}={val}")
    return ";".join(out)


def rung_config(cfg: dict, k: int, rows: int) -> dict:
    """Rung ``k`` (1-based) of ``cfg``'s ladder at ``rows`` rows: run ``<run>-rung<k>``."""
    pred = cfg["predict"]
    if cfg["index"]["source"] == "file":   # a rung scales the generator's catalog
        raise ConfigError("config key 'index.source': file: a ladder's rungs are smaller generated catalogs, "
                          "not a share of your files; predict from a ladder of index.source: generate with "
                          "the catalog.id_layout closest to your ids")
    objects = max(1, round(rows / ROWS_PER_OBJECT))
    factor = objects * ROWS_PER_OBJECT / pred["target_rows"]
    out = copy.deepcopy(cfg)
    out["run"] = f"{cfg.get('run', 'default')}-rung{k}"
    out.setdefault("catalog", {}).setdefault("patch", {})["objects"] = objects
    load = out.setdefault("load", {})
    load_settings = dict(load.get("settings") or {})
    merged = settings(cfg)
    # an LSM's sizes scale for predict.level_rows: the rung passes as many levels as that table
    lsm = objects * ROWS_PER_OBJECT / (pred["level_rows"] or pred["target_rows"])
    for key in pred["scale_settings"]:
        if key in merged and isinstance(merged[key], str) and "=" in merged[key]:
            load_settings[key] = _scaled_options(merged[key], lsm)
            continue
        if key in merged or pred["pool_per_row_bytes"]:
            full = (pred["pool_per_row_bytes"] * pred["target_rows"] if pred["pool_per_row_bytes"]
                    else parse_size(merged[key]))
            scaled = full * factor
            least, what, why = LEAST.get(key, (0, "", ""))
            if scaled < least:
                raise ConfigError(f"predict.rows: rung {k} ({objects * ROWS_PER_OBJECT:,} rows) would have a "
                                  f"{scaled / 2**20:.1f} MiB {what} ({key}), under a rung's least "
                                  f"({least / 2**20:g} MiB, {why}): it would not behave as the target's; "
                                  f"use more rows in that rung")
            load_settings[key] = _kib(scaled, "K")
    load["settings"] = load_settings
    if pred["scale_sort_memory"]:
        load["sort_memory"] = _kib(max(MIN_SORT_MEMORY, parse_size(cfg["load"]["sort_memory"]) * factor))
    if pred["scale_files"]:
        part = out.setdefault("partition", {})
        part["index_files"] = max(1, round(cfg["partition"]["index_files"] * factor))
    if pred["scale_time_limit"] and load.get("time_limit_s"):
        load["time_limit_s"] = round(load["time_limit_s"] * factor, 3)
    out["predict"] = {**(cfg.get("predict") or {}), "rung": k}
    return out


def rungs(cfg: dict) -> list[dict]:
    """Every rung's config, smallest first."""
    pred = cfg["predict"]
    if not pred["rows"]:
        raise ConfigError("predict.rows: no rungs (give the rows of two or three smaller runs)")
    if max(pred["rows"]) >= pred["target_rows"]:
        raise ConfigError(f"predict.rows: a rung of {max(pred['rows']):,} rows is not smaller than "
                          f"predict.target_rows ({pred['target_rows']:,})")
    out = [rung_config(cfg, k, int(n)) for k, n in enumerate(sorted(pred["rows"]), start=1)]
    objects = [r["catalog"]["patch"]["objects"] for r in out]
    for a, b in zip(objects, objects[1:]):
        if a == b:
            raise ConfigError(f"predict.rows: {sorted(pred['rows'])} make two rungs of the same {a:,} objects "
                              f"({a * ROWS_PER_OBJECT:,} rows; a rung is a whole number of objects of "
                              f"{ROWS_PER_OBJECT:,} rows): give rungs that differ by more")
    return out
