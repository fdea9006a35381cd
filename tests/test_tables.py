"""Final tables from a fixed set of real metrics files written into tmp_path."""

import csv
import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from catbench.cli import report as cli_report
from catbench.core.infra.resources import resources_dir
from catbench.report.tables import TABLES, MetricsError, collect, make_tables
from catbench.restart.cluster.rows import LOAD_KEYS, ROW_KEYS

COLUMNS_MD = resources_dir() / "report" / "columns.md"

# (target, variant, strategy) -> (seconds, rows, checksum_ok, optimize_stopped)
LOADS = {
    ("a", "char28", "one-file-at-a-time"): (10.0, 1000, True, False),
    ("a", "char28", "parallel"): (4.0, 1000, True, True),
    ("b", "char28", "one-file-at-a-time"): (5.0, 1000, False, False),
}


def _csv(path: Path, header: list, rows: list, delimiter=","):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh, delimiter=delimiter)
        w.writerow(header)
        w.writerows(rows)


def _json(path: Path, doc):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))


def write_load(run: Path, target, variant, strategy, seconds, rows, checksum_ok, stopped,
               intervals_csv=False):
    # target b: the layout of results from before storage engines (no <engine>/ level: InnoDB)
    d = run / "load" / target / variant / strategy if target == "b" else \
        run / "load" / target / variant / "innodb" / strategy
    _json(d / "summary.json", {
        "target": target, "variant": variant, "strategy": strategy, "files": 4, "rows": rows,
        "seconds": seconds, "rows_per_s": rows / seconds, "table_bytes": 2**20 * int(seconds),
        "checksum_ok": checksum_ok, "optimize_seconds": 1.5, "optimize_stopped": stopped,
        "lookup_qps": 1000.0, "lookup_p50_s": 0.001, "lookup_p99_s": 0.0025,
        "storage": {"fstype": "ext4", "device": "vda"},
        "server": {"version": "mariadbd Ver 10.11", "binary": "/usr/sbin/mariadbd",
                   "settings": {"innodb_buffer_pool_size": "256M", "password": "hunter2"},
                   "variables": {"version": "10.11.9-MariaDB", "innodb_buffer_pool_size": "268435456",
                                 "datadir": f"/x/{target}/{strategy}/data/"}},
    })
    t0 = 1000.0
    per = rows // 4
    pq.write_table(pa.table({
        "file": [f"part-{i:05d}.tsv" for i in range(4)], "rows": [per] * 4, "bytes": [per * 30] * 4,
        "start": [t0 + i * seconds / 4 for i in range(4)],
        "end": [t0 + (i + 1) * seconds / 4 for i in range(4)],
        "seconds": [seconds / 4] * 4, "cumulative_rows": [per * (i + 1) for i in range(4)]}),
        d / "trace.parquet")
    pq.write_table(pa.table({"time": [t0, t0 + seconds / 2, t0 + seconds],
                             "table_bytes": [0, 2**19, 2**20], "cpu_percent": [0.0, 50.0, 60.0]}),
                   d / "samples.parquet")
    iv = {"interval": [0, 1], "start_s": [0.0, seconds / 2], "end_s": [seconds / 2, seconds],
          "files": [2, 2], "rows": [rows // 2, rows // 2], "rows_per_s": [rows / seconds] * 2,
          "input_read_MBps": [1.5, 2.5], "target_write_MBps": [3.0, 4.0],
          "innodb_write_MBps": [1.0, 1.0], "table_bytes": [2**19, 2**20]}
    if intervals_csv:
        _csv(d / "intervals.csv", list(iv), list(zip(*iv.values())))
    else:
        pq.write_table(pa.table(iv), d / "intervals.parquet")


# the phases restart/cluster/rows.py phase_rows writes, per kind, in its order
CLUSTER_PHASES = {
    "node-restart-ist": ["shutdown", "node_down"],
    "node-restart-sst": ["shutdown", "wipe_datadir", "node_down"],
    "node-crash": ["kill", "wsrep_recover", "innodb_crash_recovery", "node_down"],
}
CLUSTER_STARTS = ["process_start_to_primary", "process_start_to_transfer_start", "process_start_to_engine_ready",
                  "process_start_to_transfer_end", "process_start_to_joined", "process_start_to_synced",
                  "process_start_to_first_answer", "down_to_synced", "down_to_first_answer"]


def write_cluster(run: Path, target: str, kind: str, answers: list, lost: int = 0, down_s: float = 2.0,
                  inserts_during: float = 800.0) -> Path:
    """``cluster/<target>/<kind>.json`` as restart/cluster/driver.py writes it: one repetition per
    seconds in ``answers`` (new process -> first correct answer); ``lost`` acknowledged inserts
    missing after the last repetition (the stage then records "failed" and stops)."""
    transfer = "SST" if kind == "node-restart-sst" else "IST"
    rows, load, verify = [], [], []
    for rep_, ans in enumerate(answers):
        acked, rep_lost = 1000 * (rep_ + 1), lost if rep_ == len(answers) - 1 else 0
        secs = dict.fromkeys(CLUSTER_PHASES[kind], 0.5)
        secs.update(node_down=down_s, process_start_to_primary=0.2, process_start_to_transfer_start=0.3,
                    process_start_to_engine_ready=ans / 2, process_start_to_transfer_end=ans * 0.8,
                    process_start_to_joined=ans * 0.85, process_start_to_synced=ans * 0.9,
                    process_start_to_first_answer=ans, down_to_synced=down_s + ans * 0.9,
                    down_to_first_answer=down_s + ans, state_transfer=ans * 0.5, ist_apply=0.1)
        for phase, s in secs.items():
            row = dict.fromkeys(ROW_KEYS)
            row.update(target=target, kind=kind, repetition=rep_, node="node3", phase=phase, seconds=s,
                       clock="client", donor="node2", acked_inserts=acked, acked_lost=rep_lost,
                       checksums_equal=True)
            if phase in ("state_transfer", "ist_apply"):
                row.update(transfer=transfer if phase == "state_transfer" else "IST", transfer_bytes=5_000_000,
                           transfer_MBps=5_000_000 / 1e6 / s, clock="log-observed")
            rows.append(row)
        for window, rate in (("before", 1000.0), ("during", inserts_during), ("after", 990.0)):
            for node, role in (("node1", "insert"), ("node2", "donor"), ("node3", "restarted")):
                r = dict.fromkeys(LOAD_KEYS)
                r.update(target=target, kind=kind, repetition=rep_, window=window, window_s=5.0, node=node,
                         role=role, lookups_ok=500, lookups_failed=3 if role == "restarted" else 0,
                         lookups_per_s=100.0, lookup_p50_ms=0.5, lookup_p99_ms=2.0)
                if role == "insert":
                    r.update(insert_rows=int(rate * 5), inserts_per_s=rate * (1 + rep_ / 100),
                             insert_max_latency_s=0.05, insert_failures=0)
                load.append(r)
        verify.append({"repetition": rep_, "checksums_equal": True, "acked_inserts": acked, "in_doubt_inserts": 0,
                       "acked_lost": rep_lost, "nodes": {}, "failed": None})
    doc = {"target": target, "variant": "bigint", "nodes": 3, "files": 4, "kind": kind,
           "rows": rows, "load": load, "verify": verify, "detail": [{"repetition": i} for i in range(len(answers))]}
    if lost:
        doc["failed"] = verify[-1]["failed"] = f"{lost} acknowledged inserts missing or changed on a node"
    else:
        doc["summary"] = {"repetitions": len(answers), "acked_lost": 0}
    _json(run / "cluster" / target / f"{kind}.json", doc)
    (run / "cluster" / target / "node3-error.log").write_text("WSREP: Shifting JOINED -> SYNCED\n")
    return run / "cluster" / target / f"{kind}.json"


def write_isolation(job_dir: Path, target, alone=True, others=(), slurm=(), locks=()) -> None:
    """``isolation.json`` beside a measuring job's results, as core/infra/jobs/isolation.py writes it."""
    _json(job_dir / "isolation.json", {
        "host": "node1", "target": target, "slurm_job": None, "start": 1000.0, "slurm_exclusive": None,
        "end": 1010.5, "shared_locks": list(locks), "other_catbench_jobs": list(others),
        "other_slurm_jobs": list(slurm), "alone": alone})


def make_run(root: Path, name="run1", factor=1.0, with_optional=True) -> Path:
    """A complete results/<run> directory; ``factor`` scales load seconds and fio MBps."""
    run = root / name
    for tg, mbps in (("a", 100.0), ("b", 400.0)):
        _csv(run / "fio" / tg / "fio.csv",
             ["target", "test", "MBps", "iops", "clat_p50_us", "clat_p99_us", "direct", "numjobs",
              "size_bytes", "runtime_s", "json"],
             [[tg, "seq-read", mbps * factor, mbps, 10.0, 20.0, "true", 1, 1024, 1, "x.json"],
              [tg, "rand-read", mbps / 10 * factor, mbps * 100, 5.0, 9.0, "false", 4, 1024, 1, "y.json"]])
    for i, ((tg, v, s), (sec, rows, ok, stopped)) in enumerate(LOADS.items()):
        write_load(run, tg, v, s, sec * factor, rows, ok, stopped, intervals_csv=(i == 2))
    _csv(run / "chunks" / "chunks.tsv",
         ["chunkId", "object_rows", "source_rows", "overlap_rows", "parquet_bytes", "tsv_bytes", "ra_centre",
          "dec_centre"],
         [[10, 1, 9, 2, 50, 100, 30.0, -87.9], [11, 2, 18, 3, 90, 200, 90.0, -87.9],
          [12, 4, 36, 5, 170, 400, 150.0, -87.9]], delimiter="\t")
    _json(run / "metrics" / "partition.json",
          {"stages": {"patch": {"jobs": 1, "rows": 10, "wall_seconds": 2.0, "busy_seconds": 2.0,
                                "rows_per_s": 5.0, "peak_rss_mb": 100.0, "start": 1.0},
                      "catalog": {"jobs": 2, "rows": 100, "wall_seconds": 4.0, "busy_seconds": 7.0,
                                  "rows_per_s": 25.0, "peak_rss_mb": 150.0, "start": 2.0}}})
    _json(run / "metrics" / "jobs" / "patch.json", {"stage": "patch", "seconds": 2.0})
    _json(run / "targets" / "a.json", {"path": "/x/a", "fstype": "ext4", "device": "vda",
                                       "total_bytes": 10**12})
    _json(run / "targets" / "b.json", {"path": "/x/b", "fstype": "tmpfs", "device": None,
                                       "total_bytes": 10**10})
    if with_optional:
        q = [{"query": "q1", "cache": "cold", "run": i, "seconds": s, "result_rows": 1,
              "answer": 42, "digest": "d42"} for i, s in enumerate([1.0, 2.0, 3.0])]
        q += [{"query": "q2", "cache": "warm", "run": 0, "seconds": 0.5, "result_rows": 3,
               "answer": "abc", "digest": "dabc"}]
        _json(run / "queries" / "a" / "mariadb" / "results.json", {"rows": q})
        d = run / "queries" / "b" / "mariadb"
        d.mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist([
            {"query": "q1", "cache": "cold", "run": 0, "seconds": 0.5 * factor, "result_rows": 1,
             "answer": "41", "digest": "d41"},
            {"query": "q2", "cache": "warm", "run": 0, "seconds": 0.25, "result_rows": 3,
             "answer": "abc", "digest": "dabc"}]), d / "results.parquet")
        _json(run / "restart" / "a" / "crash.json", [
            {"repetition": 0, "phase": "shutdown", "seconds": 1.0},
            {"repetition": 0, "phase": "recovery", "seconds": 3.0, "rows_expected": 100,
             "rows_found": 95, "rows_lost": 5, "redo_bytes": 3_000_000, "recovery_MBps": 1.0}])
        write_cluster(run, "a", "node-restart-ist", [4.0])
        write_cluster(run, "a", "node-crash", [6.0])
        _json(run / "cluster" / "a" / "summary.json", {"target": "a", "rows_lost_total": 0})
        for job in ("fio/a", "fio/b", "load/a/char28/innodb/one-file-at-a-time", "queries/a/mariadb", "restart/a"):
            write_isolation(run / job, job.split("/")[1])
    return run


