"""What the model reads from a run's result files: per load (target × variant × engine ×
strategy) and repetition, the rate windows over x = table ÷ pool, the time before the first
row and after the last, the rows, seconds and bytes (``summary.json``, ``trace.parquet``),
the insert working set of the variant's input (``index/working_set.json``) and the target's
device figures (``fio/<target>/fio.csv``: a page miss, a sequential pass)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ..core.index.table import ENGINES
from ..core.infra.config.yamlfile import read_json, read_with
from ..core.infra.jobs.isolation import ran_alone, read_record, what_it_met
from ..core.infra.targets import parse_size
from ..core.server.memory import HOLD_MARGIN
from .ladder import buffered, memtables, sst_file

WINDOWS = 32   # rate windows per repetition (non-overlapping runs of input files)
PARQUET_BYTES = 16 * 2**30   # a load's samples and traces: none of catbench's comes near
PAGE = 16384   # InnoDB's page: a device read of a missed leaf
# What a row makes the server write, per window (the sampler's counters; predict/writes.py):
# its redo, the pages its page cleaners flush, and all the device took.
WRITE_COUNTERS = {"redo_bytes": "Innodb_os_log_written", "pages_flushed": "Innodb_buffer_pool_pages_flushed",
                  "device_write_bytes": "dev_write_bytes"}


@dataclass
class LoadRepetition:
    """One repetition of one load at one rung."""
    key: tuple                 # (target, variant, engine, strategy, id_layout)
    run: str
    rows: int
    seconds: float
    stopped: bool
    time_limit_s: float | None
    table_bytes: int
    pool: int
    input_bytes: int
    sort_memory: int
    pre_s: float               # before the first file's rows (scan, sort)
    post_s: float              # after the last file's rows (index build, consolidation)
    server_cpu_s: float | None
    sorts: bool                # the strategy sorts before loading
    in_file_order: bool        # it inserts in the input's order into the final key (summary.json)
    x: np.ndarray = field(repr=False, default=None)        # window midpoints, table ÷ pool
    rate: np.ndarray = field(repr=False, default=None)     # rows/s per window
    weight: np.ndarray = field(repr=False, default=None)   # rows per window
    ws_over_pool: float | None = None
    collapse_expected: bool | None = None
    rung_rows: int = 0         # the input's rows (a stopped load loaded fewer)
    files: int = 0             # the input's files
    rows_by_limit: float | None = None   # a stopped load's rows at its time limit (_rows_by_limit)
    later: tuple | None = None           # (rows/s, x from, x to) over the later half of its rows
    device: dict = field(default_factory=dict)   # the target's fio figures (_device)
    misses: np.ndarray | None = field(repr=False, default=None)   # per window: cache reads from disk per row
    device_reads: np.ndarray | None = field(repr=False, default=None)   # per window: device page reads per row
    buffered: bool = False               # the engine reads through the page cache (_buffered)
    ram: int | None = None               # the server's memory cgroup limit (server.ram), bytes
    n_mid: np.ndarray | None = field(repr=False, default=None)   # per window: rows in the table at its middle
    writes: dict = field(default_factory=dict)   # per window and row: what the server wrote (WRITE_COUNTERS)
    log_bytes: int | None = None         # the redo log's capacity (innodb_log_file_size × files)
    sst_file: float | None = None        # an LSM's SST file size (target_file_size_base; None: RocksDB's)
    memtables: float = 0.0               # an LSM's memtables at most (ladder.memtables; 0: a B-tree)
    table_files: dict | None = None      # the engine's figures of the table's files (MyRocks' SST bytes)
    page_cache_seen: float | None = None # ram less the server's own bytes its cgroup held (median over the load)

    @property
    def lsm(self) -> bool:
        """Its engine is an LSM tree (core/index/table.py ``Engine.lsm``)."""
        return self.key[2] in ENGINES and ENGINES[self.key[2]].lsm

    @property
    def bytes_per_row(self) -> float:
        return self.table_bytes / self.rows

    @property
    def x_final(self) -> float:
        return self.table_bytes / self.pool


def _progress(trace, samples, t0: float):
    """(time, cumulative rows) of one repetition: at every file's end (``trace``) and, where
    the server counts them, at every sample of its rows written (``Handler_write``) while the
    files loaded. A rung that keeps the target's rows per file has few files, and a load its
    time limit stops may end after two of them: the samples see its rate fall inside a file,
    the file ends see a fast first file that ends between two samples."""
    order = np.lexsort((trace["cumulative_rows"], trace["end"]))
    end = np.asarray(trace["end"], float)[order]
    cum = np.asarray(trace["cumulative_rows"], float)[order]
    hw = None if samples is None else samples.get("Handler_write")
    if hw is None or len(hw) == 0 or any(v is None for v in hw):
        return end, cum
    t, hw = np.asarray(samples["time"], float), np.asarray(hw, float)
    before = t <= t0
    base = hw[before][-1] if before.any() else hw[0]
    inside = (t > t0) & (t < end[-1])
    times = np.concatenate([end, t[inside]])
    rows = np.concatenate([cum, np.clip(hw[inside] - base, 0, cum[-1])])
    o = np.argsort(times, kind="stable")
    return times[o], np.maximum.accumulate(rows[o])


def _bounds(trace, t0: float, samples=None):
    """The windows' (start, end) times and (rows at start, rows at end): non-overlapping runs
    of ``len/WINDOWS`` progress points (at least 1; ``_progress``)."""
    end, cum = _progress(trace, samples, t0)
    w = max(1, math.ceil(len(end) / WINDOWS))
    idx = np.arange(w - 1, len(end), w)
    return (np.concatenate([[t0], end[idx[:-1]]]), end[idx],
            np.concatenate([[0.0], cum[idx[:-1]]]), cum[idx], end, cum)


def _windows(trace, t0: float, bpr: float, pool: int, samples=None):
    """Non-overlapping windows (``_bounds``): rate, midpoint x, rows."""
    x, rate, rows, _ = _windows_misses(trace, t0, bpr, pool, samples)
    return x, rate, rows


def _windows_misses(trace, t0: float, bpr: float, pool: int, samples=None, counter: str = ""):
    """``_windows`` and each window's reads of the cache from disk per row (the sampler's
    ``counter`` between the window's ends; None without it)."""
    t1, t2, n1, n2, end, cum = _bounds(trace, t0, samples)
    rows, dt = n2 - n1, t2 - t1
    ok = (rows > 0) & (dt > 0)
    mid_rows = (n2 + n1) / 2
    size = _table_size(samples, np.interp(mid_rows, np.append(0.0, cum), np.append(t0, end)))
    mid = (mid_rows * bpr if size is None else size) / pool
    misses = _per_row(samples, counter, (t1, t2), rows, ok)
    return mid[ok], (rows / np.where(dt > 0, dt, 1))[ok], rows[ok], misses


