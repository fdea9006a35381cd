"""Running the suite and recording every run: cold runs (a restart before each query),
warm runs (after one warm-up), the DMTR-21 concurrency run, latency statistics, and the
stage's output files. Engine-independent: an engine is anything with
``run(query, params)``; a cold start is the caller's ``restart()``.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..core.infra.jobs.repeat import Repeats
from ..core.server.memory import JOB_HOLD_MARGIN, held_here
from .spec import QuerySpec
from .suite import Answer, QueryError, compare

log = logging.getLogger(__name__)

RESULT_SCHEMA = pa.schema([
    ("target", pa.string()), ("query_engine", pa.string()), ("query", pa.string()), ("cache", pa.string()),
    ("run", pa.int32()), ("seconds", pa.float64()), ("result_rows", pa.int64()), ("answer", pa.string()),
    ("digest", pa.string()), ("cold_method", pa.string()),
])
# chunk_times.parquet: every chunk query of a run of the mysql engine (one query per chunk).
CHUNK_TIME_SCHEMA = pa.schema([
    ("target", pa.string()), ("query_engine", pa.string()), ("query", pa.string()), ("cache", pa.string()),
    ("run", pa.int32()), ("chunkId", pa.int32()), ("seconds", pa.float64()), ("result_rows", pa.int64()),
])
# chunk_loads.parquet: every chunk file loaded into its table before the suite.
CHUNK_LOAD_SCHEMA = pa.schema([
    ("target", pa.string()), ("kind", pa.string()), ("chunkId", pa.int32()), ("rows", pa.int64()),
    ("bytes", pa.int64()), ("seconds", pa.float64()),
])


def drop_caches() -> bool:
    """Drop the OS page cache (needs root and a writable /proc/sys); False when refused."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


# What an "evicted" run is (queries.evicted), as the engines' summaries record it
EVICTED = "sync + posix_fadvise(DONTNEED) of the layout's files before each query, the engine kept"


def evict(paths) -> int:
    """Drop the page cache of ``paths`` (files, or folders walked) after a sync, so the next
    query reads them from the device while its engine stays up: a layout far past the page
    cache, where each pass evicts what it read before it comes round again. Returns the bytes."""
    os.sync()         # a dirty page is not dropped
    n = 0
    for p in map(Path, paths):
        for f in (p.rglob("*") if p.is_dir() else [p]):
            if f.is_file():
                fd = os.open(f, os.O_RDONLY)
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(fd)
                n += f.stat().st_size
    return n


@contextmanager
def page_cache_held(held_bytes: int | None, name: str, files, first: str = "queries"):
    """The engines without a server held as a server is (``server.page_cache``): this job and the
    processes it starts (a local Dask cluster's workers) in a memory cgroup whose clean page cache
    stays at ``held_bytes``, the layout's ``files`` evicted first (pages cached before are charged
    to whoever read them, and would be read past the hold). Yields (the summary's record, None
    where the key is null; ``phase(name)``, which starts the job's next phase after ``first``):
    the most clean page cache seen, in all and in each phase, is filled in at the end."""
    if not held_bytes:
        yield None, lambda name: None
        return
    record = {"held_bytes": held_bytes, "margin_bytes": JOB_HOLD_MARGIN}
    with held_here(name, held_bytes, first) as held:
        evict(files)
        yield record, held.phase
    record["cache_peak_bytes"] = max(held.peaks.values(), default=0)
    record["cache_peak_bytes_by_phase"] = held.peaks


def latency_stats(xs) -> dict:
    a = np.asarray(xs, float)
    if a.size == 0:
        return {"n": 0, "p50_s": None, "p95_s": None, "max_s": None}
    return {"n": int(a.size), "p50_s": float(np.percentile(a, 50)), "p95_s": float(np.percentile(a, 95)),
            "max_s": float(a.max())}


