"""The density skew in the report: chunk sizes, per-chunk loads and per-chunk query times,
from result files written the way the stages write them (query/recorder.py)."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
from catbench.query.recorder import RESULT_SCHEMA, Recorder, write_chunk_loads
from catbench.report import findings as findings_mod
from catbench.report.summary import Tables
from catbench.report.tables import make_tables, read_tables
from support.runs import REPORT

ROWS = {1: 100, 2: 120, 3: 2000}          # chunk 3 is the crowded one




def write_run(run):
    (run / "chunks").mkdir(parents=True)
    with open(run / "chunks" / "chunks.tsv", "w") as f:
        f.write("chunkId\tobject_rows\tsource_rows\toverlap_rows\tparquet_bytes\ttsv_bytes\n")
        for c, n in ROWS.items():
            f.write(f"{c}\t{n}\t{3 * n}\t5\t{100 * n}\t{120 * n}\n")
    out = run / "queries" / "t1" / "mysql"
    out.mkdir(parents=True)
    rec = Recorder("t1", "mysql", {}, "none")
    for k in range(1, 4):
        rec.add_chunks("HV2", "warm", k, [(c, n / 1000, 1) for c, n in ROWS.items()])
        rec.add_chunks("SHV1", "warm", k, [(1, 0.5, 1), (2, 0.01, 1), (3, 0.1, 1)])
        rec.add_chunks("SHV2", "warm", k, [(1, 0.01, 1), (2, 0.3, 1)])   # a box away from chunk 3
    rec.add_chunks("HV2", "cold", 1, [(1, 9.0, 1)])   # cold runs are not in the table
    pq.write_table(pa.Table.from_pylist([], schema=RESULT_SCHEMA), out / "results.parquet")
    (out / "summary.json").write_text(json.dumps({"load": None}))
    pq.write_table(pa.Table.from_pylist(rec.chunk_rows, schema=__import__(
        "catbench.query.recorder", fromlist=["x"]).CHUNK_TIME_SCHEMA), out / "chunk_times.parquet")
    write_chunk_loads(out, "t1", [{"kind": "Object", "chunkId": c, "rows": n, "bytes": 10 * n,
                                   "seconds": n / 1e4} for c, n in ROWS.items()]
                      + [{"kind": "Source", "chunkId": c, "rows": 3 * n, "bytes": 30 * n,
                          "seconds": 3 * n / 1e4} for c, n in ROWS.items()])


def test_skew_tables_and_findings(tmp_path):
    run = tmp_path / "run"
    write_run(run)
    make_tables(run, tmp_path / "tables", report=REPORT)
    t = read_tables(tmp_path / "tables")
    loads = {r["chunkId"]: r for r in t["chunk_load_chunks"]}
    assert loads[3]["rows"] == 8000 and loads[3]["largest"] and not loads[1]["largest"]
    assert abs(loads[3]["time_share"] - 2000 / 2220) < 1e-3
    q = {r["query"]: r for r in t["query_chunks"]}
    assert q["HV2"]["n"] == 3 and q["HV2"]["slowest_chunk"] == 3 and q["HV2"]["slowest_is_largest"]
    assert abs(q["HV2"]["slowest_share"] - 2000 / 2220) < 1e-3
    assert q["SHV1"]["slowest_chunk"] == 1 and not q["SHV1"]["slowest_is_largest"]
    # the largest chunk a query reads: a box query that misses chunk 3 is judged on its own
    assert q["SHV2"]["largest_chunk"] == 2 and q["SHV2"]["slowest_is_largest"]
    lines = findings_mod.skew(Tables.of(t).chunks, t["chunk_load_chunks"], t["query_chunks"])
    assert lines[0].startswith("objects per chunk") and "max ÷ median = 16.7" in lines[0]
    assert "the largest chunk holds 90" in lines[0]
    assert any(s.startswith("chunk-table loads on `t1`") and "90" in s for s in lines)
    assert any(s.startswith("HV2 on `t1`") and "the largest chunk it reads" in s for s in lines)
    assert any(s.startswith("SHV1 on `t1`") and "not the largest chunk it reads (3)" in s for s in lines)
    assert any(s.startswith("SHV2 on `t1`") and "chunk 2, the largest chunk it reads" in s for s in lines)