def _window_writes(trace, t0: float, samples) -> tuple[np.ndarray, dict]:
    """Each window's rows in the table at its middle (how deep the tree is), and what a row made
    the server write there (``WRITE_COUNTERS`` the sampler has, per row; the checkpoint age's
    largest value in the window, bytes)."""
    t1, t2, n1, n2, _, _ = _bounds(trace, t0, samples)
    rows, dt = n2 - n1, t2 - t1
    ok = (rows > 0) & (dt > 0)
    out = {k: v for k, c in WRITE_COUNTERS.items()
           if (v := _per_row(samples, c, (t1, t2), rows, ok)) is not None}
    age = None if samples is None else samples.get("Innodb_checkpoint_age")
    if age is not None and len(age) and not any(v is None for v in age):
        t, age = np.asarray(samples["time"], float), np.asarray(age, float)
        out["checkpoint_age_bytes"] = np.array([age[(t >= a) & (t <= b)].max(initial=0.0)
                                                for a, b in zip(t1[ok], t2[ok])])
    return ((n1 + n2) / 2)[ok], out


def _per_row(samples, column: str, times: tuple, rows, ok, unit: float = 1.0):
    """The sampler's ``column`` between each window's ends (``times``) per row, in ``unit``s;
    None without it."""
    values = None if samples is None or not column else samples.get(column)
    if values is None or len(values) < 2 or any(v is None for v in values):
        return None
    t, values = np.asarray(samples["time"], float), np.asarray(values, float)
    t1, t2 = times
    return ((np.interp(t2, t, values) - np.interp(t1, t, values)) / unit / np.where(rows > 0, rows, 1))[ok]


