"""Every loading strategy with a real private server: exact rows, duplicates named, kill-safe."""

import json
import os
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import psutil
import pyarrow.parquet as pq
import pytest
from catbench.core.index.table import VARIANTS, LoadError
from catbench.core.infra.config import section
from catbench.cli.storage import load_spec
from catbench.core.infra.targets import StorageTarget
from catbench.load.load_index import run_load_index
from catbench.load.spec import LoadCase
from catbench.load.job import LoadOptions
from catbench.load.strategies import STRATEGIES, table_ddl
from support.indexinput import write_files

pytestmark = pytest.mark.server
VENV_BIN = Path(sys.executable).parent


def key_at(p: Path, lineno: int) -> str:
    return p.read_text().splitlines()[lineno - 1].split("\t")[0]


def replace_line(p: Path, lineno: int, text: str):
    lines = p.read_text().splitlines(keepends=True)
    lines[lineno - 1] = text + "\n"
    p.write_text("".join(lines))


OPTS = dict(connections=3, batch_files=2, chunk_rows=700, sort_memory="64MB", transaction_rows=0, repetitions=1)


def run(root: Path, name: str, files, variant, strategy, **kw):
    load = {**OPTS, "sample_interval_s": 0.2, "lookup_threads": 2, "lookup_count": 200, "optimize_limit_s": 0,
            **kw}
    return run_load_index(load_spec({"load": load}, checked=False), StorageTarget("tmpdisk", root / "target"), files,
                          root / "results" / name, LoadCase(variant, strategy))


def test_ddl_follows_qserv_director_index():
    v = VARIANTS["bigint"]
    ddl = table_ddl(v, "trans-partitioned", "db", "t")
    assert "`qserv_trans_id` INT NOT NULL" in ddl and "PRIMARY KEY" not in ddl
    assert "UNIQUE KEY `trans_key` (`qserv_trans_id`, `objectId`)" in ddl and "KEY `key` (`objectId`)" in ddl
    assert "PARTITION BY LIST (`qserv_trans_id`) (PARTITION `p0` VALUES IN (0))" in ddl
    assert "PRIMARY KEY" not in VARIANTS["char28"].columns_ddl(primary_key=False)


def test_bad_options_are_named(root):
    with pytest.raises(LoadError, match="connections"):
        LoadOptions.of(section("load", {"connections": 0})).check()
    with pytest.raises(LoadError, match="sort_memory"):
        LoadOptions.of(section("load", {"sort_memory": "lots"})).check()


@pytest.mark.parametrize("variant", ["bigint", "char28"])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_loads_exactly_the_input(root, strategy, variant):
    name = f"{variant}-{strategy}"
    files = write_files(root / "in" / name, variant, 4, 1000, seed=zlib.crc32(name.encode()))
    s = run(root, name, files, variant, strategy)
    assert s["rows"] == 4000 and s["checksum_ok"] and s["checksum_input"] == s["checksum_table"]
    assert s["strategy"] == strategy and s["table_bytes"] > 0 and s["rows_per_s"] > 0
    assert s["lookups"] == 200 and 0 < s["lookup_p50_s"] <= s["lookup_p99_s"]
    for k in ("sort_seconds", "load_seconds", "index_build_seconds", "consolidate_seconds",
              "duplicate_check_seconds"):
        assert s[k] >= 0
    if strategy in ("sorted", "sorted-parallel", "bulk"):
        assert s["sort_seconds"] > 0 and s["strategy_details"]["chunks"] == 6  # 4000 rows / 700
        assert s["connections"] == (3 if strategy == "sorted-parallel" else 1)
    if strategy == "deferred-pk":
        assert s["index_build_seconds"] > 0
    if strategy == "trans-partitioned":
        assert s["consolidate_seconds"] > 0 and s["duplicate_check_seconds"] > 0
        assert s["strategy_details"]["partitions"] == 2
    out = root / "results" / name
    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk["strategy"] == strategy and on_disk["rows"] == 4000
    trace = pq.read_table(out / "trace.parquet").to_pylist()
    assert trace[-1]["cumulative_rows"] == 4000
    assert pq.read_table(out / "samples.parquet").num_rows >= 2
    assert sum(r["rows"] for r in pq.read_table(out / "intervals.parquet").to_pylist()) == 4000
    assert not (root / "target" / f"catbench-load_index-{variant}-innodb-{strategy}").exists()
    assert not list((root / "results").glob(f".{name}.partial-*"))