def read(path: Path) -> list:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def header(path: Path) -> list:
    with open(path, newline="") as fh:
        return next(csv.reader(fh))


def documented_columns() -> dict:
    """{table: [columns]} from the '## <table>.csv' sections of columns.md."""
    out, current = {}, None
    for line in COLUMNS_MD.read_text().splitlines():
        m = re.match(r"^## (\w+)\.csv\s*$", line)
        if m:
            current = out.setdefault(m.group(1), [])
            continue
        if line.startswith("## "):
            current = None
        elif current is not None:
            m = re.match(r"^\| `([^`]+)` \|", line)
            if m:
                current.append(m.group(1))
    return out


@pytest.fixture
def built(tmp_path):
    run = make_run(tmp_path)
    make_tables(run)
    return run / "tables"


def by(rows, *keys):
    return {tuple(r[k] for k in keys): r for r in rows}


def test_storage_and_load_tables_have_known_values(built):
    st = by(read(built / "storage.csv"), "target", "test")
    assert float(st[("b", "seq-read")]["MBps"]) == 400.0
    assert st[("a", "rand-read")]["direct"] == "false" and st[("a", "rand-read")]["numjobs"] == "4"
    assert [r["test"] for r in read(built / "storage.csv")][:2] == ["seq-read", "rand-read"]

    lt = by(read(built / "load_time.csv"), "target", "variant", "strategy")
    assert len(lt) == 3 and {r["engine"] for r in lt.values()} == {"innodb"}   # b: the older layout
    par = lt[("a", "char28", "parallel")]
    assert float(par["speedup_vs_one_file_at_a_time"]) == 2.5
    assert float(par["rows_per_s"]) == 250.0
    assert float(par["lookup_p50_ms"]) == 1.0 and float(par["lookup_p99_ms"]) == 2.5
    assert float(par["optimize_seconds"]) == 1.5 and par["optimize_stopped"] == "true"
    assert lt[("b", "char28", "one-file-at-a-time")]["checksum_ok"] == "false"
    assert float(lt[("b", "char28", "one-file-at-a-time")]["speedup_vs_one_file_at_a_time"]) == 1.0
    assert int(lt[("a", "char28", "one-file-at-a-time")]["table_bytes"]) == 10 * 2**20

    lr = by(read(built / "load_rate.csv"), "target", "strategy", "interval")
    assert len(lr) == 6
    r = lr[("b", "one-file-at-a-time", "1")]          # from intervals.csv
    assert float(r["interval_s"]) == 2.5 and r["files_loaded"] == "2" and r["rows_loaded"] == "500"
    assert float(r["input_read_MBps"]) == 2.5 and float(r["target_write_MBps"]) == 4.0
    assert int(r["table_bytes_end"]) == 2**20 and float(r["rows_per_s"]) == 200.0


