"""A restart rung's result FILES read into observations: each phase's seconds per repetition
beside the quantity that drives it (restart/<target>/<kind>.json, cluster/<target>/<kind>.json),
and the rung's sizes (its data, pool, redo log, gcache, downtime) that the model scales from.
Reads files only: the restart stage is never imported."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from ...core.infra.config.yamlfile import read_json
from ...core.infra.sizes import parse_size
from ..runs import device

PAGE = 16384   # InnoDB's page when the run did not record innodb_page_size


@dataclass(frozen=True)
class PhaseObservation:
    """One phase of one repetition: its seconds and its driving quantity (None: a fixed phase)."""
    run: str
    target: str
    kind: str          # the answer's kind: clean/dump-on, clean/dump-off, crash-during-load, node-restart-*
    phase: str
    rep: int
    seconds: float
    quantity: float | None = None


@dataclass
class RungSizes:
    """What one rung held and was set to, per target: the sizes each phase's quantity follows."""
    run: str
    target: str
    rows: int = 0
    # the table's bytes at rest: its tablespace file (clean), else the pool's data pages, which
    # stop at the pool once the table outgrows it
    data_bytes: float | None = None
    pool_bytes: float | None = None
    redo_log_bytes: float | None = None
    page_bytes: int = PAGE
    large_pages: bool = False            # the pool on large pages reserved ahead (backed before the run)
    checkpoint_age: list = field(default_factory=list)   # redo bytes at each kill
    redo_rate: list = field(default_factory=list)        # the load's redo bytes a second up to each kill
    # per kill: (redo bytes since the checkpoint, pages to recover, the input's share committed, its LSN)
    recovered_pages: list = field(default_factory=list)
    batches: list = field(default_factory=list)          # per kill: (checkpoint age, several batches or not)
    dump_share: list = field(default_factory=list)       # pages in the dump ÷ min(pool, data) pages
    sst_bytes: list = field(default_factory=list)        # data files an SST streamed (mariabackup's estimate)
    # per SST: the joiner's files as (the tables, what a datadir at rest holds beside them, what
    # the benchmark's own load grew the system and undo tablespaces by), in bytes
    sst_split: list = field(default_factory=list)
    sst_redo_share: list = field(default_factory=list)   # redo it copied beside them ÷ the redo log
    sst_copy_s_per_byte: list = field(default_factory=list)   # seconds a byte while the stream copied
    ist_bytes_per_down_s: list = field(default_factory=list)
    transfers: dict = field(default_factory=dict)        # kind -> transfers it got (IST/SST)
    # per kill: (redo since the checkpoint + pages recovered, in bytes; the server's RSS after recovery)
    recovery_memory: list = field(default_factory=list)
    touch: dict | None = None                            # the memory probe's curve (restart/memory.py)
    lookup: dict | None = None                           # the lookup probe's curve (restart/memory.py)
    device: dict = field(default_factory=dict)           # the target's fio figures


def on_large_pages(sizes: list[RungSizes]) -> bool:
    """Whether every rung's pool was on large pages reserved ahead (backed as the server starts)."""
    return bool(sizes) and all(s.large_pages for s in sizes)


def _json(path: Path) -> dict | None:
    """A restart result file (None: not there); one that is not a regular JSON file of
    bounded size is a ValueError naming it, never a rung left out in silence."""
    doc = read_json(path, "a restart rung's results", "a restart result file catbench wrote", missing_ok=True)
    if doc is not None and not isinstance(doc, dict):
        raise ValueError(f"a restart rung's results: {path} is not a JSON object; run that restart again")
    if doc is not None:
        _check_values(doc, path)
    return doc


