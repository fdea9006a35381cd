"""Results trees of runs (results/<run>/) built from fixed real metrics files, as the
stages write them, for the report's tables, summary, compare and pages."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from catbench.cli.report import report_spec
from catbench.core.infra.resources import resources_dir
from catbench.report.tables import make_tables
from catbench.restart.cluster.rows import LOAD_KEYS, ROW_KEYS

# the report's spec with the schema's defaults, as the command line builds it
REPORT = report_spec()

# seconds of repeated loads
FAST = [1.00, 1.04, 0.97]            # three repetitions each
SLOW = [2.00, 2.10, 1.95]            # clearly apart from FAST
OVERLAPS_FAST = [1.02, 0.90, 1.15]   # intervals overlap FAST's

# (target, variant, strategy) -> (seconds, rows, checksum_ok, optimize_stopped)
LOADS = {
    ("a", "char28", "one-file-at-a-time"): (10.0, 1000, True, False),
    ("a", "char28", "parallel"): (4.0, 1000, True, True),
    ("b", "char28", "one-file-at-a-time"): (5.0, 1000, False, False),
}


def write_csv(path: Path, header: list, rows: list, delimiter=","):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh, delimiter=delimiter)
        w.writerow(header)
        w.writerows(rows)


def write_json(path: Path, doc):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))


def write_load(run: Path, target, variant, strategy, seconds, rows, checksum_ok, stopped,
               intervals_csv=False):
    d = run / "load" / target / variant / "innodb" / strategy
    write_json(d / "summary.json", {
        "target": target, "variant": variant, "engine": "innodb", "strategy": strategy, "files": 4, "rows": rows,
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
                             "table_bytes": [0, 2**19, 2**20], "cpu_percent": [0.0, 50.0, 60.0],
                             "dev_read_bytes": [0, 2**12, 2**13], "dev_write_bytes": [0, 2**19, 2**20],
                             "server_user_s": [0.0, seconds / 4, seconds / 2], "server_sys_s": [0.0, 0.1, 0.2],
                             "Handler_write": [0, rows // 2, rows]}),
                   d / "samples.parquet")
    iv = {"interval": [0, 1], "start_s": [0.0, seconds / 2], "end_s": [seconds / 2, seconds],
          "files": [2, 2], "rows": [rows // 2, rows // 2], "rows_per_s": [rows / seconds] * 2,
          "input_read_MBps": [1.5, 2.5], "target_write_MBps": [3.0, 4.0],
          "innodb_write_MBps": [1.0, 1.0], "table_bytes": [2**19, 2**20]}
    if intervals_csv:
        write_csv(d / "intervals.csv", list(iv), list(zip(*iv.values())))
    else:
        pq.write_table(pa.table(iv), d / "intervals.parquet")


# the phases restart/cluster/rows.py phase_rows writes, per kind, in its order
CLUSTER_PHASES = {
    "node-restart-ist": ["shutdown", "node_down"],
    "node-restart-sst": ["shutdown", "wipe_datadir", "node_down"],
    "node-crash": ["kill", "wsrep_recover", "innodb_crash_recovery", "node_down"],
}


def write_cluster(run: Path, target: str, kind: str, answers: list, lost: int = 0, down_s: float = 2.0,
                  inserts_during: float = 800.0) -> Path:
    """``cluster/<target>/<kind>.json`` as restart/cluster/run.py writes it: one repetition per
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
    write_json(run / "cluster" / target / f"{kind}.json", doc)
    (run / "cluster" / target / "node3-error.log").write_text("WSREP: Shifting JOINED -> SYNCED\n")
    return run / "cluster" / target / f"{kind}.json"


def write_isolation(job_dir: Path, target, alone=True, others=(), slurm=(), locks=()) -> None:
    """``isolation.json`` beside a measuring job's results, as core/jobs/isolation.py writes it."""
    write_json(job_dir / "isolation.json", {
        "host": "node1", "target": target, "slurm_job": None, "start": 1000.0, "slurm_exclusive": None,
        "end": 1010.5, "shared_locks": list(locks), "other_catbench_jobs": list(others),
        "other_slurm_jobs": list(slurm), "alone": alone})


