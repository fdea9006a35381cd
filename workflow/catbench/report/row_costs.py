"""Why a load is fast or slow, in words: what a row cost it on the target's device and in the
server's CPU (``load_io.csv``), and, for a load that missed the buffer pool, its page misses at
fio's 16 KiB page read on the same target (``storage.csv``): the share of its time they take.
For the fastest finished load of each target and variant and for the one-file-at-a-time
protocol, which the 2017 study watched with iostat and top; past that protocol's collapse, what a
row cost in the windows of ``load_curve.csv`` beyond it."""

from __future__ import annotations

from statistics import median

from .wording import fmt

MISSES_WORTH_SAYING = 0.05     # page misses a row below which a load is not called I/O bound
INDEX_KB_WORTH_SAYING = 1.0    # KiB of SST index blocks read a row below which MyRocks' are not named


def _key(r: dict) -> tuple:
    return r["target"], r["variant"], r["engine"], r["strategy"]


def _page_read_us(storage: list, target: str) -> float | None:
    """fio's median latency of a 16 KiB page read on ``target`` (µs): what an insert that misses
    waits for (the pages it dirties are written by the server's own cleaners, beside it)."""
    return next((r.get("clat_p50_us") for r in storage if r["target"] == target and r["test"] == "page-read"), None)


def _line(r: dict, x: dict, read_us: float | None) -> str:
    label = f"`{r['strategy']}`" + ("" if _key(r)[2] == "innodb" else f" on {_key(r)[2]}")
    parts = []
    if x.get("write_kb_per_row") is not None:
        amp = f"write amplification {fmt(x['write_amp'])}x; " if x.get("write_amp") is not None else ""
        parts.append(f"wrote {fmt(x['write_kb_per_row'])} KiB and read {fmt(x['read_kb_per_row'])} KiB a row on "
                     f"the device ({amp}n = {x['n']}, {fmt(x.get('write_kb_per_row_min'))}–"
                     f"{fmt(x.get('write_kb_per_row_max'))} KiB written)")
    if x.get("server_cpu_us_per_row") is not None:
        parts.append(f"its server spent {fmt(x['server_cpu_us_per_row'])} µs of CPU a row, the client "
                     f"{fmt(x.get('client_cpu_us_per_row'))}")
    if _key(r)[2] == "rocksdb":
        parts.append(_lsm(x))
    misses = x.get("innodb_misses_per_row")
    if misses and misses >= MISSES_WORTH_SAYING and read_us and r.get("rows") and r.get("seconds"):
        per_row = r["seconds"] / r["rows"] * 1e6
        parts.append(f"{fmt(misses)} page misses a row, which at fio's 16 KiB page read on this target "
                     f"({fmt(read_us)} µs) take {misses * read_us / per_row:.0%} of its {fmt(per_row)} µs a row")
    if not parts:
        return ""
    return f"{r['target']} ({r['variant']} table): {label} " + "; ".join(parts) + "."


def _lsm(x: dict) -> str:
    """MyRocks' own bytes a row (WAL, memtable flushes, compaction written and read) and its write
    stalls: what its LSM cost beside the device's figures."""
    kb = {k: x.get(f"{k}_bytes_per_row") for k in ("wal", "flush", "compact_write", "compact_read")}
    said = ", ".join(f"{fmt(v)} B {what}" for v, what in ((kb["wal"], "of WAL"), (kb["flush"], "of memtable flushes"),
                                                          (kb["compact_write"], "written by compaction"),
                                                          (kb["compact_read"], "read by compaction"))
                     if v is not None)
    stalls = x.get("rocksdb_stalls")
    held = ("no write stall" if stalls == 0 else
            f"{int(stalls):,} write stalls (stops and slowdowns) that held it {x['stall_share']:.0%} of its time "
            f"({fmt(x.get('stall_us_per_row'))} µs a row)" if stalls is not None and x.get("stall_share") is not None
            else "")
    idx = x.get("index_kb_per_row")
    reread = (f"it read {fmt(idx)} KiB of SST index blocks a row again ({fmt(x.get('index_misses_per_row'))} "
              f"index blocks the block cache lost a row: one larger than a cache shard, the cache ÷ 64, is read "
              f"whole at every key check)" if idx is not None and idx >= INDEX_KB_WORTH_SAYING else "")
    return "its LSM " + "; ".join(p for p in (f"took {said} a row" if said else "", held, reread) if p)