def _check_values(doc, path: Path, at: str = "") -> None:
    """Every number a restart wrote is finite and, but for times relative to an event (``*_rel_s``)
    or to the restarted process's start (``*_at_s``: the node went down before it), not negative:
    a tampered or broken value (NaN, -5 s, -1e12 redo bytes) is named, never fitted."""
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for k, v in items:
        where = f"{at}.{k}" if isinstance(k, str) else f"{at}[{k}]"
        if isinstance(v, (dict, list)):
            _check_values(v, path, where)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            relative = isinstance(k, str) and k.endswith(("_rel_s", "_at_s"))
            if not math.isfinite(v) or (v < 0 and not relative):
                raise ValueError(f"a restart rung's results: {path}: {where.lstrip('.')} is {v!r}, not a finite "
                                 f"{'number' if relative else 'number of at least 0'}; run that restart again")


def _seconds(rows: list, rep: int, phase: str, **match) -> float | None:
    for r in rows:
        if r["repetition"] == rep and r["phase"] == phase and all(r.get(k) == v for k, v in match.items()):
            return r["seconds"]
    return None


def _sub(a, b) -> float | None:
    return None if a is None or b is None else max(0.0, a - b)


def _server(doc: dict, sizes: RungSizes) -> None:
    """The page, pool and redo log the restart's server ran with (its variables)."""
    v = (doc.get("server") or {}).get("variables") or {}
    sizes.page_bytes = int(v.get("innodb_page_size") or PAGE)
    if not 1024 <= sizes.page_bytes <= 65536:
        raise ValueError(f"server.variables.innodb_page_size is {sizes.page_bytes}, not a page size of 1 KiB to 64 KiB")
    sizes.large_pages = str(v.get("large_pages", "")).upper() in ("ON", "1")
    sizes.touch = doc.get("memory_touch") or sizes.touch
    for attr, var in (("pool_bytes", "innodb_buffer_pool_size"), ("redo_log_bytes", "innodb_log_file_size")):
        if v.get(var):
            setattr(sizes, attr, float(v[var]))


def _clean(doc: dict, sizes: RungSizes, out: list) -> None:
    """clean.json: per mode the flush of dirty pages, the shutdown, the start to the engine, the
    buffer pool's load from its dump (on) and the first answer."""
    _server(doc, sizes)
    rows, pg = doc.get("rows") or [], sizes.page_bytes
    for det in doc.get("detail") or []:
        rep = det.get("repetition", 0)
        for mode, m in (det.get("modes") or {}).items():
            kind, on = f"clean/dump-{mode}", mode == "on"
            settle = m.get("settle") or {}
            data_pages = settle.get("data_pages") or 0
            if m.get("table_file_bytes") or data_pages:
                sizes.data_bytes = max(sizes.data_bytes or 0.0, float(m.get("table_file_bytes") or data_pages * pg))
            obs = lambda phase, s, q=None: s is not None and out.append(  # noqa: E731
                PhaseObservation(sizes.run, sizes.target, kind, phase, rep, float(s), q))
            obs("shutdown", _seconds(rows, rep, "shutdown", buffer_pool_load=on))
            ready = _seconds(rows, rep, "process_start_to_engine_ready", buffer_pool_load=on)
            obs("start_to_engine_ready", ready, sizes.pool_bytes)
            first = _seconds(rows, rep, "process_start_to_first_answer", buffer_pool_load=on)
            if on:
                pages = (m.get("shutdown") or {}).get("dump_pages")
                loaded = _seconds(rows, rep, "process_start_to_buffer_pool_loaded", buffer_pool_load=True)
                if pages is not None and loaded is not None:
                    obs("buffer_pool_load", _sub(loaded, ready), pages * pg)
                    held = min(sizes.pool_bytes or math.inf, data_pages * pg or math.inf)
                    if math.isfinite(held) and held > 0:
                        sizes.dump_share.append(pages * pg / held)
            else:
                obs("engine_ready_to_first_answer", _sub(first, ready))