def _device_reads(trace, t0: float, samples, blocks: bool = False) -> np.ndarray | None:
    """Each window's pages read from the target's device per row (``dev_read_bytes`` ÷ 16 KiB;
    ``blocks``: an LSM's reads, one a block, ``dev_read_ios``): the misses the page cache did not
    serve."""
    t1, t2, n1, n2, _, _ = _bounds(trace, t0, samples)
    rows, dt = n2 - n1, t2 - t1
    column, unit = ("dev_read_ios", 1.0) if blocks else ("dev_read_bytes", PAGE)
    return _per_row(samples, column, (t1, t2), rows, (rows > 0) & (dt > 0), unit)


def _table_size(samples, times) -> np.ndarray | None:
    """The table's bytes at ``times`` (the sampler's, between its samples), or None without
    them. A window's x is the table's size then, not its rows × the bytes per row at the
    end: a small table's file holds more than its rows (pages preallocated, half-full
    pages of the first splits), so by the bytes per row at the end a 2.5 M-row rung's
    collapse seemed to come at a smaller table ÷ pool than a 10 M-row rung's, which the scale
    term then read as a rate rising with N."""
    tb = None if samples is None else samples.get("table_bytes")
    if tb is None or len(tb) < 2 or any(v is None for v in tb):
        return None
    return np.interp(times, np.asarray(samples["time"], float), np.asarray(tb, float))


def _rows_by_limit(trace, samples, t0: float, at: float) -> float:
    """The rows loaded at time ``at`` (a stopped load's start + its limit), between the
    progress points (``_progress``). The load checks its limit before each file, so its rows
    are whole files and the last one ran past the limit: by up to 4.6 % more rows than by
    the limit in a 10^7-row rung of 24 s, 42 % in a 6 s one of two files."""
    end, cum = _progress(trace, samples, t0)
    return float(np.interp(at, np.append(t0, end), np.append(0.0, cum)))


def _later_half(trace, samples, t0: float, end_rows: float, bpr: float, pool: int) -> tuple | None:
    """(rows/s, x at its start, x at its end) over the later half of the rows a repetition
    loaded (to ``end_rows``: its rows at the time limit when stopped): the rate after a
    collapse, which the totals can hide (most rows of a stopped load may come before it)."""
    end, cum = _progress(trace, samples, t0)
    t, n = np.append(t0, end), np.append(0.0, cum)
    if end_rows <= 0 or len(t) < 2:
        return None
    t1, t2 = np.interp([end_rows / 2, end_rows], n, t)
    if t2 <= t1:
        return None
    size = _table_size(samples, np.array([t1, t2]))
    x = (np.array([end_rows / 2, end_rows]) * bpr if size is None else size) / pool
    return float(end_rows / 2 / (t2 - t1)), float(x[0]), float(x[1])


def device(results: Path, target: str) -> dict:
    """The target's fio figures a prediction uses (medians over repetitions): ``page_read_s``
    and ``page_write_s`` (a random 16 KiB read or write at queue depth 1, mean latency),
    ``cache_read_s`` (the same read from the page cache: a buffered pool miss RAM still holds) and
    ``seq_s_per_byte`` (one byte written then read back sequentially: a spill pass),
    ``seq_write_s_per_byte`` (the redo log's writes); {}
    without the fio stage."""
    p = results / "fio" / target / "fio.csv"
    if not p.exists() and not p.is_symlink():
        return {}
    rows = read_with(pacsv.read_csv, p, "a target's fio figures", "fio.csv as catbench wrote it (run fio again)"
                     ).to_pylist()

    def med(test, col):
        v = [r[col] for r in rows if r.get("test") == test and r.get(col) not in (None, 0)]
        return float(np.median(v)) if v else None

    out = {"page_read_s": med("page-read", "clat_mean_us"), "page_write_s": med("page-write", "clat_mean_us"),
           "cache_read_s": med("cache-read", "clat_mean_us")}
    out = {k: v / 1e6 for k, v in out.items() if v}
    w, r = med("seq-write", "MBps"), med("seq-read", "MBps")
    if w and r:
        out["seq_s_per_byte"] = 1 / (w * 1e6) + 1 / (r * 1e6)
    if w:
        out["seq_write_s_per_byte"] = 1 / (w * 1e6)
    return out