def test_queries_restart_chunks_stages(built):
    q = by(read(built / "queries.csv"), "target", "query", "cache")
    q1 = q[("a", "q1", "cold")]
    assert q1["n"] == "3" and float(q1["p50_s"]) == 2.0 and float(q1["max_s"]) == 3.0
    # the interval of the typical (geometric-mean, 1.82 s) value: three runs from 1 to 3 s say little
    assert float(q1["min_s"]) == 1.0 and float(q1["ci_low_s"]) < 1.0 and float(q1["ci_high_s"]) > 3.0
    assert sorted(map(float, q1["values_s"].split(";"))) == [1.0, 2.0, 3.0]
    assert q[("a", "q2", "warm")]["ci_low_s"] == ""          # one run: no interval
    assert float(q1["p95_s"]) == pytest.approx(2.9)
    assert q1["answer"] == "42" and q1["agrees"] == "false"          # b answered 41
    assert q[("b", "q2", "warm")]["agrees"] == "true" and q[("b", "q2", "warm")]["engine"] == "mariadb"

    rs = read(built / "restart.csv")
    assert [r["phase"] for r in rs] == ["shutdown", "recovery"]      # order of the file
    assert rs[1]["target"] == "a" and rs[1]["kind"] == "crash" and rs[1]["rows_lost"] == "5"
    assert int(rs[1]["redo_bytes"]) == 3_000_000

    ch = read(built / "chunks.csv")
    assert [float(r["tsv_bytes_vs_median"]) for r in ch] == [0.5, 1.0, 2.0]
    assert [float(r["rows_vs_median"]) for r in ch] == [0.5, 1.0, 2.0]

    sg = read(built / "stages.csv")
    assert [r["stage"] for r in sg] == ["patch", "catalog"] and float(sg[1]["wall_seconds"]) == 4.0


