"""Final tables from a fixed set of real metrics files written into tmp_path."""

import csv
import json
from pathlib import Path

import pytest
from catbench.cli import report as cli_report
from catbench.report.tables import TABLES, MetricsError, collect, make_tables
from support.runs import documented_columns, make_run, write_csv, write_json
from support.runs import REPORT
from support.text import line_with



def read(path: Path) -> list:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def header(path: Path) -> list:
    with open(path, newline="") as fh:
        return next(csv.reader(fh))


@pytest.fixture
def built(tmp_path):
    run = make_run(tmp_path)
    make_tables(run, report=REPORT)
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
    # three runs from 1 to 3 s cannot bound the typical value within 10x: said in words, no range
    assert float(q1["min_s"]) == 1.0 and q1["ci_low_s"] == q1["ci_high_s"] == ""
    assert q1["ci_note_s"].startswith("n = 3 ") and "interval spans" in q1["ci_note_s"]
    assert sorted(map(float, q1["values_s"].split(";"))) == [1.0, 2.0, 3.0]
    assert q[("a", "q2", "warm")]["ci_low_s"] == ""          # one run: no interval
    assert float(q1["p95_s"]) == pytest.approx(2.9)
    assert q1["answer"] == "42" and q1["agrees"] == "false"          # b answered 41
    assert q[("b", "q2", "warm")]["agrees"] == "true" and q[("b", "q2", "warm")]["query_engine"] == "mariadb"

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
    write_csv(run / "fio" / "x" / "fio.csv", ["target", "test", "MBps", "iops", "clat_p50_us", "clat_p99_us"],
         [["x", "seq-read", 1.0, 1.0, 1.0, 2.0]])
    make_tables(run, report=REPORT)
    for t in TABLES:
        assert header(run / "tables" / f"{t}.csv") == doc[t], t
        if t not in ("storage", "storage_runs"):
            assert read(run / "tables" / f"{t}.csv") == [], t


def test_summary_opens_with_findings_and_names_failed_checks(built):
    md = (built / "summary.md").read_text()
    assert md.index("## Findings") < md.index("## Checks") < md.index("## Storage | load time")
    # single runs: the lowest median is named, never as the fastest nor as a finding
    assert line_with(md, "a (char28 table): `parallel`", "lowest median", "4.00 s [single run]")
    assert "is fastest" not in md
    assert "too few repetitions to tell" in md and "not a finding" in md
    assert "Fastest target" not in md and "Fastest load of variant" not in md
    assert line_with(md, "b/char28/innodb/one-file-at-a-time", "checksum", "does not match")
    assert "5 rows lost" in md
    assert line_with(md, "Query q1", "same result", "rows, digest")     # the query, what each engine returned
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
    ("load/b/char28/innodb/one-file-at-a-time/samples.parquet", "corrupt"),
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
        write_json(path, [{"phase": "x", "seconds": "not a number"}])
    with pytest.raises(MetricsError) as exc:
        make_tables(run, tmp_path / "out", report=REPORT)
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

    from catbench.cli.prepare import cmd_chunk_list
    d = tmp_path / "it's"
    write_csv(d / "m'1.tsv", ["chunkId", "table", "rows", "parquet_bytes", "tsv_bytes"],
         [[1, "Object", 5, 10, 20], [1, "Source", 7, 11, 21], [1, "ObjectOverlap", 2, 3, 4]], "\t")
    write_csv(d / "m2.tsv", ["chunkId", "table", "rows", "parquet_bytes", "tsv_bytes"],
         [[0, "Object", 9, 9, 9]], "\t")
    write_json(d / "job's.json", {"stage": "patch", "start": 1, "end": 2, "seconds": 1, "peak_rss_mb": 1,
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


def test_a_bad_report_value_fails_at_the_command_line_naming_its_key():
    from catbench.core.infra.config import ConfigError
    with pytest.raises(ConfigError, match=r"config key 'report\.confidence'"):
        cli_report.report_spec({"confidence": 2})
    with pytest.raises(ConfigError, match=r"config key 'report\.confidense': unknown key"):
        cli_report.report_spec({"confidense": 0.9})
    assert cli_report.report_spec({"practical_threshold": 0.2}).practical_threshold == 0.2


def test_provenance_records_the_ram_each_loads_server_had():
    from catbench.report.tables import server_settings
    p = Path("load/a/char28/innodb/one-file-at-a-time/summary.json")
    caged = {"target": "a", "variant": "char28", "engine": "innodb", "strategy": "one-file-at-a-time",
             "server": {"variables": {}, "ram": 805306368, "ram_peak": 805302272}}
    free = {**caged, "strategy": "sorted", "server": {"variables": {}}}
    assert server_settings([(p, caged), (p, free)])["ram_by_load"] == {
        "a/char28/innodb/one-file-at-a-time": {"limit_bytes": 805306368, "peak_bytes": 805302272}}
