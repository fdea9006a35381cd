"""What the scale model reads of a validated config (its ``predict`` section and the load's
figures at the target, the schema's defaults filled in at the CLI), and the ladder's rungs'
configs written from it, the run's own ladder's too (stage ``predict``: ``InRun``): the rest of
``predict/`` reads these, never the config."""

from __future__ import annotations

import copy
import dataclasses
import shlex
from dataclasses import dataclass

from ..core.index.engines import btrees
from ..core.index.table import ENGINES
from ..core.infra.config import ConfigError, ladder_targets
from ..core.infra.targets import parse_size
from ..core.sky.copies import catalog_objects
from .ladder import (LEAST, MIN_SORT_MEMORY, buffered, check_objects, check_rows, kib, memtables,
                     page_cache_left,
                     scaled_options, scaled_size, sst_file)


@dataclass(frozen=True)
class Fitting:
    """How a ladder is fitted and its interval drawn (predict.min_rungs, x_margin, bootstrap,
    run_noise, confidence)."""
    min_rungs: int
    x_margin: float
    bootstrap: int
    run_noise: float
    confidence: float
    own_check: bool = True     # the interval carries the ladder's own miss on its largest rung
    seed: int = 0              # the bootstrap's random numbers
    ram_own: int = 0           # predict.ram_own: a rung's RAM that is neither its pool nor page cache

    def replace(self, **kw) -> Fitting:
        return dataclasses.replace(self, **kw)


@dataclass(frozen=True)
class PredictSpec:
    """The ladder (predict.rows and what a rung scales) and the target: its rows, its cache,
    and the load's figures there (load.sort_memory, load.time_limit_s, partition.index_files)."""
    run: str
    rows: tuple[int, ...]              # predict.rows: the rungs' index rows
    target_rows: int
    pool_per_row_bytes: float | None   # None: the settings' cache is the target's
    below_rate: float | None
    scale_settings: tuple[str, ...]
    level_rows: int | None             # None: target_rows
    scale_sort_memory: bool
    scale_files: bool
    scale_time_limit: bool
    downtime_share: float              # the largest restart rung's time down ÷ the target's
    fitting: Fitting
    settings: dict                     # load.settings over server.settings
    sort_memory: int                   # load.sort_memory, bytes
    time_limit_s: float | None         # load.time_limit_s, written for target_rows
    index_files: int                   # partition.index_files
    source: str                        # index.source
    rows_per_object: float             # index rows a catalog.patch.objects gives on the config's sky
    ram: int | None = None             # server.ram: the target's RAM for the server and its page cache
    ram_own: int = 0                   # predict.ram_own: added to every rung's scaled RAM

    @classmethod
    def of(cls, cfg: dict) -> PredictSpec:
        """From a validated config's ``predict``, ``load``, ``server``, ``partition`` and
        ``index`` sections."""
        pred, load = cfg["predict"], cfg["load"]
        return cls(run=cfg["run"], rows=tuple(pred["rows"]), target_rows=pred["target_rows"],
                   pool_per_row_bytes=pred["pool_per_row_bytes"], below_rate=pred["below_rate"],
                   scale_settings=tuple(pred["scale_settings"]), level_rows=pred["level_rows"],
                   scale_sort_memory=pred["scale_sort_memory"], scale_files=pred["scale_files"],
                   scale_time_limit=pred["scale_time_limit"], downtime_share=pred["downtime_share"],
                   fitting=Fitting(pred["min_rungs"], pred["x_margin"], pred["bootstrap"], pred["run_noise"],
                                   pred["confidence"], ram_own=parse_size(pred["ram_own"])),
                   settings={**cfg["server"]["settings"], **(load["settings"] or {})},
                   sort_memory=parse_size(load["sort_memory"]), time_limit_s=load["time_limit_s"],
                   index_files=cfg["partition"]["index_files"], source=cfg["index"]["source"],
                   rows_per_object=catalog_objects(cfg["catalog"]) / cfg["catalog"]["patch"]["objects"],
                   ram=parse_size(cfg["server"]["ram"]) if cfg["server"].get("ram") else None,
                   ram_own=parse_size(pred["ram_own"]))

    def target_pool(self, engine: str = "innodb", rows: float | None = None) -> int:
        """The engine's cache at the target: ``pool_per_row_bytes`` × rows when set, else the
        settings' own."""
        rows = rows or self.target_rows
        if self.pool_per_row_bytes:
            return int(self.pool_per_row_bytes * rows)
        var = ENGINES[engine].cache_variable if engine in ENGINES else "innodb_buffer_pool_size"
        value = self.settings.get(var)
        if value is None:
            raise ConfigError(f"no {var} in load.settings or server.settings, and no predict.pool_per_row_bytes: "
                              f"the target's pool is unknown")
        return parse_size(value)

    def page_cache(self, engine: str, pool: float, ram: float | None) -> float:
        """Bytes of ``ram`` (--ram, or server.ram) left for the table's pages beside the
        pool, an LSM's memtables and the server's own memory, where the engine reads through
        the page cache."""
        ram = ram or self.ram
        if not ram or not buffered(engine, self.settings.get("innodb_flush_method")):
            return 0.0
        return page_cache_left(ram, pool=pool, memtable_bytes=memtables(engine, self.settings), own=self.ram_own)

    @property
    def sst_file(self) -> float | None:
        """An LSM's SST file size at the target (None: RocksDB's default)."""
        return sst_file(self.settings)

    def rung_settings(self, own: dict, k: int, objects: int) -> dict:
        """Rung ``k``'s load.settings: ``own`` (the config's) with each of scale_settings scaled
        by the rung's rows (an LSM's sizes by level_rows)."""
        factor = objects * self.rows_per_object / self.target_rows
        lsm = objects * self.rows_per_object / (self.level_rows or self.target_rows)
        out = dict(own)
        for key in self.scale_settings:
            value = self.settings.get(key)
            if isinstance(value, str) and "=" in value:
                out[key] = scaled_options(value, lsm)
            elif key in self.settings or self.pool_per_row_bytes:
                full = (self.pool_per_row_bytes * self.target_rows if self.pool_per_row_bytes
                        else parse_size(value))
                out[key] = scaled_size(key, full * factor, k, objects * self.rows_per_object)
        return out