def test_every_csv_has_exactly_its_documented_columns(built, tmp_path):
    doc = documented_columns()
    assert set(TABLES) <= set(doc)
    for t in TABLES:
        assert header(built / f"{t}.csv") == doc[t], t
    # a run with absent stages: header-only files, same columns
    run = tmp_path / "bare"
    _csv(run / "fio" / "x" / "fio.csv", ["target", "test", "MBps", "iops", "clat_p50_us", "clat_p99_us"],
         [["x", "seq-read", 1.0, 1.0, 1.0, 2.0]])
    make_tables(run)
    for t in TABLES:
        assert header(run / "tables" / f"{t}.csv") == doc[t], t
        if t not in ("storage", "storage_runs"):
            assert read(run / "tables" / f"{t}.csv") == [], t


def test_summary_opens_with_findings_and_names_failed_checks(built):
    md = (built / "summary.md").read_text()
    assert md.index("## Findings") < md.index("## Checks") < md.index("## Storage | load time")
    # single runs: the lowest median is named, never as the fastest nor as a finding
    assert "a (char28 table): `parallel` has the lowest median, 4.00 s [single run]" in md
    assert "is fastest" not in md
    assert "too few repetitions to tell" in md and "not a finding" in md
    assert "Fastest target" not in md and "Fastest load of variant" not in md
    assert "checksum of the loaded table does not match" in md and "b/char28/innodb/one-file-at-a-time" in md
    assert "5 rows lost" in md
    assert "Query q1 does not return the same result" in md
    assert "OPTIMIZE TABLE was stopped" in md
    assert "| target | variant | filesystem |" in md and "ext4" in md       # storage | load time
    assert "Load rate per interval (char28/one-file-at-a-time)" in md


