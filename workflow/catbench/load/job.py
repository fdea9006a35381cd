"""What a loading strategy is given and what it hands back.

``LoadOptions`` are the strategies' knobs, part of the job's ``LoadSpec`` (spec.py); ``LoadJob`` is one load (server,
table, variant, validated input, scratch dir); ``Outcome`` is its result: the per-file
trace, the input's FileInfos (rows and checksums the driver compares with the table),
the timed phases and strategy details. ``LoadWatch`` is its clock (files, rows, the time
limit); ``LoadProgress`` logs rows/s and ETA while loading.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from ..core.index.table import ENGINES, Engine, Variant
from ..core.infra.metrics import Progress
from ..core.infra.targets import parse_size
from ..core.server.loaddata import LoadError


@dataclass
class LoadOptions:
    """Knobs of the strategies (config ``load.*``); irrelevant ones are ignored."""
    connections: int          # parallel, sorted-parallel, deferred-pk, trans-partitioned
    transaction_rows: int     # bulk: rows per transaction, 0 = one transaction
    batch_files: int          # trans-partitioned: files per MySQL partition
    consolidate: bool         # trans-partitioned: REMOVE PARTITIONING at the end
    sort_memory: str          # sorted, bulk: DuckDB memory_limit
    sort_threads: int         # DuckDB threads, 0 = all cores
    chunk_rows: int           # sorted, bulk: rows per sorted TSV chunk

    @classmethod
    def of(cls, load: dict) -> "LoadOptions":
        """From a validated ``load`` section (the schema's defaults filled in)."""
        return cls(**{f.name: load[f.name] for f in fields(cls)})

    def check(self) -> "LoadOptions":
        if self.connections < 1:
            raise LoadError(f"connections must be >= 1, not {self.connections}")
        if self.transaction_rows < 0:
            raise LoadError(f"transaction_rows must be >= 0 (0 = one transaction), not {self.transaction_rows}")
        if self.batch_files < 1:
            raise LoadError(f"batch_files must be >= 1, not {self.batch_files}")
        if self.chunk_rows < 1:
            raise LoadError(f"chunk_rows must be >= 1, not {self.chunk_rows}")
        try:
            if parse_size(self.sort_memory) < (16 << 20):
                raise LoadError(f"sort_memory {self.sort_memory!r} is below 16M")
        except ValueError as exc:
            raise LoadError(f"sort_memory: {exc}") from None
        return self

    def as_dict(self) -> dict:
        return asdict(self)


def shift_to(trace: list[dict], now: float) -> float:
    """Move the earlier files' clock so the last one ends at ``now``; returns the loading
    time they took (first start to last end)."""
    if not trace:
        return 0.0
    first, last = min(r["start"] for r in trace), max(r["end"] for r in trace)
    for r in trace:
        r["start"] += now - last
        r["end"] += now - last
    return last - first


class LoadWatch:
    """The file-by-file loads' clock: counts committed files and rows, answers the time
    limit's "stop now?" before each file, and words the progress line the sampler logs."""

    def __init__(self, total_files: int, time_limit_s: float | None, earlier: list[dict] = ()):
        """``time_limit_s``: load.time_limit_s (None: no limit); ``earlier``: the trace of the
        files committed before an interruption (moved to end now); the load's clock starts
        their loading time ago."""
        now = time.time()
        self.resumed_s = shift_to(earlier, now)
        self.origin = now - self.resumed_s
        self.total_files, self.time_limit_s = total_files, time_limit_s
        self.files, self.rows = len(earlier), sum(r["rows"] for r in earlier)
        self.stopped = False
        self.by_files = True   # False: the load streams rows, not files, and logs its own progress
        self._lock = threading.Lock()
        self._last = (now, self.rows)

    def stop(self) -> bool:
        if self.time_limit_s is not None and time.time() - self.origin >= self.time_limit_s:
            self.stopped = True
        return self.stopped

    def note(self, rows: int):
        with self._lock:
            self.files += 1
            self.rows += rows

    def progress_line(self, table_bytes: int) -> str:
        now = time.time()
        t_last, rows_last = self._last
        self._last = (now, self.rows)
        overall = self.rows / max(now - self.origin, 1e-9)
        recent = (self.rows - rows_last) / max(now - t_last, 1e-9)
        eta = (self.total_files - self.files) * (now - self.origin) / self.files if self.files else float("nan")
        limit = f", stops at the {self.time_limit_s:.0f} s limit" if self.time_limit_s is not None else ""
        return (f"loaded {self.files}/{self.total_files} files, {self.rows:,} rows, {recent:,.0f} rows/s now, "
                f"{overall:,.0f} rows/s overall, table {table_bytes / 2**20:,.0f} MiB, "
                f"ETA {time.strftime('%H:%M:%S', time.gmtime(max(0, eta))) if eta == eta else '?'}{limit}")


@dataclass
class LoadJob:
    """One load: ``conn`` is the driver's connection (strategies open more from ``server``)."""
    server: object            # a started core.server.process.Server
    conn: object
    database: str
    table: str
    variant: Variant
    files: list[Path]         # the whole input, in load order
    opts: LoadOptions
    tmpdir: Path              # scratch on the target (the server's tmpdir)
    engine: Engine = ENGINES["innodb"]   # the table's storage engine (load.engines)
    # File-by-file strategies only (load/ledger.py): the files committed before an
    # interruption (their trace rows and FileInfos) and the ledger each file commits with.
    earlier: tuple = ((), ())
    ledger: object = None
    watch: LoadWatch | None = None   # counts files and rows; says when load.time_limit_s is reached

    @property
    def todo(self) -> list[Path]:
        """The files not committed yet, in load order."""
        done = {str(i.path) for i in self.earlier[1]}
        return [f for f in self.files if str(f) not in done]

    def clock(self) -> float:
        """Now, moved back by the loading time of the files committed before an interruption."""
        return time.time() - (self.watch.resumed_s if self.watch is not None else 0.0)

    def stop(self) -> bool:
        return self.watch is not None and self.watch.stop()

    def record(self, cur, info, start: float, end: float):
        """Commits with each file: the ledger row, and the count the progress lines show."""
        if self.ledger is not None:
            self.ledger.record(cur, info, start, end)
        if self.watch is not None:
            self.watch.note(info.rows)

    def merge(self, out: "Outcome", trace: list, infos: list):
        """The earlier files and this run's, one trace in order of completion; marks the
        outcome stopped when the time limit cut the load short."""
        out.trace = finish_trace([dict(r) for r in self.earlier[0]] + list(trace))
        out.infos = list(self.earlier[1]) + list(infos)
        if self.watch is not None and self.watch.stopped:
            out.extra["stopped"] = True


_PHASE_TIMINGS = {"sort": "sort_seconds", "load": "load_seconds", "index_build": "index_build_seconds",
                  "consolidate": "consolidate_seconds", "duplicate_check": "duplicate_check_seconds",
                  "scan": "scan_seconds"}
TIMINGS = ("scan_seconds", "sort_seconds", "load_seconds", "index_build_seconds", "consolidate_seconds",
           "duplicate_check_seconds")


@dataclass
class Outcome:
    trace: list = field(default_factory=list)
    infos: list = field(default_factory=list)
    phases: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)

    def phase(self, name: str, start: float, end: float, **kw):
        self.phases.append({"phase": name, "start": start, "end": end, "seconds": end - start, **kw})
        key = _PHASE_TIMINGS.get(name)
        if key:
            self.timings[key] = self.timings.get(key, 0.0) + (end - start)