@dataclass(frozen=True)
class Rung:
    """A rung's config file as ``catbench ladder`` writes it (a whole config: base null) and
    the figures it says of it."""
    run: str
    objects: int                # catalog.patch.objects
    index_files: int
    settings: dict              # its load.settings
    sort_memory: str
    time_limit_s: float | None
    file: dict

    @classmethod
    def of(cls, rung: dict) -> Rung:
        """From one of :func:`rungs`."""
        load = rung.get("load") or {}
        return cls(rung["run"], rung["catalog"]["patch"]["objects"], rung["partition"]["index_files"],
                   load.get("settings"), load.get("sort_memory"), load.get("time_limit_s"), {**rung, "base": None})


def _rung_config(cfg: dict, spec: PredictSpec, k: int, rows: int) -> dict:
    """Rung ``k`` (1-based) of ``cfg``'s ladder at ``rows`` rows: run ``<run>-rung<k>``, a
    copy of the validated ``cfg`` (``spec``: its own)."""
    if spec.source == "file":   # a rung scales the generator's catalog
        raise ConfigError("config key 'index.source': file: a ladder's rungs are smaller generated catalogs, "
                          "not a share of your files; predict from a ladder of index.source: generate with "
                          "the catalog.id_layout closest to your ids")
    objects = max(1, round(rows / spec.rows_per_object))   # the sky's copies (and density) make a row
    factor = objects * spec.rows_per_object / spec.target_rows
    out = copy.deepcopy(cfg)
    out["run"] = f"{spec.run}-rung{k}"
    out["catalog"]["patch"]["objects"] = objects
    load = out["load"]
    load["settings"] = spec.rung_settings(load["settings"] or {}, k, objects)
    if spec.scale_sort_memory:
        load["sort_memory"] = kib(max(MIN_SORT_MEMORY, spec.sort_memory * factor))
    if spec.ram:
        _rung_ram(out["server"], spec, cfg["load"]["engines"], factor)
    if spec.scale_files:
        out["partition"]["index_files"] = max(1, round(spec.index_files * factor))
    if spec.scale_time_limit and spec.time_limit_s:
        load["time_limit_s"] = round(spec.time_limit_s * factor, 3)
    if {"restart", "cluster"} & set(cfg["stages"]):
        _rung_restart(out, spec, factor, k, objects)
    elif "queries" in cfg["stages"] and "load_index" not in cfg["stages"]:
        # a query ladder: the query server's pool and redo × the rows, so that each rung's chunk
        # tables outgrow its cache as a node's do (the loads' own servers keep load.settings)
        out["server"]["settings"] = _scaled_settings(out["server"]["settings"], spec, factor, k, objects)
    out["predict"] = {**cfg["predict"], "rung": k}
    return out