@pytest.mark.parametrize("strategy", ["sorted", "bulk"])
def test_a_sorted_load_in_a_shared_tmpdir_uses_and_removes_only_its_own_folder(root, monkeypatch, strategy):
    """targets.<t>.tmpdir (CATBENCH_TMPDIR) holding another job's file: the server and the sort
    use a fresh folder of their own there (0700), and only that folder goes afterwards."""
    shared = root / f"shared-{strategy}"
    shared.mkdir()
    (shared / "catbench-load_index-bigint-innodb-sorted").write_text("another job's")
    monkeypatch.setenv("CATBENCH_TMPDIR", str(shared))
    files = write_files(root / "in" / f"shared-{strategy}", "bigint", 2, 1000, seed=5)
    s = run(root, f"shared-{strategy}", files, "bigint", strategy)
    assert s["rows"] == 2000 and s["checksum_ok"] and s["strategy_details"]["chunks"] == 3
    used = Path(s["server"]["variables"]["tmpdir"])
    assert used.parent == shared and used.name.startswith(f"catbench-load_index-bigint-innodb-{strategy}-")
    assert os.listdir(shared) == ["catbench-load_index-bigint-innodb-sorted"]


def test_trans_partitioned_without_consolidation(root):
    files = write_files(root / "in" / "tp-nocons", "bigint", 5, 300)
    s = run(root, "tp-nocons", files, "bigint", "trans-partitioned", consolidate=False)
    assert s["rows"] == 1500 and s["consolidate_seconds"] == 0 and s["strategy_details"]["partitions"] == 3


def test_parallel_with_more_connections_than_files(root):
    files = write_files(root / "in" / "par-many", "bigint", 2, 500)
    s = run(root, "par-many", files, "bigint", "parallel", connections=8)
    assert s["rows"] == 1000 and s["connections"] == 8


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("where", ["within", "across"])
def test_duplicates_are_caught_and_named(root, strategy, where):
    variant = "char28" if (STRATEGIES.index(strategy) + (where == "across")) % 2 else "bigint"
    name = f"dup-{where}-{strategy}"
    files = write_files(root / "in" / name, variant, 4, 200)
    if where == "within":
        dup, src, dst = key_at(files[1], 5), files[1], files[1]
        replace_line(files[1], 150, f"{dup}\t1\t1")
    else:  # file 0 and file 3: different partitions for trans-partitioned (batch_files=2)
        dup, src, dst = key_at(files[0], 7), files[0], files[3]
        replace_line(files[3], 120, f"{dup}\t1\t1")
    with pytest.raises(LoadError) as err:
        run(root, name, files, variant, strategy)
    msg = str(err.value)
    assert dup in msg and src.name in msg and dst.name in msg, msg
    assert "duplicate" in msg.lower() or "repeats" in msg, msg
    assert not (root / "results" / name).exists()


def _holding(path) -> list[str]:
    """The processes that have ``path`` open (the killed load's own and its children's output)."""
    out = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        try:
            if any(f.path == str(path) for f in p.open_files()):
                out.append(f"{p.pid} {' '.join(p.info['cmdline'] or [])[:100]}")
        except psutil.Error:
            continue
    return out