def make_run(root: Path, name="run1", factor=1.0, with_optional=True) -> Path:
    """A complete results/<run> directory; ``factor`` scales load seconds and fio MBps."""
    run = root / name
    for tg, mbps in (("a", 100.0), ("b", 400.0)):
        write_csv(run / "fio" / tg / "fio.csv",
             ["target", "test", "MBps", "iops", "clat_p50_us", "clat_p99_us", "direct", "numjobs",
              "size_bytes", "runtime_s", "json"],
             [[tg, "seq-read", mbps * factor, mbps, 10.0, 20.0, "true", 1, 1024, 1, "x.json"],
              [tg, "rand-read", mbps / 10 * factor, mbps * 100, 5.0, 9.0, "false", 4, 1024, 1, "y.json"]])
    for i, ((tg, v, s), (sec, rows, ok, stopped)) in enumerate(LOADS.items()):
        write_load(run, tg, v, s, sec * factor, rows, ok, stopped, intervals_csv=(i == 2))
    write_csv(run / "chunks" / "chunks.tsv",
         ["chunkId", "object_rows", "source_rows", "overlap_rows", "parquet_bytes", "tsv_bytes", "ra_centre",
          "dec_centre"],
         [[10, 1, 9, 2, 50, 100, 30.0, -87.9], [11, 2, 18, 3, 90, 200, 90.0, -87.9],
          [12, 4, 36, 5, 170, 400, 150.0, -87.9]], delimiter="\t")
    write_json(run / "metrics" / "partition.json",
          {"stages": {"patch": {"jobs": 1, "rows": 10, "wall_seconds": 2.0, "busy_seconds": 2.0,
                                "rows_per_s": 5.0, "peak_rss_mb": 100.0, "start": 1.0},
                      "catalog": {"jobs": 2, "rows": 100, "wall_seconds": 4.0, "busy_seconds": 7.0,
                                  "rows_per_s": 25.0, "peak_rss_mb": 150.0, "start": 2.0}}})
    write_json(run / "metrics" / "jobs" / "patch.json", {"stage": "patch", "seconds": 2.0})
    write_json(run / "targets" / "a.json", {"path": "/x/a", "fstype": "ext4", "device": "vda",
                                       "total_bytes": 10**12})
    write_json(run / "targets" / "b.json", {"path": "/x/b", "fstype": "tmpfs", "device": None,
                                       "total_bytes": 10**10})
    if with_optional:
        q = [{"query": "q1", "cache": "cold", "run": i, "seconds": s, "result_rows": 1,
              "answer": 42, "digest": "d42"} for i, s in enumerate([1.0, 2.0, 3.0])]
        q += [{"query": "q2", "cache": "warm", "run": 0, "seconds": 0.5, "result_rows": 3,
               "answer": "abc", "digest": "dabc"}]
        write_json(run / "queries" / "a" / "mariadb" / "results.json", {"rows": q})
        d = run / "queries" / "b" / "mariadb"
        d.mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist([
            {"query": "q1", "cache": "cold", "run": 0, "seconds": 0.5 * factor, "result_rows": 1,
             "answer": "41", "digest": "d41"},
            {"query": "q2", "cache": "warm", "run": 0, "seconds": 0.25, "result_rows": 3,
             "answer": "abc", "digest": "dabc"}]), d / "results.parquet")
        write_json(run / "restart" / "a" / "crash.json", [
            {"repetition": 0, "phase": "shutdown", "seconds": 1.0},
            {"repetition": 0, "phase": "recovery", "seconds": 3.0, "rows_expected": 100,
             "rows_found": 95, "rows_lost": 5, "redo_bytes": 3_000_000, "recovery_MBps": 1.0}])
        write_cluster(run, "a", "node-restart-ist", [4.0])
        write_cluster(run, "a", "node-crash", [6.0])
        write_json(run / "cluster" / "a" / "summary.json", {"target": "a", "rows_lost_total": 0})
        for job in ("fio/a", "fio/b", "load/a/char28/innodb/one-file-at-a-time", "queries/a/mariadb", "restart/a"):
            write_isolation(run / job, job.split("/")[1])
    return run