FIGURES = {"page_read_us": "page_read_s", "page_write_us": "page_write_s", "cache_read_us": "cache_read_s"}


def device_figures(doc, path) -> dict:
    """A device's published figures (``catbench predict --device``, resources/devices/*.yaml:
    ``page_read_us``, ``page_write_us``, ``seq_read_MBps``, ``seq_write_MBps``, optionally
    ``cache_read_us``) as ``device()`` gives a target's fio figures; a ValueError naming the file
    and the key otherwise."""
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: not a mapping of a device's figures (page_read_us, page_write_us, "
                         f"seq_read_MBps, seq_write_MBps)")
    def num(key):
        v = doc.get(key)
        try:   # YAML reads 1e308 (no dot) as text: a number all the same
            f = float(v) if isinstance(v, str) else v
        except ValueError:
            f = None
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not math.isfinite(f) or not f > 0:
            raise ValueError(f"{path}: '{key}' must be a positive finite number (got {v!r})")
        return float(f)
    out = {FIGURES[k]: num(k) / 1e6 for k in FIGURES if k != "cache_read_us" or k in doc}
    w, r = num("seq_write_MBps"), num("seq_read_MBps")
    unknown = sorted(set(doc) - set(FIGURES) - {"name", "seq_read_MBps", "seq_write_MBps"})
    if unknown:
        raise ValueError(f"{path}: unknown key(s) {', '.join(unknown)}")
    return {**out, "seq_s_per_byte": 1 / (w * 1e6) + 1 / (r * 1e6), "seq_write_s_per_byte": 1 / (w * 1e6)}


def _pool(summary: dict, engine: str) -> int | None:
    var = ENGINES[engine].cache_variable if engine in ENGINES else "innodb_buffer_pool_size"
    v = ((summary.get("server") or {}).get("variables") or {}).get(var)
    return int(v) if v not in (None, "") else None


def working_set(results: Path) -> dict:
    return read_json(results / "index" / "working_set.json", "the index's working set",
                     "a working set catbench wrote", missing_ok=True) or {}