def _page_write_MBps(storage: list, target: str) -> float | None:
    """fio's median MB/s of 16 KiB page writes on ``target``: what the page cleaners can write."""
    return next((r.get("MBps") for r in storage if r["target"] == target and r["test"] == "page-write"), None)


def _past(r: dict, curve: list, collapse: list, read_us: float | None, write_MBps: float | None) -> str:
    """Past the half point of ``collapse``: the medians over the windows (every repetition) of
    what a row cost, and of the device's requests and MB/s, as iostat showed them."""
    half = next((c.get("half_table_over_pool") for c in collapse if _key(c) == _key(r)), None)
    win = [c for c in curve if _key(c) == _key(r) and half is not None and c.get("rows_per_s")
           and c.get("table_over_pool") is not None and c["table_over_pool"] >= half
           and c.get("read_iops") is not None]
    if not win:
        return ""
    m = {k: median(c[k] for c in win if c.get(k) is not None) if any(c.get(k) is not None for c in win)
         else None for k in ("rows_per_s", "innodb_misses_per_row", "read_iops", "read_MBps", "write_MBps",
                             "write_kb_per_row")}
    reads, reps = m["read_iops"] / m["rows_per_s"], len({c["repetition"] for c in win})
    busy = (f", {m['write_MBps'] / write_MBps:.0%} of fio's 16 KiB page writes on it ({fmt(write_MBps)} MB/s)"
            if write_MBps and m["write_MBps"] is not None else "")
    share = (f"; at {fmt(read_us)} µs a page read its misses take {m['innodb_misses_per_row'] * read_us * m['rows_per_s'] / 1e6:.0%}"
             f" of a row's {fmt(1e6 / m['rows_per_s'])} µs" if read_us and m["innodb_misses_per_row"] else "")
    return (f"past its collapse (table ÷ pool ≥ {fmt(half)}; medians of {len(win)} windows in "
            f"{reps} repetition{'s' if reps > 1 else ''}) a row cost "
            f"{fmt(m['innodb_misses_per_row'])} page misses, {fmt(reads)} device reads and "
            f"{fmt(m['write_kb_per_row'])} KiB written, at {fmt(m['rows_per_s'])} rows/s; the device read "
            f"{fmt(m['read_iops'])} requests/s ({fmt(m['read_MBps'])} MB/s) and wrote {fmt(m['write_MBps'])} MB/s"
            + busy + share)


def row_costs(t, one_file: str) -> list:
    """The lines of every target and variant of the final tables ``t`` (summary.Tables);
    ``one_file``: the 2017 study's protocol's name."""
    io, loads, storage = t.load_io, t.loads, t.storage
    by = {_key(r): r for r in io}
    out = []
    for tg, var in dict.fromkeys((r["target"], r["variant"]) for r in loads):
        mine = [r for r in loads if r["target"] == tg and r["variant"] == var and r.get("seconds")]
        done = [r for r in mine if not r.get("stopped") and not r.get("resumed")]
        shown = ([min(done, key=lambda r: r["seconds"])] if done else []) + \
            [r for r in mine if r["strategy"] == one_file]
        for r in {_key(r): r for r in shown}.values():
            if _key(r) in by:
                read_us = _page_read_us(storage, tg)
                line = _line(r, by[_key(r)], read_us)
                past = _past(r, t.curve, t.collapse, read_us, _page_write_MBps(storage, tg)) \
                    if r["strategy"] == one_file else ""
                out.append(line[:-1] + "; " + past + "." if line and past else line)
    return [s for s in out if s]


def answers(runs: list, cls: str, query_class) -> str:
    """The rows each query of class ``cls`` answered, an empty answer said as such: every
    target and engine agreeing on nothing checks nothing."""
    parts = []
    for q in dict.fromkeys(r["query"] for r in runs if query_class(r["query"]) == cls):
        counts = {r.get("result_rows") for r in runs if r["query"] == q} - {None}
        if not counts:
            continue
        if counts == {0}:
            parts.append(f"{q} **empty** (0 rows on every target and engine: they agree only that it is empty)")
        else:
            parts.append(f"{q} {', '.join(f'{c:,}' for c in sorted(counts))} row(s)")
    return f"{cls} answers: " + "; ".join(parts) + "." if parts else ""