def test_killed_load_leaves_no_results_and_rerun_succeeds(root):
    files = write_files(root / "in" / "kill", "char28", 40, 5000)
    out = root / "results" / "kill"
    target = root / "target-kill"
    cmd = [str(VENV_BIN / "catbench"), "load-index", "--target", "tmpdisk", "--path", str(target),
           "--out", str(out), "--input-dir", str(files[0].parent), "--variant", "char28",
           "--strategy", "bulk", "--chunk-rows", "5000", "--optimize-limit-s", "0", "--lookup-count", "100",
           "--sort-memory", "64MB"]
    log = root / "kill.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 60
    while time.time() < deadline and b"with strategy bulk" not in log.read_bytes():
        assert proc.poll() is None, log.read_text()
        time.sleep(0.05)
    time.sleep(0.5)  # sorting/loading now
    assert proc.poll() is None, "the load finished before it could be killed; make the input bigger"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    # its worker processes (a forkserver's, which keep each other waiting) exit with it
    deadline = time.time() + 15
    while _holding(log) and time.time() < deadline:
        time.sleep(0.2)
    assert not _holding(log), f"processes of the killed load still running: {_holding(log)}"
    assert not out.exists()
    basedir = target / "catbench-load_index-char28-innodb-bulk"
    assert basedir.exists()  # a stale datadir, removed by the re-run
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["rows"] == 200_000 and s["checksum_ok"] and s["strategy"] == "bulk"
    assert not basedir.exists()
    assert not list(out.parent.glob(".kill.partial-*"))


@pytest.mark.parametrize("strategy", ["sorted", "bulk"])
def test_text_keys_sorted_without_their_shared_prefix_keep_the_tables_order(root, strategy):
    """Keys of mixed case and length that share a prefix: the sort skips the prefix, and
    the order is still the table's (latin1_swedish_ci: case-insensitive), so InnoDB's
    bulk path takes it and a key repeated in another case is a duplicate."""
    d = root / "in" / f"prefix-{strategy}"
    d.mkdir(parents=True)
    keys = [f"{'Dr3' if i % 2 else 'dR3'}_{i}" for i in range(3000)]
    for f in range(3):
        (d / f"part-{f:05d}.tsv").write_text("".join(f"{k}\t{f}\t{j % 7}\n" for j, k in enumerate(keys[f::3])))
    files = sorted(d.glob("*.tsv"))
    s = run(root, f"prefix-{strategy}", files, "char28", strategy)
    assert s["rows"] == 3000 and s["checksum_ok"]
    assert s["strategy_details"]["shared_key_prefix"] == 4   # "DR3_"
    (d / "part-00000.tsv").write_text((d / "part-00000.tsv").read_text() + "DR3_17\t1\t1\n")  # dR3_17 in part 2
    with pytest.raises(LoadError, match=r"(?i)dr3_17"):
        run(root, f"prefix-dup-{strategy}", files, "char28", strategy)


def test_shared_prefix():
    from catbench.load.sorted_stream import shared_prefix
    assert shared_prefix("000123", "000456") == 3 and shared_prefix("12", "123") == 2
    assert shared_prefix("a", "b") == 0 and shared_prefix(None, None) == 0 and shared_prefix("x", "x") == 1


@pytest.mark.parametrize("engine,strategy", [("innodb", s) for s in STRATEGIES]
                         + [("rocksdb", s) for s in ("sorted", "sorted-parallel", "bulk")])
def test_a_key_with_quotes_and_backslashes_loads_with_every_strategy(root, engine, strategy):
    """A CHAR(28) key may hold any printable character: quotes and backslashes are data."""
    name = f"quote-{engine}-{strategy}"
    files = write_files(root / "in" / name, "char28", 4, 200)
    odd = ['a"b\\\\c\'d"', '"quoted"', "x\\\\ty"]
    for k, key in enumerate(odd):
        replace_line(files[k], 3 + k, f"{key}\t{k + 1}\t{k + 2}")
    load = {**OPTS, "sample_interval_s": 0.2, "lookup_threads": 2, "lookup_count": 200, "optimize_limit_s": 0}
    s = run_load_index(load_spec({"load": load}, checked=False), StorageTarget("tmpdisk", root / "target"), files, root / "results" / name,
                       LoadCase("char28", strategy, engine))
    assert s["rows"] == 800 and s["checksum_ok"]