def _scaled_settings(settings: dict, spec: PredictSpec, factor: float, k: int, objects: int) -> dict:
    """``settings`` with each size of predict.scale_settings it holds × ``factor``."""
    return {key: scaled_size(key, parse_size(val) * factor, k, objects * spec.rows_per_object)
            if key in spec.scale_settings and not (isinstance(val, str) and "=" in val) else val
            for key, val in settings.items()}


def _rung_restart(out: dict, spec: PredictSpec, factor: float, k: int, objects: int) -> None:
    """A restart study's rung: the server's (and the restart's and the cluster's own) pool,
    redo log and the page cleaners' free-page depth × the rows, so that each restart phase's
    driving quantity is the target's scaled copy; the time a node is down (so the write sets it
    misses, and the gcache that holds them) spans the rungs' ratio from predict.downtime_share
    of the target's at the largest rung."""
    for part in (out["server"], out["restart"], out["cluster"]):
        part["settings"] = _scaled_settings(part["settings"], spec, factor, k, objects)
        if part is out["server"] or "innodb_lru_scan_depth" in part["settings"]:   # where a depth is set
            _scale_lru_depth(part["settings"], factor)
    down = spec.downtime_share * spec.target_rows * factor / max(spec.rows)
    cluster = out["cluster"]
    cluster["gcache_size"] = kib(max(2 ** 20, parse_size(cluster["gcache_size"]) * down), "K")
    cluster["load"]["down_s"] = round(cluster["load"]["down_s"] * down, 3)


# MariaDB's default and least innodb_lru_scan_depth (pages the page cleaners keep free at the
# LRU's tail, each second)
LRU_SCAN_DEPTH, LRU_SCAN_DEPTH_MIN = 1536, 100


def _scale_lru_depth(settings: dict, factor: float) -> None:
    """The pages the page cleaners keep free, × the rows like the pool: 1,536 by default is the
    whole pool of a rung of a few MiB, whose cleaners then write every dirty page each second and
    keep its checkpoint young where the target's keep theirs dirty until the redo log forces a
    flush (a 10 MiB rung's kills left 0.11-0.59 of its log at 6,700 pages flushed a second, with
    100 pages 0.58-0.66 at 3,900; a 512 MiB pool's 0.74-0.76)."""
    depth = int(settings.get("innodb_lru_scan_depth", LRU_SCAN_DEPTH))
    settings["innodb_lru_scan_depth"] = max(LRU_SCAN_DEPTH_MIN, round(depth * factor))


def _rung_ram(server: dict, spec: PredictSpec, engines: list, factor: float) -> None:
    """A rung's memory: where an engine reads through the page cache, the target's page cache
    (server.ram less the pool, memtables and predict.ram_own) × the rows, held beside whatever
    the rung's server holds (server.page_cache): a rung's own memory is most of its RAM and not
    the target's, and what a RAM limit left over went to its pages. Else its RAM scaled but the
    server's own."""
    pages = {e: spec.page_cache(e, spec.target_pool(e), None) for e in engines
             if buffered(e, spec.settings.get("innodb_flush_method"))}
    if len(set(pages.values())) > 1:
        raise ConfigError(f"server.ram: the engines {', '.join(pages)} would leave the page cache different "
                          f"bytes ({', '.join(f'{e} {v / 2**20:,.0f} MiB' for e, v in pages.items())}), which one "
                          f"rung holds at one size: give each its own config (load.engines)")
    if pages:
        server.update(ram=None, page_cache=kib(max(2 ** 20, next(iter(pages.values())) * factor), "K"))
    else:
        server["ram"] = kib(max(0, spec.ram - spec.ram_own) * factor + spec.ram_own)


