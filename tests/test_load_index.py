"""Secondary index loading with a real private server: exact rows, checksums, failures named."""

import json
import random
from pathlib import Path

import psutil
import pyarrow.parquet as pq
import pytest
from catbench.core.index.input import scan_file
from catbench.core.index.table import (
    DATABASE,
    VARIANTS,
    LoadError,
    create_table,
    load_files,
    table_checksum,
)
from catbench.cli.storage import load_spec
from catbench.core.infra.targets import StorageTarget
from catbench.load.load_index import run_load_index
from catbench.load.spec import LoadCase
from catbench.load.measure import default_interval, interval_table, optimize_table

pytestmark = pytest.mark.server


def make_key(variant: str, i: int) -> str:
    return f"{i:028d}" if variant == "char28" else str(1_000_000_000_000 + i)


def write_files(d: Path, variant: str, nfiles: int, rows: int, first: int = 0, seed: int = 1) -> list[Path]:
    """Index input files: key, chunkId, subChunkId; keys in order, like the partitioner writes them."""
    rng = random.Random(seed)
    d.mkdir(parents=True, exist_ok=True)
    files, k = [], first
    for f in range(nfiles):
        p = d / f"part-{f:05d}.tsv"
        with open(p, "w") as out:
            for _ in range(rows):
                out.write(f"{make_key(variant, k)}\t{rng.randrange(9000)}\t{rng.randrange(600)}\n")
                k += 1
        files.append(p)
    return files


def replace_line(p: Path, lineno: int, text: str):
    lines = p.read_text().splitlines(keepends=True)
    lines[lineno - 1] = text + "\n"
    p.write_text("".join(lines))


@pytest.fixture
def conn(srv):
    c = srv.connect()
    yield c
    c.close()


def table_rows(conn, table):
    cur = conn.cursor()
    cur.execute(f"SELECT COUNT(*) FROM `{DATABASE}`.`{table}`")
    return cur.fetchone()[0]