def _crash(doc: dict, sizes: RungSizes, out: list) -> None:
    """crash-during-load.json: the start to recovery, the redo scan (its redo bytes), the
    redo apply (the pages it recovers) and the first answer after it."""
    rows, kind = doc.get("rows") or [], "crash-during-load"
    _server(doc, sizes)
    sizes.lookup = doc.get("page_lookup") or sizes.lookup
    for det in doc.get("detail") or []:
        rep = det.get("repetition", 0)
        rec = det.get("recovery") or {}
        redo = rec.get("redo_bytes")
        if det.get("data_pages_after_resume") and not sizes.data_bytes:   # a study without the clean kind
            sizes.data_bytes = float(det["data_pages_after_resume"] * sizes.page_bytes)
        batches = rec.get("redo_batches") or []
        pages = next((b["numbers"][0] for b in batches if b.get("event") == "to_recover" and b.get("numbers")), None)
        if (det.get("load_pace") or {}).get("redo_Bps"):
            sizes.redo_rate.append(float(det["load_pace"]["redo_Bps"]))
        if redo is not None:
            sizes.checkpoint_age.append(float(redo))
            sizes.batches.append((float(redo), any(b.get("event") == "multi_batch" for b in batches)))
            share = det["committed_files"] / det["files"] if det.get("files") else None
            if pages is not None and share:
                sizes.recovered_pages.append((float(redo), float(pages), share, rec.get("end_lsn")))
                if rec.get("rss_bytes"):
                    sizes.recovery_memory.append((float(redo) + pages * sizes.page_bytes, float(rec["rss_bytes"])))
        start = _seconds(rows, rep, "process_start_to_recovery_start")
        scan, apply_ = _seconds(rows, rep, "redo_scan"), _seconds(rows, rep, "redo_apply")
        first = _seconds(rows, rep, "process_start_to_first_answer")
        # each redo record is put into, then read from, an ordered map of the pages it touches
        # (MariaDB's recv_sys.pages): its cost grows with log2 of their count
        work = None if redo is None or not pages else float(redo) * math.log2(max(2, pages))
        for phase, s, q in (("start_to_recovery", start, None), ("redo_scan", scan, work), ("redo_apply", apply_, work),
                            ("ready_to_first_answer", _sub(first, (start or 0) + (scan or 0) + (apply_ or 0)), None)):
            if s is not None:
                out.append(PhaseObservation(sizes.run, sizes.target, kind, phase, rep, float(s), None if q is None else float(q)))


def _sst_parts(rows: list, rep: int, tr: dict, sizes: RungSizes, log_bytes: float | None) -> list[tuple]:
    """An SST's parts, each beside what it moves: the donor's sleep, the stream (the data files
    mariabackup estimates and the redo it copied beside them), the joiner's prepare (that redo)
    and the rest of the transfer (fixed)."""
    est, redo = tr.get("sst_estimate_bytes"), tr.get("sst_redo_bytes")
    if est:   # the backup's files, not the joiner's: those hold the undo a load grew too
        sizes.sst_bytes.append(float(est))
    if redo is not None and log_bytes:
        sizes.sst_redo_share.append(redo / log_bytes)
    got, fresh = tr.get("sst_parts"), tr.get("fresh_parts")
    if got and fresh:
        grown, before = got["system"] + got["undo"], fresh["system"] + fresh["undo"]
        sizes.sst_split.append((float(got["tables"]), float(got["server"] + got["temp"] + min(grown, before)),
                                float(max(0, grown - before))))
    copy = tr.get("sst_copy") or {}
    if copy.get("MBps"):
        sizes.sst_copy_s_per_byte.append(1 / (copy["MBps"] * 1e6))
    parts = [(p, _seconds(rows, rep, p)) for p in ("sst_donor_sleep", "sst_stream", "sst_prepare")]
    whole = _sub(_seconds(rows, rep, "process_start_to_transfer_end"),
                 _seconds(rows, rep, "process_start_to_transfer_start"))
    rest = _sub(whole, sum(s for _, s in parts)) if all(s is not None for _, s in parts) else None
    moved = {"sst_stream": est + redo if est is not None and redo is not None else None, "sst_prepare": redo}
    # a part whose bytes were not recorded (a run before the redo was read) is not observed
    return [(p, s if p == "sst_donor_sleep" or moved[p] is not None else None, moved.get(p))
            for p, s in parts] + [("sst_rest", rest, None)]