# MyRocks loads that never meet its LSM's memtables and levels: bulk writes SST files itself and
# checks no key, so its rungs keep the config's LSM sizes (a memtable shrunk for 10^10 rows made
# every bulk rung slower than the target).
LSM_FREE = ("bulk",)
LSM_OPTIONS = "rocksdb_default_cf_options"


def _split_lsm(rung: dict, cfg: dict) -> list[dict]:
    """``rung`` as one config, or two where its LSM sizes are scaled and MyRocks also runs an
    LSM-free strategy: that one in ``<run>-config-lsm`` with the config's own sizes, skipped in
    ``rung``, which is left out if nothing else runs in it."""
    load = rung["load"]
    own = (cfg["load"].get("settings") or {}).get(LSM_OPTIONS)
    free = [s for s in load["strategies"] if s in LSM_FREE and f"rocksdb/{s}" not in load["skip"]]
    if "rocksdb" not in load["engines"] or not free or load["settings"].get(LSM_OPTIONS) == own:
        return [rung]
    kept = copy.deepcopy(rung)
    kept["run"] = f"{rung['run']}-config-lsm"
    kept["load"].update(engines=["rocksdb"], strategies=free, skip=[])
    kept["load"]["settings"] = {k: v for k, v in load["settings"].items() if k != LSM_OPTIONS}
    if own is not None:
        kept["load"]["settings"][LSM_OPTIONS] = own
    load["skip"] = sorted({*load["skip"], *(f"rocksdb/{s}" for s in free)})
    left = {f"{e}/{s}" for e in load["engines"] for s in load["strategies"]} - set(load["skip"])
    return [rung, kept] if left else [kept]


def rungs(cfg: dict) -> list[dict]:
    """Every rung's config of the validated ``cfg``, smallest first (a rung's LSM-free loads in
    a config of their own: ``_split_lsm``)."""
    spec = PredictSpec.of(cfg)
    check_rows(spec.rows, spec.target_rows)
    out = [_rung_config(cfg, spec, k, int(n)) for k, n in enumerate(sorted(spec.rows), start=1)]
    check_objects(spec.rows, [r["catalog"]["patch"]["objects"] for r in out], spec.rows_per_object)
    return [part for r in out for part in _split_lsm(r, cfg)]


@dataclass(frozen=True)
class RestartTarget:
    """The restart study's node at the target, as its config sets it (the restart's settings
    over the server's, the cluster's gcache and the time a node is kept down): what
    ``catbench predict`` answers for when no --data, --pool, --redo, --gcache or --downtime is given."""
    rows: int                     # predict.target_rows: the data follows the rungs' bytes a row
    pool: int | None
    redo_log: int | None
    gcache: int
    downtime_s: float

    @classmethod
    def of(cls, cfg: dict) -> RestartTarget:
        settings = {**cfg["server"]["settings"], **cfg["restart"]["settings"]}
        size = (lambda k: parse_size(str(settings[k])) if settings.get(k) is not None else None)  # noqa: E731
        return cls(cfg["predict"]["target_rows"], size("innodb_buffer_pool_size"), size("innodb_log_file_size"),
                   parse_size(cfg["cluster"]["gcache_size"]), float(cfg["cluster"]["load"]["down_s"]))