@pytest.mark.parametrize("variant", ["char28", "bigint"])
def test_run_load_index_exact(tmp, variant):
    files = write_files(tmp / "in", variant, 4, 2500)
    out = tmp / "results" / f"load-{variant}"
    target = tmp / "target"
    s = run_load_index(load_spec({"load": {"sample_interval_s": 0.2, "optimize_limit_s": 30, "lookup_threads": 2,
                                           "lookup_count": 400, "repetitions": 1}}, checked=False),
                       StorageTarget("tmpdisk", target), files, out, LoadCase(variant, "one-file-at-a-time"))
    assert s["rows"] == 10_000 and s["files"] == 4
    assert s["checksum_ok"] and s["checksum_input"] == s["checksum_table"]
    assert s["rows_per_s"] > 0 and s["table_bytes"] > 0
    # which side bounds the load: the server's CPU and the job's, both spent on it (the kernel
    # counts CPU in 10 ms ticks: a 10,000-row load's server can be charged none of them)
    assert s["server_cpu_s"] is not None and s["server_cpu_s"] >= 0 and s["job_cpu_s"] > 0 and s["host_cpus"] >= 1
    assert s["server_cpu_s"] + s["job_cpu_s"] < s["seconds"] * s["host_cpus"] * 1.1
    assert s["lookups"] == 400 and s["lookup_qps"] > 0 and 0 < s["lookup_p50_s"] <= s["lookup_p99_s"]
    assert s["optimize_stopped"] is False and s["optimize_seconds"] > 0
    assert all(s["server"]["timings"][k] > 0 for k in ("init_s", "start_s", "stop_s"))
    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk["rows"] == 10_000 and on_disk["variant"] == variant
    trace = pq.read_table(out / "trace.parquet").to_pylist()
    assert [t["file"] for t in trace] == [str(f) for f in files]
    assert [t["cumulative_rows"] for t in trace] == [2500, 5000, 7500, 10_000]
    assert all(t["end"] >= t["start"] for t in trace)
    intervals = pq.read_table(out / "intervals.parquet").to_pylist()
    assert sum(i["files"] for i in intervals) == 4 and sum(i["rows"] for i in intervals) == 10_000
    assert pq.read_table(out / "samples.parquet").num_rows >= 2
    # nothing half-finished or running is left behind
    assert sorted(p.name for p in out.parent.iterdir()) == [out.name]
    assert not (target / f"catbench-load_index-{variant}-innodb-one-file-at-a-time").exists()
    assert not any(str(target) in " ".join(p.info["cmdline"] or [])
                   for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"])


def test_failed_load_leaves_nothing_finished(tmp):
    files = write_files(tmp / "in", "char28", 3, 100)
    replace_line(files[2], 50, f"{make_key('char28', 10)}\t1\t2")  # key of file 0, line 11
    out = tmp / "results" / "load"
    with pytest.raises(LoadError) as err:
        run_load_index(load_spec({"load": {"lookup_count": 0}}, checked=False), StorageTarget("tmpdisk", tmp / "target"), files, out,
                       LoadCase("char28", "one-file-at-a-time"))
    msg = str(err.value)
    assert "part-00002.tsv" in msg and "line 50" in msg and "part-00000.tsv line 11" in msg
    assert list(out.parent.iterdir()) == []
    assert (tmp / "target" / "catbench-load_index-char28-innodb-one-file-at-a-time" / "error.log").exists()
    assert not (tmp / "target" / "catbench-load_index-char28-innodb-one-file-at-a-time" / "data").exists()


def test_duplicate_within_a_file_names_both_lines(tmp, conn):
    v = VARIANTS["char28"]
    files = write_files(tmp, "char28", 2, 20)
    replace_line(files[1], 9, f"{make_key('char28', 22)}\t5\t5")  # repeats line 3 of the same file
    create_table(conn, v, "dup1")
    with pytest.raises(LoadError, match=r"part-00001\.tsv.*line 9 repeats key '0+22' of line 3"):
        load_files(conn, "dup1", files, v)


@pytest.mark.parametrize("variant", ["char28", "bigint"])
def test_duplicate_across_files_names_earlier_file(tmp, conn, variant):
    v = VARIANTS[variant]
    files = write_files(tmp, variant, 3, 10)
    replace_line(files[2], 4, f"{make_key(variant, 7)}\t1\t1")
    create_table(conn, v, f"dup2_{variant}")
    with pytest.raises(LoadError) as err:
        load_files(conn, f"dup2_{variant}", files, v)
    assert "part-00002.tsv" in str(err.value) and "line 4" in str(err.value)
    assert "part-00000.tsv line 8" in str(err.value)


@pytest.mark.parametrize("variant,bad,reason", [
    ("char28", "abc\t12", "2 tab-separated fields"),
    ("char28", "k\t1\t2\t3", "4 tab-separated fields"),
    ("char28", "x" * 29 + "\t1\t2", "29 characters"),
    ("char28", "key\tone\t2", "chunkId"),
    ("char28", "key\t1\t99999999999", "subChunkId"),
    ("char28", "key with space\t1\t2", "printable ASCII"),
    ("bigint", "12a\t1\t2", "not a BIGINT"),
    ("bigint", "99999999999999999999\t1\t2", "not a BIGINT"),
    ("bigint", "", "1 tab-separated fields"),
])
def test_malformed_line_fails_before_loading(tmp, conn, variant, bad, reason):
    v = VARIANTS[variant]
    files = write_files(tmp, variant, 2, 10)
    replace_line(files[1], 4, bad)
    table = f"bad_{variant}"
    create_table(conn, v, table)
    with pytest.raises(LoadError) as err:
        load_files(conn, table, files, v)
    assert "part-00001.tsv: line 4" in str(err.value) and reason in str(err.value)
    assert table_rows(conn, table) == 10  # the bad file was never sent to the server


def test_crlf_is_named(tmp):
    p = tmp / "crlf.tsv"
    p.write_bytes(b"k1\t1\t2\nk2\t3\t4\r\n")
    with pytest.raises(LoadError, match=r"line 2 has a Windows line ending"):
        scan_file(p, VARIANTS["char28"])


@pytest.mark.parametrize("name,line", [("bigint", "007\t5\t6"), ("bigint", "-0\t5\t6"), ("bigint", "7\t-05\t6"),
                                       ("bigint", "7\t5\t-0"), ("char28", "007\t05\t6"), ("char28", "k\t5\t-0"),
                                       ("char28", "00k\t5\t60"), ("bigint", "70\t0\t0")])
@pytest.mark.parametrize("at", [0, 3, 9])
def test_the_fast_scan_hands_numbers_it_cannot_copy_to_the_exact_one(tmp, name, line, at):
    """A leading or negative zero anywhere in a block: the checksum is that of the numbers
    the server reads (the exact scan's), never of the text (the fast path's)."""
    from catbench.core.index.input import _scan_file_exact
    v = VARIANTS[name]
    lines = [f"{k + 1}\t{k}\t{k % 7}" for k in range(10)]
    lines[at] = line
    p = tmp / f"{name}-{at}.tsv"
    p.write_text("\n".join(lines) + "\n")
    assert scan_file(p, v).checksum == _scan_file_exact(p, v).checksum


def test_python_and_sql_checksums_agree(tmp, conn):
    v = VARIANTS["bigint"]
    files = write_files(tmp, "bigint", 2, 50)
    replace_line(files[0], 1, "-0000042\t007\t-3")  # leading zeros and signs normalise the same way
    create_table(conn, v, "ck")
    trace, infos = load_files(conn, "ck", files, v)
    n, total = table_checksum(conn, v, "ck")
    assert n == 100 and int(total) == sum(i.checksum for i in infos)


def test_optimize_is_stopped_at_its_limit(tmp, srv, conn):
    v = VARIANTS["char28"]
    files = write_files(tmp, "char28", 2, 100_000)
    create_table(conn, v, "opt")
    load_files(conn, "opt", files, v)
    r = optimize_table(srv, conn, "opt", 0.01)
    assert r["optimize_stopped"] is True and r["optimize_seconds"] is None
    assert table_rows(conn, "opt") == 200_000  # the killed OPTIMIZE lost nothing
    r = optimize_table(srv, conn, "opt", 120)
    assert r["optimize_stopped"] is False and r["optimize_seconds"] > 0


def test_interval_table_from_trace_and_samples():
    trace = [{"rows": 10, "bytes": 1_000_000, "start": 100.0 + i, "end": 100.5 + i} for i in range(10)]
    samples = [{"time": 100.0 + t, "dev_write_bytes": 2_000_000 * t, "Innodb_data_written": None,
                "table_bytes": 1000 * t} for t in range(11)]
    rows = interval_table(trace, samples, 100.0, 110.0, 2.5)
    assert [r["files"] for r in rows] == [2, 3, 2, 3]  # ends at x.5; 102.5 starts interval 1
    assert sum(r["rows"] for r in rows) == 100
    assert rows[0]["target_write_MBps"] == pytest.approx(2.0)
    assert rows[0]["innodb_write_MBps"] is None
    assert rows[-1]["table_bytes"] == pytest.approx(10_000)
    assert default_interval(600) == 30 and default_interval(3) == 1


def test_repetitions_in_one_job_each_from_an_empty_table(tmp):
    """load.repetitions loads into a dropped and re-created table after a server restart;
    every file of the results carries the repetition, summary.json the medians and each
    repetition's own figures; load.settings apply to this server only."""
    files = write_files(tmp / "in", "bigint", 3, 1000)
    out = tmp / "results" / "reps"
    s = run_load_index(load_spec({"load": {"repetitions": 2, "sample_interval_s": 0.2, "optimize_limit_s": 0,
                                           "lookup_threads": 1, "lookup_count": 50,
                                           "settings": {"innodb_buffer_pool_size": "6M"}},
                                  "server": {"settings": {"innodb_buffer_pool_size": "64M"}}}, checked=False),
                       StorageTarget("tmpdisk", tmp / "target"), files, out, LoadCase("bigint", "one-file-at-a-time"))
    assert s["n"] == 2 and [r["repetition"] for r in s["repetitions"]] == [0, 1]
    assert all(r["checksum_ok"] and r["rows"] == 3000 for r in s["repetitions"])
    assert s["seconds"] == pytest.approx(sum(r["seconds"] for r in s["repetitions"]) / 2)
    assert s["server"]["variables"]["innodb_buffer_pool_size"] == str(6 * 2**20)
    trace = pq.read_table(out / "trace.parquet").to_pylist()
    assert [(t["repetition"], t["cumulative_rows"]) for t in trace] == [
        (r, n) for r in (0, 1) for n in (1000, 2000, 3000)]
    assert {r["repetition"] for r in pq.read_table(out / "samples.parquet").to_pylist()} == {0, 1}
    assert {r["repetition"] for r in pq.read_table(out / "intervals.parquet").to_pylist()} == {0, 1}



def test_adaptive_loads_keep_the_loads_after_their_pilot(tmp):
    """With load.max_repetitions the first load.repetitions loads are a pilot whose spread
    alone sets how many follow (here the most, 4 in all: a precision any spread meets still
    asks for the minimum after it); summary.json's figures and every results file hold the
    loads after it, the pilot's figures stay under ``pilot``."""
    files = write_files(tmp / "in", "bigint", 2, 500)
    out = tmp / "results" / "adaptive"
    s = run_load_index(load_spec({"load": {"repetitions": 2, "max_repetitions": 4, "precision": 10.0,
                                           "optimize_limit_s": 0, "lookup_threads": 1, "lookup_count": 10,
                                           "sample_interval_s": 0.2}}, checked=False),
                       StorageTarget("tmpdisk", tmp / "target"), files, out, LoadCase("bigint", "one-file-at-a-time"))
    assert s["n"] == 2 and [r["repetition"] for r in s["repetitions"]] == [2, 3]
    assert [r["repetition"] for r in s["pilot"]] == [0, 1] and s["max_repetitions"] == 4
    assert s["seconds"] == pytest.approx(sum(r["seconds"] for r in s["repetitions"]) / 2)
    for name in ("trace", "samples", "intervals", "phases"):
        assert {r["repetition"] for r in pq.read_table(out / f"{name}.parquet").to_pylist()} == {2, 3}, name

def test_a_long_repetition_stops_the_repeating(tmp):
    files = write_files(tmp / "in", "bigint", 2, 500)
    s = run_load_index(load_spec({"load": {"repetitions": 3, "repetition_limit_s": 1e-6, "optimize_limit_s": 0,
                                           "lookup_threads": 1, "lookup_count": 10, "sample_interval_s": 0.2}}, checked=False),
                       StorageTarget("tmpdisk", tmp / "target"), files, tmp / "results" / "one",
                       LoadCase("bigint", "one-file-at-a-time"))
    assert s["n"] == 1 and s["repetitions_requested"] == 3