def _node(doc: dict, sizes: RungSizes, out: list) -> None:
    """cluster/<kind>.json: a node's shutdown, its start to the state transfer, the transfer
    (an IST's write sets; an SST's parts) and the transfer's end to synced."""
    kind, rows = doc["kind"], doc.get("rows") or []
    log_bytes = ((doc.get("server") or {}).get("settings") or {}).get("innodb_log_file_size")
    log_bytes = float(parse_size(str(log_bytes))) if log_bytes else sizes.redo_log_bytes
    for det in doc.get("detail") or []:
        rep, tr = det.get("repetition", 0), det.get("transfer") or {}
        sizes.transfers.setdefault(kind, []).append(tr.get("kind"))
        nbytes, down = tr.get("bytes"), _seconds(rows, rep, "node_down")
        if tr.get("kind") == "IST" and nbytes is not None and down:
            sizes.ist_bytes_per_down_s.append(float(nbytes) / down)
        start = _seconds(rows, rep, "process_start_to_transfer_start")
        end, synced = _seconds(rows, rep, "process_start_to_transfer_end"), _seconds(rows, rep,
                                                                                   "process_start_to_synced")
        transfer = (_sst_parts(rows, rep, tr, sizes, log_bytes) if tr.get("kind") == "SST"
                    else [("state_transfer", _sub(end, start), nbytes)])
        for phase, s, q in (("shutdown", _seconds(rows, rep, "shutdown"), None),
                            ("start_to_transfer", start, None), *transfer,
                            ("transfer_end_to_synced", _sub(synced, end), None)):
            if s is not None:
                out.append(PhaseObservation(sizes.run, sizes.target, kind, phase, rep, float(s), None if q is None else float(q)))


READERS = {"clean": _clean, "crash-during-load": _crash, "node-restart-ist": _node, "node-restart-sst": _node}


def read_restarts(results: list) -> tuple[list[PhaseObservation], dict]:
    """Every restart phase observed in the ``results/<run>`` directories, and each (run,
    target)'s :class:`RungSizes`."""
    obs: list[PhaseObservation] = []
    sizes: dict = {}
    seen: dict = {}
    for res in map(Path, results):
        same = seen.setdefault(res.resolve(), res)
        if same is not res:
            raise ValueError(f"--results: {res} is given twice (as {same} before): each rung is fitted once")
        for stage in ("restart", "cluster"):
            for f in sorted((res / stage).glob("*/*.json")):
                kind = f.stem
                doc = _json(f) if kind in READERS else None
                if not isinstance(doc, dict) or doc.get("failed") or not doc.get("rows"):
                    continue
                target = f.parent.name
                s = sizes.get((res.name, target))
                if s is None:
                    s = sizes[(res.name, target)] = RungSizes(res.name, target, device=device(res, target))
                    summary = _json(res / "restart" / target / "summary.json") or {}
                    s.rows = int(summary.get("rows") or 0)
                try:
                    READERS[kind](doc, s, obs)
                except (TypeError, KeyError, AttributeError, ValueError, ZeroDivisionError, IndexError) as e:
                    why = f"{type(e).__name__}: {e}" if not isinstance(e, ValueError) else str(e)
                    raise ValueError(f"a restart rung's results: {f} is not a restart result catbench wrote "
                                     f"({why}); run that restart again") from None
    for s in sizes.values():
        if s.data_bytes is None and s.sst_bytes:
            s.data_bytes = statistics.median(s.sst_bytes)
    return obs, sizes