def test_provenance_has_versions_settings_hardware_and_no_password(built):
    text = (built / "provenance.json").read_text()
    assert "hunter2" not in text and '"password"' not in text
    p = json.loads(text)
    for k in ("catbench", "duckdb", "pyarrow", "polars", "numpy", "kernel", "fio", "snakemake",
              "mysql-connector-python"):
        assert k in p["versions"]
    assert p["versions"]["server"] == "10.11.9-MariaDB"
    assert p["server"]["variables"]["innodb_buffer_pool_size"] == "268435456"
    assert p["host"]["cpu"]["logical_cpus"] >= 1 and p["host"]["memory"]["MemTotal_bytes"] > 0
    assert p["targets"]["b"]["fstype"] == "tmpfs"


def _corrupt(path: Path, text: bytes = b"\x00\x01 not what it should be \xff"):
    path.write_bytes(text)


@pytest.mark.parametrize("rel, action", [
    ("load/a/char28/innodb/parallel/trace.parquet", "delete"),
    ("load/a/char28/innodb/parallel/summary.json", "delete"),
    ("load/b/char28/one-file-at-a-time/samples.parquet", "corrupt"),
    ("load/a/char28/innodb/one-file-at-a-time/summary.json", "corrupt"),
    ("fio/a/fio.csv", "delete"),
    ("fio/b/fio.csv", "header-only-wrong"),
    ("chunks/chunks.tsv", "delete"),
    ("metrics/partition.json", "corrupt"),
    ("metrics/jobs/patch.json", "corrupt"),
    ("queries/a/mariadb/results.json", "corrupt"),
    ("queries/b/mariadb/results.parquet", "corrupt"),
    ("restart/a/crash.json", "wrong-types"),
])
def test_missing_or_corrupt_file_fails_naming_it(tmp_path, rel, action, capsys):
    run = make_run(tmp_path)
    path = run / rel
    if action == "delete":
        path.unlink()
    elif action == "corrupt":
        _corrupt(path)
    elif action == "header-only-wrong":
        path.write_text("target,what\nb,1\n")
    elif action == "wrong-types":
        _json(path, [{"phase": "x", "seconds": "not a number"}])
    with pytest.raises(MetricsError) as exc:
        make_tables(run, tmp_path / "out")
    assert str(path) in str(exc.value)
    # the CLI: exit code 1, the path on stderr, no traceback
    import argparse
    parser = argparse.ArgumentParser()
    cli_report.add_subcommands(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["tables", "--results", str(run), "--out", str(tmp_path / "out2")])
    assert args.func(args) == 1
    err = capsys.readouterr().err
    assert str(path) in err and "Traceback" not in err


