"""What a row cost each MyRocks load of `make bench-lsm`, from the server's own counters
(the sampler's samples.parquet): per load and repetition its rows/s, and over quarters of its
rows the rows/s, server CPU, WAL, memtable-flush and compaction bytes, block-cache misses, SST
index blocks read again (and their bytes), device bytes and write stalls a row.

    python workflow/scripts/lsm_shapes.py results/<run> ...
"""

import json
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

PER_ROW = {"wal B": "Rocksdb_wal_bytes", "flush B": "Rocksdb_flush_write_bytes",
           "compact W B": "Rocksdb_compact_write_bytes", "compact R B": "Rocksdb_compact_read_bytes",
           "bc miss": "Rocksdb_block_cache_miss", "index miss": "Rocksdb_block_cache_index_miss",
           "index B": "Rocksdb_block_cache_index_bytes_insert", "dev W B": "dev_write_bytes", "dev R B": "dev_read_bytes"}
QUARTERS = 4


def _settings(summary: dict) -> str:
    s = (summary.get("server") or {}).get("settings") or {}
    return f"{s.get('rocksdb_default_cf_options', '')} cache {s.get('rocksdb_block_cache_size', '')}"


def _quarters(t, cols, rows_total):
    """Rows of a table of each quarter of the rows: (rows/s, CPU µs, per-row counters, stall share)."""
    hw = np.asarray(cols["Handler_write"], float)
    hw = hw - hw[0]
    edges = np.searchsorted(hw, np.linspace(0, rows_total, QUARTERS + 1))
    edges = np.clip(edges, 0, len(t) - 1)
    out = []
    for a, b in zip(edges, edges[1:]):
        rows, dt = hw[b] - hw[a], t[b] - t[a]
        if rows <= 0 or dt <= 0:
            continue
        cpu = (cols["server_user_s"][b] + cols["server_sys_s"][b] - cols["server_user_s"][a] - cols["server_sys_s"][a])
        row = {"rows/s": rows / dt, "CPU µs": cpu / rows * 1e6}
        row.update({k: (cols[c][b] - cols[c][a]) / rows for k, c in PER_ROW.items() if cols.get(c) is not None})
        if cols.get("Rocksdb_stall_micros") is not None:
            row["stall"] = (cols["Rocksdb_stall_micros"][b] - cols["Rocksdb_stall_micros"][a]) / 1e6 / dt
        out.append(row)
    return out


def main(runs) -> None:
    for run in map(Path, runs):
        for summary in sorted(run.glob("load/*/*/rocksdb/*/summary.json")):
            s = json.loads(summary.read_text())
            table = pq.read_table(summary.parent / "samples.parquet").to_pydict()
            print(f"\n{run.name} {summary.parent.name}: {_settings(s)}")
            for rep in s.get("repetitions") or [s]:
                n = rep.get("repetition", 0)
                sel = [i for i, r in enumerate(table.get("repetition") or [0] * len(table["time"])) if r == n]
                cols = {k: np.asarray([v[i] for i in sel], float) if all(v[i] is not None for i in sel) else None
                        for k, v in table.items() if k != "repetition"}
                t = cols["time"]
                print(f"  repetition {n}: {rep['rows']:,} rows in {rep['seconds']:.1f} s = "
                      f"{rep['rows'] / rep['seconds']:,.0f} rows/s, table {rep.get('table_bytes', 0) / 2**20:,.0f} MiB")
                for q, row in enumerate(_quarters(t, cols, rep["rows"])):
                    print(f"    quarter {q + 1}: " + ", ".join(f"{k} {v:,.3g}" for k, v in row.items()))


if __name__ == "__main__":
    main(sys.argv[1:])