def _rep(summary: dict, r: dict, series: tuple, key: tuple, run: str, pool: int, ws: dict,
         dev: dict | None = None) -> LoadRepetition | None:
    """One repetition's LoadRepetition; ``series``: its (trace, samples) columns (samples may be None)."""
    trace, samples = series
    rows, tb = int(r.get("rows") or 0), int(r.get("table_bytes") or summary.get("table_bytes") or 0)
    if rows <= 0 or tb <= 0 or trace is None or len(trace["end"]) == 0:
        return None
    phases = r.get("phases") or []
    first, last = float(np.min(trace["start"])), float(np.max(trace["end"]))
    begin = min((float(p["start"]) for p in phases), default=first)
    seconds = float(r.get("seconds") or (last - begin))
    pre = max(0.0, first - begin)
    post = max(0.0, seconds - (last - begin))
    counter = ENGINES[key[2]].miss_counter if key[2] in ENGINES else ""
    x, rate, wt, misses = _windows_misses(trace, first, tb / rows, pool, samples, counter)
    v = (ws.get("variants") or {}).get(key[1]) or {}
    opts = summary.get("options") or {}
    limit = summary.get("time_limit_s")
    by_limit = _rows_by_limit(trace, samples, first, begin + limit) if r.get("stopped") and limit else None
    later = _later_half(trace, samples, first, rows if by_limit is None else by_limit, tb / rows, pool)
    buffered = _buffered(summary, key[2])
    server = summary.get("server") or {}
    settings, ram, held = server.get("settings") or {}, server.get("ram"), server.get("page_cache")
    n_mid, writes = _window_writes(trace, first, samples)
    rep = LoadRepetition(key=key, run=run, rows=rows, seconds=seconds, stopped=bool(r.get("stopped")), time_limit_s=limit,
              table_bytes=tb, pool=pool, input_bytes=int(summary.get("input_bytes") or 0),
              sort_memory=parse_size(opts.get("sort_memory") or "1GB"), pre_s=pre, post_s=post,
              server_cpu_s=r.get("server_cpu_s"), sorts=float(r.get("sort_seconds") or 0) > 0,
              in_file_order=bool(summary["in_file_order"]), x=x, rate=rate, weight=wt,
              ws_over_pool=v.get("working_set_over_pool"), collapse_expected=v.get("collapse_expected"),
              rung_rows=int(ws.get("rows") or 0) if r.get("stopped") and ws.get("rows") else rows,
              files=int(summary.get("files") or 0), rows_by_limit=by_limit, later=later, device=dev, misses=misses,
              buffered=buffered, ram=ram, n_mid=n_mid, writes=writes, log_bytes=_log_bytes(summary),
              sst_file=sst_file(settings), memtables=memtables(key[2], settings),
              table_files=r.get("table_files") or summary.get("table_files"),
              # server.page_cache: a rung's, held
              page_cache_seen=float(held) + HOLD_MARGIN if held else _page_cache_seen(samples, ram))
    rep.device_reads = _device_reads(trace, first, samples, rep.lsm) if buffered else misses
    return rep


def _page_cache_seen(samples, ram: int | None) -> float | None:
    """The RAM the page cache had beside the server (``server.ram`` less the server's own bytes
    its memory cgroup held, the median of the load's samples); None without them. A rung's own
    memory is not the ``predict.ram_own`` its RAM was given: what is left went to its pages."""
    own = None if samples is None or not ram else samples.get("ram_own_bytes")
    if own is None or not len(own) or any(v is None for v in own):
        return None
    return max(0.0, float(ram) - float(np.median(np.asarray(own, float))))


def _log_bytes(summary: dict) -> int | None:
    """The redo log's bytes: innodb_log_file_size × innodb_log_files_in_group (1 where the server
    has one file)."""
    v = (summary.get("server") or {}).get("variables") or {}
    size = v.get("innodb_log_file_size")
    return int(size) * int(v.get("innodb_log_files_in_group") or 1) if size not in (None, "") else None


def _buffered(summary: dict, engine: str) -> bool:
    return buffered(engine, ((summary.get("server") or {}).get("variables") or {}).get("innodb_flush_method"))


def _columns(path: Path, cols) -> dict | None:
    """``cols`` of a parquet file, those it has, and its ``repetition``; None without the file."""
    if not path.exists() and not path.is_symlink():
        return None
    table = read_with(pq.read_table, path, "a load's results", "a Parquet file catbench wrote (run the load again)",
                      PARQUET_BYTES)   # a link to a device or a FIFO is never handed to the reader
    return table.select([c for c in (*cols, "repetition") if c in table.column_names]).to_pydict()


def _of_rep(table: dict | None, rep_no: int) -> dict | None:
    """Every column but ``repetition`` of one repetition's rows (all rows where the table
    has no ``repetition``), or None."""
    n = len(next(iter(table.values()), [])) if table else 0
    sel = [j for j, v in enumerate(table.get("repetition") or [0] * n) if v == rep_no] if n else []
    return {c: np.asarray(v)[sel] for c, v in table.items() if c != "repetition"} if sel else None