# ------------------------------------------------ the run's own ladder (stage predict)
@dataclass(frozen=True)
class InRun:
    """The run's own ladder (stage ``predict``): the run's loads are its smallest rung; each of
    predict.in_run.factors is one more rung, a run of its own (``<run>-rung<k>``, its loads only,
    on predict.in_run.targets) at that multiple of the run's index rows with every scaled memory,
    the sort memory and the input files scaled alike (``rung_config``). The loads are then
    predicted at predict.target_rows with the run's cache a row (``pool``)."""
    run: str
    rows: int                     # the run's index rows: its smallest rung
    factors: tuple[int, ...]      # predict.in_run.factors
    targets: tuple[str, ...]      # predict.in_run.targets, null: the run's first
    repetitions: int              # predict.in_run.repetitions: each rung's load.repetitions
    target_rows: int              # predict.target_rows: the rows the loads are predicted at
    pool: int | None              # the cache there (catbench predict --pool): the run's × target ÷ its rows;
                                  # None where predict.pool_per_row_bytes gives it

    @classmethod
    def of(cls, cfg: dict) -> InRun:
        """From a validated config whose stages hold ``predict`` (checked here: ConfigError)."""
        pred = cfg["predict"]
        own = pred["in_run"]
        if "load_index" not in cfg["stages"]:
            raise ConfigError("config key 'stages': the predict stage ladders the run's loads, so it needs "
                              "load_index too")
        if cfg["index"]["source"] == "file" or cfg["catalog"]["patch"]["file"]["paths"]:
            raise ConfigError("config key 'stages': the predict stage ladders the run's loads on larger generated "
                              "catalogs, which your own files (index.file, catalog.patch.file) cannot give; remove "
                              "predict from stages, or ladder a generated catalog like yours (`make ladder`)")
        targets = tuple(ladder_targets(cfg))
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
        engines = btrees(cfg["load"]["engines"])
        if not engines:
            raise ConfigError("config key 'load.engines': the predict stage ladders B-tree loads (an LSM's rungs keep "
                              "the config's LSM apart: `make ladder`); add innodb or myisam, or remove predict from stages")
        return cls(cfg["run"], rows, tuple(sorted(own["factors"])), targets, own["repetitions"],
                   pred["target_rows"], _pool(spec, engines, pred["target_rows"], rows))

    def rung_runs(self) -> list[str]:
        """The rungs' runs past the run itself (rung 1), smallest first."""
        return [f"{self.run}-rung{k}" for k in range(2, 2 + len(self.factors))]


def query_args(cfg: dict) -> str:
    """The predict stage's query flags of ``catbench predict`` (predict.queries; the run's own
    query results are its rung): '' where the run has no stage ``queries``."""
    if "queries" not in cfg["stages"]:
        return ""
    own = cfg["predict"]["queries"]
    objects = own["objects"] if own["objects"] is not None else cfg["predict"]["target_rows"]
    flags = {"--nodes": own["nodes"], "--objects": f"{objects:.17g}", "--chunks": own["chunks"],
             "--sources-per-object": own["sources_per_object"], "--object-bytes": own["object_bytes"],
             "--node-ram": own["ram"], "--workers": own["workers"]}
    return " ".join(f"{k} {shlex.quote(str(v))}" for k, v in flags.items() if v is not None)


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
    base["load"].update(repetitions=own.repetitions, max_repetitions=None)   # a rung repeats as asked, no pilot
    base["load"]["engines"] = btrees(cfg["load"]["engines"])
    # the run's rows are the ladder's reference: a rung scales its memories by rows ÷ the run's
    base["predict"] = {**cfg["predict"], "target_rows": own.rows, "pool_per_row_bytes": None,
                       "rows": [own.rows * f for f in own.factors]}
    if base["index"]["source"] == "partition":   # the generator writes the partition's index files
        base["index"]["source"] = "generate"
    rung = _rung_config(base, PredictSpec.of(base), k, own.rows * own.factors[k - 2])
    rung["predict"] = {**cfg["predict"], "rung": k}
    return rung


def _pool(spec: PredictSpec, engines: list[str], target_rows: int, rows: int) -> int | None:
    """The cache at the target: the run's own × target rows ÷ the run's ``rows``; None where
    predict.pool_per_row_bytes gives it. ConfigError when ``engines`` (those the rungs load)
    have caches of different sizes (one --pool cannot say both)."""
    if spec.pool_per_row_bytes:
        return None
    sizes = {spec.target_pool(e) for e in engines}
    if len(sizes) != 1:
        raise ConfigError("config key 'predict.pool_per_row_bytes': the run's laddered engines have caches of "
                          "different sizes; give the cache a row at the target")
    return round(sizes.pop() * target_rows / rows)