def write_repeated_load(run: Path, target, strategy, secs, variant="char28"):
    """One load repeated, a repetition per seconds in ``secs``, as the load stage writes it."""
    d = run / "load" / target / variant / "innodb" / strategy
    d.mkdir(parents=True, exist_ok=True)
    reps = [{"repetition": i, "rows": 1000, "seconds": s, "rows_per_s": 1000 / s, "table_bytes": 2**20,
             "checksum_ok": True, "optimize_stopped": False} for i, s in enumerate(secs)]
    (d / "summary.json").write_text(json.dumps({
        "target": target, "variant": variant, "strategy": strategy, "files": 4, "rows": 1000,
        "seconds": sorted(secs)[len(secs) // 2], "checksum_ok": True, "repetitions": reps,
        "server": {"variables": {"innodb_buffer_pool_size": "6291456"}}}))
    rows = [{"repetition": i, "file": f"f{k}", "rows": 250, "bytes": 1, "start": 100.0 * i + k * s / 4,
             "end": 100.0 * i + (k + 1) * s / 4, "cumulative_rows": 250 * (k + 1)}
            for i, s in enumerate(secs) for k in range(4)]
    pq.write_table(pa.Table.from_pylist(rows), d / "trace.parquet")
    pq.write_table(pa.Table.from_pylist([{"repetition": i, "time": 100.0 * i + t, "table_bytes": b}
                                         for i in range(len(secs)) for t, b in ((0, 0), (50, 2**20))]),
                   d / "samples.parquet")
    pq.write_table(pa.Table.from_pylist([{"repetition": i, "interval": 0, "start_s": 0.0, "end_s": s, "files": 4,
                                          "rows": 1000} for i, s in enumerate(secs)]), d / "intervals.parquet")


def run_with_loads(tmp_path: Path, name: str, loads: dict) -> Path:
    """A run of repeated loads only, {(target, strategy): [seconds per repetition]}, and its tables."""
    run = tmp_path / name
    for (target, strategy), secs in loads.items():
        write_repeated_load(run, target, strategy, secs)
    make_tables(run, report=REPORT)
    return run


def myrocks_load(run: Path) -> Path:
    """Target a's `parallel` load of ``make_run`` made MyRocks' one-file-at-a-time load, its samples
    with the LSM's counters: 1,000 rows in 4 s, 50 B of WAL, 40 B of memtable flushes, 120 B written
    and 80 B read by compaction a row, 3 write stalls that held it 1 s, 0.9 block-cache misses and
    0.5 SST index blocks (1,000 KiB) read again a row."""
    import shutil
    src, d = (run / "load" / "a" / "char28" / e / s for e, s in (("innodb", "parallel"),
                                                                   ("rocksdb", "one-file-at-a-time")))
    shutil.move(src, d)
    s = json.loads((d / "summary.json").read_text())
    write_json(d / "summary.json", {**s, "engine": "rocksdb", "strategy": "one-file-at-a-time", "optimize_stopped": False})
    pq.write_table(pa.table({
        "time": [1000.0 + i for i in range(5)], "table_bytes": [i * 2**16 for i in range(5)],
        "Handler_write": [0, 250, 500, 750, 1000], "dev_read_bytes": [0] * 5,
        "dev_write_bytes": [i * 100_000 for i in range(5)], "server_user_s": [i * 0.5 for i in range(5)],
        "server_sys_s": [0.0] * 5, "Rocksdb_wal_bytes": [i * 12_500 for i in range(5)],
        "Rocksdb_flush_write_bytes": [i * 10_000 for i in range(5)],
        "Rocksdb_compact_write_bytes": [i * 30_000 for i in range(5)],
        "Rocksdb_compact_read_bytes": [i * 20_000 for i in range(5)],
        "Rocksdb_stall_micros": [0, 0, 500_000, 1_000_000, 1_000_000],
        "Rocksdb_stall_total_stops": [0, 0, 1, 2, 2], "Rocksdb_stall_total_slowdowns": [0, 1, 1, 1, 1],
        "Rocksdb_block_cache_miss": [i * 225 for i in range(5)],
        "Rocksdb_block_cache_index_miss": [i * 125 for i in range(5)],
        "Rocksdb_block_cache_index_bytes_insert": [i * 256_000_000 for i in range(5)]}),
        d / "samples.parquet")
    return d


COLUMNS_MD = resources_dir() / "report" / "columns.md"


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