def read_run(results, skipped: list | None = None) -> list[LoadRepetition]:
    """Every load repetition of one run's results directory (``results/<run>``) whose job ran
    alone (its isolation.json, judged as compare judges it); each load that did not is left
    out and named in ``skipped`` ({run, load, met})."""
    results = Path(results)
    if not results.is_dir():
        raise FileNotFoundError(f"{results}: no such results directory")
    ws = working_set(results)
    layout = ws.get("id_layout") or "unknown"
    if ws.get("order") not in (None, "generation"):   # the key order is the ids' layout and their arrival
        layout = f"{layout} ({ws['order']} order)"
    devices: dict = {}
    out: list[LoadRepetition] = []
    for path in sorted(results.glob("load/*/*/*/*/summary.json")):
        target, variant, engine, strategy = path.parent.parts[-4:]
        if any(part.startswith(".") for part in (target, variant, engine, strategy)):
            continue    # a job's unfinished output (core/infra/files.py staged_output), not a load
        rec = read_record(path.parent)
        if rec is not None and not ran_alone(rec):   # its rates carry another job's load
            if skipped is not None:
                skipped.append({"run": results.name, "load": "/".join((target, variant, engine, strategy)),
                                "met": what_it_met(rec), "path": str(path.parent)})
            continue
        summary = _summary(path)
        pool = _pool(summary, engine)
        tr = _columns(path.parent / "trace.parquet", ("start", "end", "cumulative_rows"))
        if pool is None or tr is None:
            continue
        # what the windows read of the sampler (_progress, _table_size)
        sm = _columns(path.parent / "samples.parquet", ("time", "Handler_write", "table_bytes", "dev_read_bytes",
                                                        "dev_read_ios", "ram_own_bytes",
                                                        "Innodb_checkpoint_age", *WRITE_COUNTERS.values(),
                                                        *sorted({e.miss_counter for e in ENGINES.values()
                                                                 if e.miss_counter})))
        reps = summary.get("repetitions") or [summary]
        key = (target, variant, engine, strategy, layout)
        if target not in devices:    # one fio.csv per target, read once
            devices[target] = device(results, target)
        for i, r in enumerate(reps):
            rep_no = r.get("repetition", i)
            _numbers(path, f"repetition {rep_no}", {**summary, **r})
            rep = _rep(summary, r, (_of_rep(tr, rep_no), _of_rep(sm, rep_no)), key, results.name, pool, ws,
                       devices[target])
            if rep is not None:
                out.append(rep)
    return out


# what _rep reads as numbers of a summary, or of its repetitions over it
NUMBERS = ("rows", "seconds", "table_bytes", "sort_seconds", "server_cpu_s", "input_bytes", "files", "time_limit_s")


def _numbers(path: Path, where: str, doc: dict) -> None:
    """A ValueError naming the file, the repetition and the key of a figure that is no number."""
    for k in NUMBERS:
        v = doc.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise ValueError(f"{path}: {where}: {k} is {v!r}, not a number; run the load again")


def _summary(path: Path) -> dict:
    """A load's summary.json, or a ValueError naming the file."""
    try:
        doc = read_json(path, "a load's results", "a load summary catbench wrote")
    except ValueError as exc:
        raise ValueError(f"{path}: not a load summary ({exc}); run the load again") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("repetitions", []), list):
        raise ValueError(f"{path}: not a load summary (a JSON object with its repetitions); run the load again")
    if "in_file_order" not in doc:   # the strategy's fact the model's form rests on
        raise ValueError(f"{path}: does not say whether its load inserts in the input's order (in_file_order), "
                         "as an older catbench wrote it; run the load again")
    return doc


def read_runs(paths, skipped: list | None = None) -> dict[tuple, list[LoadRepetition]]:
    """The repetitions of several runs, grouped by (target, variant, engine, strategy, id_layout).
    A run named twice is read once: its repetitions are not more evidence the second time.
    ``skipped``: the loads that did not run alone (``read_run``)."""
    groups: dict[tuple, list[LoadRepetition]] = {}
    seen: set = set()
    for p in paths:
        real = Path(p).resolve()
        if real in seen:
            continue
        seen.add(real)
        for rep in read_run(p, skipped):
            groups.setdefault(rep.key, []).append(rep)
    return groups