@dataclass
class Repetition:
    """One repetition of a load: its figures (summary keys), outcome, sampler and clock."""
    rep: int
    figures: dict
    outcome: Outcome
    sampler: object           # load.sampler.Sampler
    t0: float
    t1: float


def trace_row(path, rows, nbytes, start, end, **kw) -> dict:
    return {"file": str(path), "rows": rows, "bytes": nbytes, "start": start, "end": end,
            "seconds": end - start, "cumulative_rows": 0, **kw}


def finish_trace(trace: list[dict]) -> list[dict]:
    """Rows in order of completion, with the running total of rows loaded."""
    trace.sort(key=lambda r: r["end"])
    total = 0
    for r in trace:
        total += r["rows"]
        r["cumulative_rows"] = total
    return trace


class LoadProgress:
    """Thread-safe 'done/total, rows/s, ETA' lines (every 5 s) while loading; ``total``
    counts files, or rows when ``by_rows``."""

    def __init__(self, what: str, total: int, by_rows: bool = False):
        self._progress = Progress(what, max(1, total))
        self._lock = threading.Lock()
        self.by_rows = by_rows
        self.done, self.rows = 0, 0

    def add(self, rows: int):
        with self._lock:
            self.done += rows if self.by_rows else 1
            self.rows += rows
            self._progress(self.done, rows=self.rows)
