"""What a row cost a load (load_io.csv), from real loads on a real private server on this
machine's disk: the device's bytes and requests against what the table and InnoDB say, and
MyRocks' own counters read from a real MyRocks."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from catbench.cli.storage import load_spec
from catbench.core.infra.targets import StorageTarget, device_for
from catbench.load.load_index import run_load_index
from catbench.load.spec import LoadCase
from catbench.report.tables import make_tables
from support.indexinput import write_files
from support.runs import REPORT

pytestmark = pytest.mark.server
# a 6 MB pool (InnoDB's least with 16 KiB pages) against a ~10 MB table: the load misses
OPTS = dict(repetitions=1, sample_interval_s=0.2, lookup_threads=1, lookup_count=100, optimize_limit_s=0,
            settings={"innodb_buffer_pool_size": "6M", "rocksdb_block_cache_size": "6M"})
# a miss is one 16 KiB read request; read-ahead and merged requests move the device's count
MISS_TOLERANCE = (0.5, 2.0)


def _load(root: Path, engine: str, strategy: str, files) -> dict:
    out = root / "results" / "io" / "load" / "disk" / "bigint" / engine / strategy
    run_load_index(load_spec({"load": OPTS}, checked=False), StorageTarget("disk", root / "target"), files, out,
                   LoadCase("bigint", strategy, engine))
    make_tables(root / "results" / "io", report=REPORT)
    with open(root / "results" / "io" / "tables" / "load_io.csv") as fh:
        return next(r for r in csv.DictReader(fh) if (r["engine"], r["strategy"]) == (engine, strategy))


def test_a_load_past_its_pool_writes_its_table_and_reads_its_misses_on_the_device(tmp):
    if device_for(tmp) is None:
        pytest.skip(f"{tmp} is on no block device")
    files = write_files(tmp / "in", "bigint", 6, 40_000)
    r = _load(tmp, "innodb", "one-file-at-a-time", files)
    rows = 240_000
    table = next((tmp / "results" / "io" / "load").rglob("summary.json")).parent
    written = float(r["write_kb_per_row"]) * 1024 * rows
    assert written >= float(r["space_amp"]) * int(r["row_bytes"]) * rows     # at least the table's bytes
    misses, reads = float(r["innodb_misses_per_row"]) * rows, float(r["reads_per_row"]) * rows
    assert misses > 1000, r
    assert MISS_TOLERANCE[0] <= reads / misses <= MISS_TOLERANCE[1], (reads, misses, table)
    assert float(r["server_cpu_us_per_row"]) > 0 and float(r["longest_stall_s"]) >= 0
    assert 0 < float(r["stmt_p50_s"]) <= float(r["stmt_p99_s"]) <= float(r["stmt_max_s"])


def test_myrocks_counters_come_from_a_real_myrocks(tmp):
    files = write_files(tmp / "in", "bigint", 4, 20_000)
    r = _load(tmp, "rocksdb", "one-file-at-a-time", files)
    assert float(r["wal_bytes_per_row"]) > 0 and float(r["flush_bytes_per_row"]) >= 0
    # the block cache's misses and its SST index blocks read again are MyRocks' own counters
    assert float(r["block_misses_per_row"]) >= 0 and float(r["index_kb_per_row"]) >= 0
    # the server's own InnoDB tables page in on first use (~100 pages, more when the machine is
    # busy), not a page a row: InnoDB's own load reads ~0.8 a row
    assert float(r["innodb_misses_per_row"] or 0) < 1e-2


def test_the_counters_load_io_reads_are_those_the_sampler_takes():
    from catbench.core.server.status import STATUS_COUNTERS
    from catbench.report.views import ENGINE_COUNTERS
    assert set(ENGINE_COUNTERS) <= set(STATUS_COUNTERS)
