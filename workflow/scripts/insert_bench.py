"""The Insert Benchmark's figures of each run of `make bench-insert` (a setup each), InnoDB and
MyRocks side by side: insert rate (all rows, and their later half), the table and its RAM, what
the device read and wrote a row, reads a row, server CPU µs a row, the slowest file's statement,
the server's own memory and its page cache (server.ram, server.page_cache); then MyRocks ÷ InnoDB
per setup.

    python workflow/scripts/insert_bench.py results/insert-bench results/insert-bench-os results/insert-bench-io
"""

import csv
import json
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from catbench.core.index.table import ENGINES as REGISTRY
from catbench.core.server.memory import HOLD_MARGIN

ENGINES = ("innodb", "rocksdb")
MIB = 2 ** 20


def _later_half(load: Path, rows: float) -> float | None:
    """Rows/s over the later half of the rows loaded (the files' ends in trace.parquet)."""
    t = pq.read_table(load / "trace.parquet").to_pydict()
    end, cum = np.asarray(t["end"], float), np.asarray(t["cumulative_rows"], float)
    o = np.argsort(end)
    end, cum = end[o], cum[o]
    start = float(np.min(t["start"]))
    t1, t2 = np.interp([rows / 2, rows], np.append(0, cum), np.append(start, end))
    return rows / 2 / (t2 - t1) if t2 > t1 else None


def _memory(load: Path) -> tuple:
    """The server's own MiB at most and its page cache's median MiB over the load (None: no cgroup)."""
    s = pq.read_table(load / "samples.parquet").to_pydict()
    own, cache = s.get("ram_own_bytes"), s.get("ram_cache_bytes")
    if not own or any(v is None for v in own):
        return None, None
    return max(own) / MIB, float(np.median(cache)) / MIB


def figures(run: Path, engine: str) -> dict | None:
    load = next(run.glob(f"load/*/char28/{engine}/one-file-at-a-time"), None)
    if load is None or not (load / "summary.json").exists():
        return None
    s = json.loads((load / "summary.json").read_text())
    io = next((r for r in csv.DictReader((run / "tables" / "load_io.csv").open()) if r["engine"] == engine), {})
    server = s.get("server") or {}
    cache = (server.get("variables") or {}).get(REGISTRY[engine].cache_variable)
    # the RAM the data had: server.ram, or the engine's cache and the page cache held beside it
    ram = server.get("ram") or (int(cache) + server["page_cache"] + HOLD_MARGIN
                                if server.get("page_cache") and cache else None)
    own, cache = _memory(load)
    num = lambda k: float(io[k]) if io.get(k) not in (None, "") else None
    return {"rows": s["rows"], "stopped": s.get("stopped"), "seconds": s["seconds"], "rate": s["rows"] / s["seconds"],
            "later": _later_half(load, s["rows"]), "table_mib": s["table_bytes"] / MIB,
            "table_over_ram": s["table_bytes"] / ram if ram else None, "read_kb": num("read_kb_per_row"),
            "write_kb": num("write_kb_per_row"), "reads": num("reads_per_row"), "cpu_us": num("server_cpu_us_per_row"),
            "stmt_max": num("stmt_max_s"), "stmt_p99": num("stmt_p99_s"), "own_mib": own, "cache_mib": cache}


def _f(v, fmt="{:,.0f}"):
    return "–" if v is None else fmt.format(v)


def main(runs: list[str]) -> None:
    print("| setup | engine | rows (stopped?) | rows/s all | rows/s later half | table MiB | table ÷ RAM for data | "
          "read KB/row | write KB/row | reads/row | server CPU µs/row | slowest file s (p99) | own MiB | page cache MiB |")
    print("|" + "---|" * 14)
    ratios = []
    for run in map(Path, runs):
        got = {e: figures(run, e) for e in ENGINES}
        for e, f in got.items():
            if f is None:
                continue
            print(f"| {run.name} | {e} | {f['rows']:,}{' (stopped)' if f['stopped'] else ''} | {_f(f['rate'])} | "
                  f"{_f(f['later'])} | {_f(f['table_mib'])} | {_f(f['table_over_ram'], '{:.2f}')} | "
                  f"{_f(f['read_kb'], '{:.3f}')} | {_f(f['write_kb'], '{:.3f}')} | {_f(f['reads'], '{:.3f}')} | "
                  f"{_f(f['cpu_us'], '{:.1f}')} | {_f(f['stmt_max'], '{:.2f}')} ({_f(f['stmt_p99'], '{:.2f}')}) | "
                  f"{_f(f['own_mib'])} | {_f(f['cache_mib'])} |")
        i, r = got["innodb"], got["rocksdb"]
        if i and r:
            div = lambda a, b: a / b if a is not None and b else None
            ratios.append((run.name, div(r["rate"], i["rate"]), div(r["later"], i["later"]),
                           div(i["write_kb"], r["write_kb"]), div(i["table_mib"] / i["rows"], r["table_mib"] / r["rows"]),
                           div(r["cpu_us"], i["cpu_us"])))
    print("\n| setup | MyRocks ÷ InnoDB rows/s | later half | InnoDB ÷ MyRocks bytes written a row | "
          "InnoDB ÷ MyRocks bytes a row of table | MyRocks ÷ InnoDB CPU a row |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, *v in ratios:
        print(f"| {name} | " + " | ".join(_f(x, "{:.2f}") for x in v) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