class Recorder:
    """Collects runs and checks every run of a query returns the first run's answer."""

    def __init__(self, target: str, query_engine: str, suite: dict, cold_method: str):
        self.target, self.query_engine, self.suite, self.cold_method = target, query_engine, suite, cold_method
        self.rows: list[dict] = []
        self.chunk_rows: list[dict] = []   # per-chunk times of the runs (chunk_times.parquet)
        self.answers: dict[str, Answer] = {}
        self.digests: dict[str, str] = {}
        self._lock = threading.Lock()

    def add(self, query: str, cache: str, run: int, seconds: float, answer: Answer) -> Answer:
        q = self.suite[query]
        canon = answer.canonical(q.order)
        digest = canon.digest()
        with self._lock:
            if query not in self.answers:
                self.answers[query] = canon
                self.digests[query] = digest
            elif digest != self.digests[query]:
                msg = compare(query, self.answers[query], canon, f"{self.query_engine} first run",
                              f"{self.query_engine} {cache} run {run}")
                if msg:
                    raise QueryError(f"target {self.target}: {msg}")
            self.rows.append({"target": self.target, "query_engine": self.query_engine, "query": query, "cache": cache,
                              "run": run, "seconds": seconds, "result_rows": len(canon.rows),
                              "answer": canon.summary(q.order), "digest": digest,
                              "cold_method": self.cold_method})
        return canon

    def add_chunks(self, query: str, cache: str, run: int, chunks) -> None:
        """A run's chunk queries, (chunkId, seconds, result rows) each (an engine's
        ``last_chunks``; engines without per-chunk queries give none)."""
        with self._lock:
            self.chunk_rows += [{"target": self.target, "query_engine": self.query_engine, "query": query,
                                 "cache": cache, "run": run, "chunkId": int(c), "seconds": float(s),
                                 "result_rows": int(n)}
                                for c, s, n in chunks or ()]

    def stats(self) -> dict:
        out: dict[str, dict] = {}
        for r in self.rows:
            out.setdefault(r["query"], {}).setdefault(r["cache"], []).append(r["seconds"])
        return {q: {c: latency_stats(v) for c, v in d.items()} for q, d in out.items()}

    def write(self, out_dir: Path, summary: dict) -> None:
        """results.parquet, summary.json (``summary`` plus stats, digests and answers) and
        answers.json (every query's canonical answer) into ``out_dir``; chunk_times.parquet
        when the engine ran a query per chunk."""
        pq.write_table(pa.Table.from_pylist(self.rows, schema=RESULT_SCHEMA), out_dir / "results.parquet")
        if self.chunk_rows:
            pq.write_table(pa.Table.from_pylist(self.chunk_rows, schema=CHUNK_TIME_SCHEMA),
                           out_dir / "chunk_times.parquet")
        summary["stats"] = self.stats()
        summary["digests"] = self.digests
        summary["answers"] = {q: a.summary(self.suite[q].order) for q, a in self.answers.items()}
        (out_dir / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
        (out_dir / "answers.json").write_text(json.dumps({q: a.to_json() for q, a in self.answers.items()},
                                                         default=str) + "\n")


def write_chunk_loads(out_dir: Path, target: str, trace: list[dict]) -> None:
    """chunk_loads.parquet: each chunk file's load (chunk_tables.load_chunk_tables' trace)."""
    rows = [{"target": target, **{k: t[k] for k in ("kind", "chunkId", "rows", "bytes", "seconds")}}
            for t in trace]
    pq.write_table(pa.Table.from_pylist(rows, schema=CHUNK_LOAD_SCHEMA), Path(out_dir) / "chunk_loads.parquet")


def timed(engine, q, params) -> tuple[float, Answer]:
    t0 = time.perf_counter()
    ans = engine.run(q, params)
    wall = time.perf_counter() - t0
    return (wall if ans.seconds is None else ans.seconds), ans


@dataclass(frozen=True)
class Caches:
    """The states a suite runs in besides warm: cold runs after ``restart()`` (with ``cold``),
    evicted runs after ``evict()`` (None: none)."""
    restart: Callable[[], object]
    cold: bool
    evict: Callable[[], object] | None = None


def run_suite(engine, caches: Caches, suite: dict, names, params: dict, rec: Recorder, repeats: Repeats) -> None:
    """Cold runs (``caches.restart()`` before each query: ``repeats.min_n`` of them) then warm runs
    (after one warm-up), as many as ``repeats`` asks for (core/infra/jobs/repeat.py; adaptive
    repeats' pilot runs are dropped like the warm-up); then, with ``caches.evict`` (it drops the
    layout's page cache), ``repeats.min_n`` runs of each query with the engine kept and its data evicted."""
    cold, restart, evicted = caches.cold, caches.restart, caches.evict
    if cold:
        for rep in range(1, repeats.min_n + 1):
            for n in names:
                restart()
                s, ans = timed(engine, suite[n], params[n])
                c = rec.add(n, "cold", rep, s, ans)
                rec.add_chunks(n, "cold", rep, getattr(engine, "last_chunks", None))
                log.info("%s %s cold run %d: %.4f s, %s", rec.target, n, rep, s, c.summary(suite[n].order))
    for n in names:
        rec.add(n, "warmup", 0, *timed(engine, suite[n], params[n]))
        times, t0, rep = [], time.monotonic(), 0
        while repeats.more(times, time.monotonic() - t0):
            rep += 1
            s, ans = timed(engine, suite[n], params[n])
            c = rec.add(n, "warm", rep, s, ans)
            rec.add_chunks(n, "warm", rep, getattr(engine, "last_chunks", None))
            times.append(s)
        pilot = len(times) - len(repeats.kept(times))   # core/infra/jobs/repeat.py: it set n, it is not judged
        for r in rec.rows[len(rec.rows) - len(times):len(rec.rows) - len(times) + pilot]:
            r["cache"] = "warmup"
        rec.chunk_rows = [c for c in rec.chunk_rows
                          if not (c["query"] == n and c["cache"] == "warm" and c["run"] <= pilot)]
        log.info("%s %s warm: p50 %.4f s, %s", rec.target, n,
                 float(np.median([r["seconds"] for r in rec.rows if r["query"] == n and r["cache"] == "warm"])),
                 c.summary(suite[n].order))
    rec.rows = [r for r in rec.rows if r["cache"] != "warmup"]
    for rep in range(1, repeats.min_n + 1) if evicted else ():
        for n in names:
            evicted()
            s, ans = timed(engine, suite[n], params[n])
            c = rec.add(n, "evicted", rep, s, ans)
            log.info("%s %s evicted run %d: %.4f s, %s", rec.target, n, rep, s, c.summary(suite[n].order))


class _Streams:
    """The concurrency run's query streams; each opens its own runner (``make_runner()``)."""

    def __init__(self, make_runner, suite: dict, params: dict, rec: Recorder, lv1_interval_s: float):
        self.make_runner, self.params, self.rec = make_runner, params, rec
        self.lv1_query, self.hv2_query = suite["LV1"], suite["HV2"]
        self.lv1_interval_s = lv1_interval_s
        self.errors: list[BaseException] = []

    def lv1(self, cache: str, stop: threading.Event, lat: list):
        """LV1 every ``lv1_interval_s`` until ``stop``."""
        r = self.make_runner()
        try:
            k = 0
            while not stop.is_set():
                s, ans = timed(r, self.lv1_query, self.params["LV1"])
                k += 1
                self.rec.add("LV1", cache, k, s, ans)
                lat.append(s)
                stop.wait(self.lv1_interval_s)
        finally:
            r.close()

    def hv2(self, i: int, deadline: float, lat: list):
        """HV2 back to back until ``deadline``."""
        r = self.make_runner()
        try:
            k = 0
            while time.monotonic() < deadline:
                s, ans = timed(r, self.hv2_query, self.params["HV2"])
                k += 1
                self.rec.add("HV2", "concurrent-load", i * 100000 + k, s, ans)
                lat.append(s)
        finally:
            r.close()

    def guarded(self, stop: threading.Event, fn, *a):
        try:
            fn(*a)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            self.errors.append(exc)
            stop.set()


def run_concurrency(make_runner, suite: dict, params: dict, rec: Recorder, streams: int, seconds: float,
                    lv1_interval_s: float) -> dict:
    """DMTR-21 3.5: ``streams`` HV2 streams plus one LV1 stream for ``seconds``; LV1 latency
    alone (same duration, before) and under that load. ``make_runner()`` gives an object with
    ``run(query, params)`` and ``close()`` for one stream."""
    if streams <= 0 or seconds <= 0:
        return {"skipped": True}
    st = _Streams(make_runner, suite, params, rec, lv1_interval_s)
    alone: list[float] = []
    stop = threading.Event()
    t = threading.Thread(target=st.lv1, args=("concurrent-alone", stop, alone))
    t.start()
    time.sleep(seconds)
    stop.set()
    t.join()

    loaded: list[float] = []
    hv2_lat: list[float] = []
    stop = threading.Event()
    deadline = time.monotonic() + seconds
    ths = [threading.Thread(target=st.guarded, args=(stop, st.hv2, i + 1, deadline, hv2_lat))
           for i in range(streams)]
    t0 = time.monotonic()
    for th in ths:
        th.start()
    lt = threading.Thread(target=st.guarded, args=(stop, st.lv1, "concurrent-load", stop, loaded))
    lt.start()
    for th in ths:
        th.join()
    stop.set()
    lt.join()
    wall = time.monotonic() - t0
    if st.errors:
        raise st.errors[0]
    out = {"streams": streams, "seconds": seconds, "wall_s": wall, "lv1_interval_s": lv1_interval_s,
           "lv1_alone": latency_stats(alone), "lv1_load": latency_stats(loaded), "hv2": latency_stats(hv2_lat)}
    if out["lv1_alone"]["p50_s"] and out["lv1_load"]["p50_s"]:
        out["lv1_slowdown_p50"] = out["lv1_load"]["p50_s"] / out["lv1_alone"]["p50_s"]
    log.info("concurrency: LV1 p50 alone %.4f s, under %d HV2 streams %.4f s; %d HV2 done (p50 %.2f s)",
             out["lv1_alone"]["p50_s"] or 0, streams, out["lv1_load"]["p50_s"] or 0, out["hv2"]["n"],
             out["hv2"]["p50_s"] or 0)
    return out


def run_concurrency_of(spec: QuerySpec, make_runner, suite: dict, params: dict, rec: Recorder) -> dict:
    """The concurrency run as ``spec`` asks (skipped unless LV1 and HV2 are run)."""
    if not {"LV1", "HV2"} <= set(spec.names):
        return {"skipped": True}
    cc = spec.concurrency
    return run_concurrency(make_runner, suite, params, rec, cc.streams, cc.seconds, cc.lv1_interval_s)
