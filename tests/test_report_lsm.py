"""What a MyRocks load's LSM cost it, in load_io.csv and the findings: its WAL, memtable flushes
and compaction bytes a row, and the write stalls its write controller made."""

from __future__ import annotations

import csv
import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from catbench.report.html import make_report
from catbench.report.tables import make_tables
from support.runs import REPORT, make_run


@pytest.mark.slow
def test_a_myrocks_loads_compaction_bytes_and_write_stalls_a_row_are_tabled_and_said(tmp_path):
    run = make_run(tmp_path, "lsm")
    src, d = (run / "load" / "a" / "char28" / e / s for e, s in (("innodb", "parallel"),
                                                                   ("rocksdb", "one-file-at-a-time")))
    shutil.move(src, d)
    s = json.loads((d / "summary.json").read_text())
    (d / "summary.json").write_text(json.dumps({**s, "strategy": "one-file-at-a-time", "optimize_stopped": False}))
    t = [1000.0 + i for i in range(5)]                   # 1,000 rows in 4 s (the summary's 4 s)
    pq.write_table(pa.table({
        "time": t, "table_bytes": [i * 2**16 for i in range(5)], "Handler_write": [0, 250, 500, 750, 1000],
        "dev_read_bytes": [0] * 5, "dev_write_bytes": [i * 100_000 for i in range(5)],
        "server_user_s": [i * 0.5 for i in range(5)], "server_sys_s": [0.0] * 5,
        "Rocksdb_wal_bytes": [i * 12_500 for i in range(5)],            # 50 B a row
        "Rocksdb_flush_write_bytes": [i * 10_000 for i in range(5)],    # 40 B
        "Rocksdb_compact_write_bytes": [i * 30_000 for i in range(5)],  # 120 B
        "Rocksdb_compact_read_bytes": [i * 20_000 for i in range(5)],   # 80 B
        "Rocksdb_stall_micros": [0, 0, 500_000, 1_000_000, 1_000_000],  # 1 s of 4
        "Rocksdb_stall_total_stops": [0, 0, 1, 2, 2], "Rocksdb_stall_total_slowdowns": [0, 1, 1, 1, 1]}),
        d / "samples.parquet")
    make_tables(run, report=REPORT)
    with open(run / "tables" / "load_io.csv") as f:
        r = next(x for x in csv.DictReader(f) if x["engine"] == "rocksdb")
    assert float(r["compact_write_bytes_per_row"]) == 120 and float(r["compact_read_bytes_per_row"]) == 80
    assert float(r["rocksdb_stalls"]) == 3 and float(r["stall_share"]) == pytest.approx(0.25)
    assert float(r["stall_us_per_row"]) == pytest.approx(1000.0)
    make_report(run, run / "report", report=REPORT)
    md = (run / "report" / "summary.md").read_text()
    assert ("its LSM took 50.0 B of WAL, 40.0 B of memtable flushes, 120 B written by compaction, 80.0 B read by "
            "compaction a row; 3 write stalls (stops and slowdowns) that held it 25% of its time") in md, md
