"""Every loading strategy on every other storage engine of the director index (MyISAM,
Qserv's other engine; MyRocks, an LSM tree), with real private servers: each loads exactly
the input, and a repeated key is caught and named, within a file and across files."""

import json
import zlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from catbench.cli.storage import load_spec
from catbench.core.index.table import ENGINES, LoadError
from catbench.core.infra.targets import StorageTarget
from catbench.load.load_index import run_load_index
from catbench.load.spec import LoadCase
from catbench.load.strategies import REGISTRY, STRATEGIES
from support.indexinput import write_files

pytestmark = pytest.mark.server
ENGINE_NAMES = ("myisam", "rocksdb")
RUNS = {e: [s for s in STRATEGIES if REGISTRY[s].supports(e)] for e in ENGINE_NAMES}
PAIRS = [(e, s) for e in ENGINE_NAMES for s in RUNS[e]]
CACHE = {"myisam": "key_buffer_size", "rocksdb": "rocksdb_block_cache_size"}   # the engine's cache, 8 MB
OPTS = dict(connections=3, batch_files=2, chunk_rows=700, sort_memory="64MB", transaction_rows=0, repetitions=1,
            sample_interval_s=0.2, lookup_threads=2, lookup_count=200, optimize_limit_s=0)


def run(root: Path, name: str, files, variant: str, strategy: str, engine: str):
    load = {**OPTS, "settings": {CACHE[engine]: "8M", "innodb_buffer_pool_size": "8M"}}
    return run_load_index(load_spec({"load": load}, checked=False), StorageTarget("tmpdisk", root / "target"), files,
                          root / "results" / name, LoadCase(variant, strategy, engine))


def _own_checks(s: dict, engine: str, strategy: str, out: Path):
    if engine == "myisam":   # the table's bytes are its .MYD and .MYI files: at least the fixed-width records
        assert s["table_bytes"] >= 4000 * 9
        assert s["table_pool_ratio"] == pytest.approx(s["table_bytes"] / (8 << 20))
        return
    # MyRocks: the table's bytes are its SST files (a fresh server has none: the rows are there)
    assert s["table_bytes"] > 0
    assert int(s["server"]["variables"]["rocksdb_max_row_locks"]) == ENGINES["rocksdb"].settings[
        "rocksdb_max_row_locks"]
    if strategy == "bulk":   # MyRocks' bulk path: no transactions, the SST files ingested at its end
        assert s["transaction_rows"] is None and s["strategy_details"]["commits"] is None
        assert s["strategy_details"]["final_commit_seconds"] >= 0
    samples = pq.read_table(out / "samples.parquet").to_pylist()
    assert max(r["Rocksdb_wal_bytes"] or 0 for r in samples) > 0 or strategy == "bulk"


@pytest.mark.parametrize("engine,strategy", PAIRS)
def test_every_strategy_on_the_engine_loads_exactly_the_input(root, engine, strategy):
    variant = "char28" if RUNS[engine].index(strategy) % 2 else "bigint"
    name = f"{engine}-{variant}-{strategy}"
    files = write_files(root / "in" / name, variant, 4, 1000, seed=zlib.crc32(name.encode()))
    s = run(root, name, files, variant, strategy, engine)
    assert s["engine"] == engine and s["strategy"] == strategy
    assert s["rows"] == 4000 and s["checksum_ok"] and s["checksum_input"] == s["checksum_table"]
    assert s["table_bytes_final"] > 0
    assert s["lookups"] == 200 and 0 < s["lookup_p50_s"] <= s["lookup_p99_s"]
    assert int(s["server"]["variables"][CACHE[engine]]) == 8 << 20
    out = root / "results" / name
    assert json.loads((out / "summary.json").read_text())["engine"] == engine
    _own_checks(s, engine, strategy, out)
    assert not (root / "target" / f"catbench-load_index-{variant}-{engine}-{strategy}").exists()


@pytest.mark.parametrize("engine,strategy", PAIRS)
@pytest.mark.parametrize("where", ["within", "across"])
def test_duplicates_are_caught_and_named(root, engine, strategy, where):
    variant = "char28" if (RUNS[engine].index(strategy) + (where == "across")) % 2 else "bigint"
    name = f"dup-{engine}-{where}-{strategy}"
    files = write_files(root / "in" / name, variant, 4, 200)
    lines = [p.read_text().splitlines(keepends=True) for p in files]
    if where == "within":
        dup, src, dst, at = lines[1][4].split("\t")[0], files[1], files[1], 149
    else:   # file 0 and file 3: different partitions for trans-partitioned (batch_files=2)
        dup, src, dst, at = lines[0][6].split("\t")[0], files[0], files[3], 119
    i = files.index(dst)
    lines[i][at] = f"{dup}\t1\t1\n"
    dst.write_text("".join(lines[i]))
    with pytest.raises(LoadError) as err:
        run(root, name, files, variant, strategy, engine)
    msg = str(err.value)
    assert dup in msg and src.name in msg and dst.name in msg, msg
    assert "duplicate" in msg.lower() or "repeats" in msg or "repeated" in msg, msg
    assert not (root / "results" / name).exists()