def test_require_a_missing_stage(tmp_path):
    run = make_run(tmp_path, with_optional=False)
    inp = collect(run, require=("fio", "load"))
    assert inp.views["query_runs"].num_rows == 0
    with pytest.raises(MetricsError, match="queries"):
        collect(run, require=("queries",))


def test_chunk_list_with_a_single_quote_in_paths(tmp_path):
    # `catbench chunk-list` (the chunks.tsv read here): paths are DuckDB arguments, not SQL text
    import argparse

    from catbench.cli.main import cmd_chunk_list
    d = tmp_path / "it's"
    _csv(d / "m'1.tsv", ["chunkId", "table", "rows", "parquet_bytes", "tsv_bytes"],
         [[1, "Object", 5, 10, 20], [1, "Source", 7, 11, 21], [1, "ObjectOverlap", 2, 3, 4]], "\t")
    _csv(d / "m2.tsv", ["chunkId", "table", "rows", "parquet_bytes", "tsv_bytes"],
         [[0, "Object", 9, 9, 9]], "\t")
    _json(d / "job's.json", {"stage": "patch", "start": 1, "end": 2, "seconds": 1, "peak_rss_mb": 1,
                             "rows": 3})
    out = d / "chunk's.tsv"
    cfg = json.dumps({"partition": {"num_stripes": 85, "num_sub_stripes_per_stripe": 12}})
    cmd_chunk_list(argparse.Namespace(manifests=[str(d / "m'1.tsv"), str(d / "m2.tsv")], out=str(out),
                                      job_metrics=[str(d / "job's.json")], summary=str(d / "p.json"),
                                      config=cfg))
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    assert [r["chunkId"] for r in rows] == ["0", "1"]
    assert rows[1] == {"chunkId": "1", "object_rows": "5", "source_rows": "7", "overlap_rows": "2",
                       "parquet_bytes": "24", "tsv_bytes": "45", "ra_centre": "540.0", "dec_centre": "-88.9412"}
    # the chunker's centre of each id, whatever the id (chunk 1 of the one-chunk polar stripe here)
