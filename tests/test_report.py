"""The HTML report and `catbench compare`, on real metrics files written into tmp_path."""

import argparse
import base64
import csv
import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from catbench.cli import report as cli_report
from catbench.report.compare import compare
from catbench.report.html import PLOTS, make_report, referenced_files
from catbench.report.plots import ALWAYS
from catbench.report.tables import MetricsError, make_tables
from support.paths import REPO
from support.predict import add_queries, queries_section, write_prediction
from support.runs import make_run, myrocks_load
from support.runs import REPORT
from support.servers import mounted, tmpfs
from support.text import line_with

PNG = b"\x89PNG\r\n\x1a\n"


def cli(*argv) -> int:
    parser = argparse.ArgumentParser()
    cli_report.add_subcommands(parser.add_subparsers(dest="command"))
    args = parser.parse_args([str(a) for a in argv])
    return args.func(args)


def check_index(index: Path) -> str:
    html = index.read_text()
    refs = referenced_files(index)
    assert refs, "index.html references nothing"
    for ref in refs:
        assert not ref.startswith("/"), f"absolute path {ref}"
        assert (index.parent / ref).is_file(), f"index.html references missing {ref}"
    assert not re.search(r'(src|href)="(https?:)?//', html), "index.html needs the network"
    for ref in refs:
        if ref.endswith(".png"):
            assert (index.parent / ref).read_bytes()[:8] == PNG
    # self-contained: every image inline, and a PNG
    srcs = re.findall(r'<img src="([^"]+)"', html)
    for src in srcs:
        assert src.startswith("data:image/png;base64,"), src[:40]
        assert base64.b64decode(src.split(",", 1)[1])[:8] == PNG
    return html


def shown_plots(html: str) -> set:
    return set(re.findall(r'<img src="data:image/png;base64,[^"]+" alt="[^"]*" data-name="([a-z_]+)"', html))


@pytest.mark.slow
def test_report_with_every_stage(tmp_path):
    run = make_run(tmp_path)
    add_queries(write_prediction(run), queries_section())    # predicted from a ladder, its queries too
    assert cli("tables", "--results", run) == 0
    assert cli("report", "--results", run) == 0
    index = run / "report" / "index.html"
    html = check_index(index)
    assert shown_plots(html) == set(PLOTS)   # all stages present: every plot shown, with its caption
    # the collapse plot's caption opens with its question (as resources/report words it)
    question = re.match(r"\*\*(.+?)\*\*", (REPO / "resources" / "report" / "plot_collapse.rst").read_text()).group(1)
    assert question in html
    for t in ("storage", "load_time", "load_rate", "queries", "restart", "chunks", "stages"):
        assert f'href="tables/{t}.csv"' in html
    # the answers come first, everything else follows collapsed
    assert html.index('id="findings"') < html.index('id="plots"') < html.index('id="tables"')
    assert html.index("Checks") < html.index('id="plots"')
    assert "does not return the same result" in html and "hunter2" not in html


@pytest.mark.slow
def test_report_without_tables_and_optional_stages(tmp_path):
    run = make_run(tmp_path, with_optional=False)
    out = tmp_path / "elsewhere"
    index = make_report(run, out, report=REPORT)            # tables not built: built on the fly
    html = check_index(index)
    assert "collapse" in shown_plots(html) and "query_latency" not in shown_plots(html)
    assert "query latency: no data in this run" in html
    for name in ALWAYS:   # declared rule outputs always exist
        assert (out / f"{name}.png").read_bytes()[:8] == PNG
    assert not [n for n in PLOTS if n not in ALWAYS and (out / f"{n}.png").exists()]   # no placeholder
    assert (out / "tables" / "queries.csv").read_text().startswith("target,query_engine,query,cache")


def test_report_fails_naming_a_corrupt_file(tmp_path):
    run = make_run(tmp_path)
    bad = run / "load" / "a" / "char28" / "innodb" / "one-file-at-a-time" / "trace.parquet"
    bad.write_text("nope")
    with pytest.raises(MetricsError, match=re.escape(str(bad))):
        make_report(run, tmp_path / "r", report=REPORT)


def _rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.slow
def test_a_resumed_load_is_marked_in_its_tables_and_findings_and_never_ranked(tmp_path):
    run = make_run(tmp_path, "resumed")
    summary = run / "load" / "a" / "char28" / "innodb" / "one-file-at-a-time" / "summary.json"
    s = json.loads(summary.read_text())
    summary.write_text(json.dumps({**s, "resumed_at_file": 2}))
    make_tables(run, report=REPORT)
    runs = [r for r in _rows(run / "tables" / "load_runs.csv") if r["strategy"] == "one-file-at-a-time"
            and r["target"] == "a"]
    assert [r["resumed_at_file"] for r in runs] == ["2"]
    times = {(r["target"], r["strategy"]): r for r in _rows(run / "tables" / "load_time.csv")}
    assert times[("a", "one-file-at-a-time")]["resumed"] == "true"
    assert times[("b", "one-file-at-a-time")]["resumed"] == "false"
    assert times[("a", "parallel")]["speedup_vs_one_file_at_a_time"] == ""   # against a resumed load
    make_report(run, run / "report", report=REPORT)
    md = (run / "report" / "summary.md").read_text()
    assert "was interrupted and resumed" in md and "is not ranked" in md


@pytest.mark.parametrize("fs", ["full", "read-only"])
def test_a_report_that_cannot_be_written_is_one_line_and_leaves_nothing(tmp_path, capsys, fs):
    run = make_run(tmp_path)
    with (tmpfs("64k") if fs == "full" else mounted("tmpfs", "size=1m,ro")) as d:
        assert cli("report", "--results", run, "--out", d / "report") == 1
        err = capsys.readouterr().err
        assert f"the report could not be written to {d / 'report'}" in err and "Traceback" not in err, err
        assert not [p.name for p in d.iterdir() if p.name != "lost+found"] if fs == "read-only" else \
            not (d / "report").exists() and not list(d.glob(".report.partial-*"))


@pytest.mark.slow
def test_load_io_gives_each_rows_device_bytes_cpu_and_stalls_and_the_findings_say_why(tmp_path):
    # InnoDB's misses and stalls, and MyRocks' own bytes and write stalls (support.runs.myrocks_load)
    run = make_run(tmp_path, "io")
    d = run / "load" / "a" / "char28" / "innodb" / "one-file-at-a-time"
    s = json.loads((d / "summary.json").read_text())
    (d / "summary.json").write_text(json.dumps({**s, "row_bytes": 36}))
    t = [1000.0 + i for i in range(11)]                  # 1,000 rows in 10 s; no row written in s 4-7
    written = [0, 100, 200, 300, 400, 400, 400, 400, 600, 800, 1000]
    pq.write_table(pa.table({
        "time": t, "table_bytes": [i * 2**16 for i in range(11)],
        "dev_read_bytes": [10**6 + i * 16384 for i in range(11)],          # 160 KiB in all
        "dev_write_bytes": [5 * 10**6 + i * 36_000 for i in range(11)],    # 360,000 B: 10x 1,000 x 36 B
        "dev_read_ios": [i * 10 for i in range(11)], "dev_write_ios": [i * 20 for i in range(11)],
        "server_user_s": [i * 0.4 for i in range(11)], "server_sys_s": [i * 0.1 for i in range(11)],
        "Handler_write": written, "Innodb_buffer_pool_reads": [i * 50 for i in range(11)]}), d / "samples.parquet")
    ends = [1001.0, 1002.0, 1006.0, 1010.0]              # 250 rows a file: 250, 250, then 62.5 rows/s
    pq.write_table(pa.table({"file": [f"f{i}" for i in range(4)], "rows": [250] * 4, "bytes": [7500] * 4,
                             "start": [1000.0] + ends[:3], "end": ends,
                             "cumulative_rows": [250, 500, 750, 1000]}), d / "trace.parquet")
    myrocks_load(run)
    make_tables(run, report=REPORT)
    rows = {(r["target"], r["engine"], r["strategy"]): r for r in _rows(run / "tables" / "load_io.csv")}
    lsm = rows[("a", "rocksdb", "one-file-at-a-time")]     # MyRocks' own bytes and its write stalls
    assert float(lsm["compact_write_bytes_per_row"]) == 120 and float(lsm["compact_read_bytes_per_row"]) == 80
    assert float(lsm["rocksdb_stalls"]) == 3 and float(lsm["stall_share"]) == pytest.approx(0.25)
    assert float(lsm["stall_us_per_row"]) == pytest.approx(1000.0)
    assert float(lsm["block_misses_per_row"]) == pytest.approx(0.9) and float(lsm["index_misses_per_row"]) == 0.5
    assert float(lsm["index_kb_per_row"]) == pytest.approx(1000.0)
    r = rows[("a", "innodb", "one-file-at-a-time")]
    assert float(r["write_kb_per_row"]) == pytest.approx(360 / 1024, rel=1e-3)
    assert float(r["read_kb_per_row"]) == pytest.approx(163_840 / 1000 / 1024, rel=1e-3)
    assert float(r["write_amp"]) == pytest.approx(10.0) and r["n"] == "1"
    assert float(r["server_cpu_us_per_row"]) == pytest.approx(5000.0)      # 5 CPU-s for 1,000 rows
    assert float(r["innodb_misses_per_row"]) == pytest.approx(0.5)
    assert float(r["longest_stall_s"]) == pytest.approx(3.0)               # s 5, 6 and 7 wrote nothing
    assert float(r["stmt_p50_s"]) == pytest.approx(2.5)                    # 4 files in 10 s
    curve = [c for c in _rows(run / "tables" / "load_curve.csv")
             if (c["target"], c["engine"], c["strategy"], c["repetition"]) == ("a", "innodb", "one-file-at-a-time", "0")]
    assert len(curve) == 4                                 # per window (one file): the samples inside it
    for c in curve:
        per_s = float(c["rows_per_s"])
        assert float(c["write_MBps"]) == pytest.approx(0.036) and float(c["read_iops"]) == pytest.approx(10)
        assert float(c["write_kb_per_row"]) == pytest.approx(36_000 / per_s / 1024, rel=1e-3)
        assert float(c["server_cpu_us_per_row"]) == pytest.approx(0.5e6 / per_s, rel=1e-3)
        assert float(c["innodb_misses_per_row"]) == pytest.approx(50 / per_s, rel=1e-3)
    make_report(run, run / "report", report=REPORT)
    md = (run / "report" / "summary.md").read_text()
    # each figure with its unit, on the line of its load
    assert line_with(md, "`one-file-at-a-time`", "wrote 0.352 KiB", "read 0.16 KiB", "write amplification 10.0x")
    assert line_with(md, "table ÷ pool ≥ 0.029", "2 windows", "1 repetition", "0.8 page misses", "0.16 device reads",
                     "0.562 KiB written", "62.5 rows/s", "10.0 requests/s")
    assert line_with(md, "50.0 B of WAL", "40.0 B of memtable flushes", "120 B written by compaction",
                     "80.0 B read by compaction", "3 write stalls", "25%")
    assert line_with(md, "1,000 KiB of SST index blocks", "0.5 index blocks")


@pytest.mark.slow
def test_compare_gives_ratios_b_over_a(tmp_path, capsys):
    a = make_run(tmp_path, "runA")
    b = make_run(tmp_path, "runB", factor=0.5)
    (b / "fio" / "c").mkdir()
    (b / "fio" / "c" / "fio.csv").write_text(
        "target,test,MBps,iops,clat_p50_us,clat_p99_us\nc,seq-read,1,1,1,1\n")
    make_tables(a, report=REPORT)
    make_tables(b, report=REPORT)
    assert cli("compare", a, b) == 0
    out = b / "tables" / "compare_runA.csv"
    printed = capsys.readouterr().out
    assert str(out) in printed and "load_time" in printed
    assert "common offset: " in printed and "not comparable: 0 figures" in printed
    rows = {(r["table"], r["key"], r["column"]): r for r in _rows(out)}
    r = rows[("load_time", "target=a, variant=char28, engine=innodb, strategy=parallel", "seconds")]
    assert float(r["a"]) == 4.0 and float(r["b"]) == 2.0 and float(r["ratio"]) == 0.5
    assert float(rows[("load_time", "target=a, variant=char28, engine=innodb, strategy=parallel", "rows_per_s")]["ratio"]) == 2.0
    assert float(rows[("load_time", "target=a, variant=char28, engine=innodb, strategy=parallel", "rows")]["ratio"]) == 1.0
    assert float(rows[("storage", "target=b, test=seq-read", "MBps")]["ratio"]) == 0.5
    assert rows[("storage", "target=c, test=seq-read", "(row)")]["note"] == "only in B"
    assert float(rows[("queries", "target=b, query_engine=mariadb, query=q1, cache=cold", "p50_s")]["ratio"]) == 0.5
    assert float(rows[("chunks", "chunkId=11", "tsv_bytes")]["ratio"]) == 1.0
    # same data in the API, and --out
    assert any(x["column"] == "seconds" and x["ratio"] == 0.5 for x in compare(a, b, REPORT))
    assert cli("compare", a / "tables", b, "--out", tmp_path / "c.csv") == 0
    assert _rows(tmp_path / "c.csv") == _rows(out)


def test_compare_sets_no_figure_beside_another_names(tmp_path):
    """A run whose tables name a variant and a strategy otherwise (seed / sequential, the names
    before char28 / one-file-at-a-time) is not mapped onto today's: its rows are only in A."""
    a = make_run(tmp_path, "runA")
    b = make_run(tmp_path, "runB", factor=0.5)
    make_tables(a, report=REPORT)
    make_tables(b, report=REPORT)
    old = a / "tables" / "load_time.csv"
    old.write_text(old.read_text().replace("char28", "seed").replace("one-file-at-a-time", "sequential"))
    assert "seed" in old.read_text()
    rows = {(r["table"], r["key"], r["column"]): r for r in compare(a, b, REPORT)}
    assert rows[("load_time", "target=a, variant=seed, engine=innodb, strategy=parallel", "(row)")]["note"] == "only in A"
    assert rows[("load_time", "target=a, variant=char28, engine=innodb, strategy=parallel", "(row)")]["note"] == "only in B"


def test_a_load_folder_of_the_layout_before_engines_is_refused_naming_the_version_that_reads_it(tmp_path):
    from catbench.report.inputs import MetricsError, collect
    run = make_run(tmp_path, "runA")
    (run / "load" / "a" / "char28" / "sorted").mkdir(parents=True)   # load/<target>/<variant>/<strategy>/
    with pytest.raises(MetricsError, match=r"char28/sorted: .*storage engine.* 3df751e"):   # the folder, the version
        collect(run)


def test_compare_without_tables_fails_clearly(tmp_path, capsys):
    a = make_run(tmp_path, "runA")
    make_tables(a, report=REPORT)
    assert cli("compare", a, tmp_path / "nothing") == 1
    assert str(tmp_path / "nothing") in capsys.readouterr().err
    assert cli("compare", a, a / "tables") == 1     # a run against itself is no A/A check
    assert "compared with itself" in capsys.readouterr().err and not (a / "tables" / "compare_runA.csv").exists()


def test_paths_with_a_single_quote(tmp_path, capsys):
    # paths reach DuckDB as arguments, never pasted into SQL text
    root = tmp_path / "o'brien"
    a = make_run(root, "run'A")
    b = make_run(root, "run'B", factor=0.5)
    make_tables(a, report=REPORT)
    make_tables(b, report=REPORT)
    assert _rows(a / "tables" / "load_time.csv")[0]["target"] == "a"
    assert cli("compare", a, b) == 0
    rows = {(r["table"], r["key"], r["column"]): r for r in _rows(b / "tables" / "compare_run'A.csv")}
    assert float(rows[("load_time", "target=a, variant=char28, engine=innodb, strategy=parallel", "seconds")]["ratio"]) == 0.5


@pytest.mark.slow
def test_a_report_made_again_over_its_own_copies_and_refused_over_other_files(tmp_path):
    run = make_run(tmp_path, with_optional=False)
    index = make_report(run, report=REPORT)
    # Snakemake's --forcerun removes the outputs it declares (index.html, the plots), not the copies
    for p in index.parent.iterdir():
        if p.name == "index.html" or p.suffix == ".png":
            p.unlink()
    assert make_report(run, report=REPORT).is_file()
    (index.parent / "notes.txt").write_text("mine")
    with pytest.raises(MetricsError, match="holds other files than a report"):
        make_report(run, report=REPORT)
    assert (index.parent / "notes.txt").read_text() == "mine"


@pytest.mark.slow
def test_a_report_made_again_after_snakemake_removed_its_declared_outputs(tmp_path):
    run = make_run(tmp_path, with_optional=False)
    write_prediction(run)                    # its plots are not declared: Snakemake leaves them
    index = make_report(run, report=REPORT)
    # what `snakemake report_html --forcerun report_html` removes first: index.html and the ALWAYS plots
    for p in [index, *(index.parent / f"{n}.png" for n in ALWAYS)]:
        p.unlink()
    assert (index.parent / "at_scale.png").is_file() and (index.parent / "tables").is_dir()
    assert make_report(run, report=REPORT).is_file()
    assert all((index.parent / f"{n}.png").is_file() for n in ALWAYS)


@pytest.mark.parametrize("mine", ["pictures", pytest.param("tables", marks=pytest.mark.slow)])
def test_a_folder_of_other_files_is_never_taken_for_a_report(tmp_path, mine):
    run = make_run(tmp_path, with_optional=False)
    out = tmp_path / "mine"
    if mine == "pictures":     # PNGs alone: someone's pictures, not a report's plots
        (out / "holiday.png").parent.mkdir()
        (out / "holiday.png").write_bytes(PNG)
    else:                      # a report's names, but tables/ holds other files than its CSVs
        make_report(run, out, report=REPORT)
        (out / "tables" / "notes.txt").write_text("mine")
    with pytest.raises(MetricsError, match="holds other files than a report"):
        make_report(run, out, report=REPORT)
    assert (out / ("holiday.png" if mine == "pictures" else "tables/notes.txt")).is_file()


@pytest.mark.slow
def test_tables_and_report_read_only_this_configs_results_and_name_the_others(tmp_path, caplog):
    run = make_run(tmp_path, with_optional=False)
    # this config: target a only, and only its parallel load; b and a's one-file load are an earlier config's
    inputs = [run / "fio" / "a" / "fio.csv", run / "load" / "a" / "char28" / "innodb" / "parallel",
              run / "targets" / "a.json", run / "chunks" / "chunks.tsv", run / "metrics" / "partition.json"]
    assert cli("tables", "--results", run, "--inputs", *inputs) == 0
    assert [(r["target"], r["strategy"]) for r in _rows(run / "tables" / "load_time.csv")] == [("a", "parallel")]
    assert {r["target"] for r in _rows(run / "tables" / "storage.csv")} == {"a"}
    stale = "fio/b, load/a/char28/innodb/one-file-at-a-time, load/b, targets/b.json"
    assert line_with(caplog.text, f"still in {run}", stale)
    md = (run / "tables" / "summary.md").read_text()
    assert stale in md and "- b (" not in md
    prov = json.loads((run / "tables" / "provenance.json").read_text())
    assert list(prov["targets"]) == ["a"] and len(prov["left_out"]) == 4
    assert cli("report", "--results", run, "--inputs", *inputs) == 0
    assert stale in (run / "report" / "index.html").read_text()
    assert cli("tables", "--results", run) == 0      # by hand, without --inputs: every folder of the run
    assert {r["target"] for r in _rows(run / "tables" / "load_time.csv")} == {"a", "b"}


@pytest.mark.slow
@pytest.mark.parametrize("column, value", [("seconds_min", "quick"), ("seconds_values", "4.0;oops"),
                                           ("n", "three")])
def test_text_in_a_numeric_cell_of_a_table_is_one_line_naming_file_column_and_row(tmp_path, capsys,
                                                                                   column, value):
    a, b = make_run(tmp_path, "A"), make_run(tmp_path, "B")
    make_tables(a, report=REPORT)
    make_tables(b, report=REPORT)
    path = b / "tables" / "load_time.csv"
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    rows[2][rows[0].index(column)] = value
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    capsys.readouterr()
    assert cli("compare", a, b) == 1
    assert cli("report", "--results", b) == 1
    err = capsys.readouterr().err.splitlines()
    line = f"{path}: column {column}, row 2 (line 3): {value!r} is not a number"
    assert len(err) == 2 and all(line in e for e in err), err


@pytest.mark.slow
def test_the_report_opens_with_the_users_catalog(tmp_path):
    run = make_run(tmp_path)
    pj = run / "metrics" / "partition.json"
    doc = json.loads(pj.read_text())
    doc["catalog"] = {"patch_objects": 150000, "ra_width_deg": 1.0, "dec_height_deg": 1.0, "density": 150000.0,
                      "densest": 150000.0, "copies": 2, "objects": 300000, "sources_per_object": 2.0,
                      "num_stripes": 85, "num_sub_stripes_per_stripe": 12}
    pj.write_text(json.dumps(doc))
    index = make_report(run, report=REPORT)
    md = (index.parent / "summary.md").read_text()
    first = md.split("\n## ")[1]
    assert first.startswith("Your catalog"), md[:400]
    for said in ("**patch rows** 150,000;", "**footprint** 1.000 x 1.000 deg;", "150,000 objects/deg²",
                 "**copies** 2;", "**chunks** 3 at 85 x 12 stripes, largest 4 objects;",
                 "**bytes a row** ", "`catbench predict --config C"):
        assert said in first, (said, first)
    page = index.read_text()
    assert page.index('id="catalog"') < page.index('id="answer"') < page.index('id="findings"')


def test_a_short_load_that_came_back_is_not_called_a_collapse():
    from catbench.report.findings import collapse
    row = {"target": "a", "variant": "char28", "strategy": "one-file-at-a-time", "engine": "innodb", "n": 3,
           "n_halved": 1, "initial_rows_per_s": 1000.0, "final_rows_per_s": 1060.0, "final_over_initial": 1.06,
           "half_table_over_pool": 2.72, "half_table_over_pool_ci_low": None, "half_table_over_pool_ci_high": None}
    text = collapse([row], [])[0]
    assert "did not collapse" in text and "fell below half" not in text, text
    low = collapse([{**row, "final_over_initial": 0.2, "final_rows_per_s": 200.0}], [])[0]
    assert "fell below half" in low and "did not collapse" not in low


def test_an_empty_answer_is_counted_and_its_agreement_said_as_such():
    from catbench.report.findings import queries as query_findings
    from catbench.report.summary import Tables, queries as query_table
    runs = [{"target": "a", "query_engine": e, "query": q, "cache": "warm", "run": i, "seconds": 0.1 + i,
             "result_rows": rows} for e in ("mariadb", "duckdb") for i in range(3)
            for q, rows in (("HV1", 1), ("HV2", 0))]
    said = " ".join(query_findings(runs, {"threshold": REPORT.practical_threshold, "alpha": REPORT.alpha}))
    assert "HV answers: HV1 1 row(s); HV2 **empty**" in said, said
    rows = [{"target": "a", "query_engine": e, "query": q, "cache": "warm", "p50_s": 0.1, "result_rows": n,
             "agrees": True} for e in ("mariadb", "duckdb") for q, n in (("HV1", 1), ("HV2", 0))]
    table = query_table(Tables(queries=rows), REPORT)[1]
    assert table[2][-2:] == ["answer rows", "agrees"]
    assert table[3][1][-2:] == ["0", "yes (both empty)"] and table[3][0][-2:] == ["1", "yes"]


def test_what_bounds_each_query_is_read_from_its_cache_states_with_the_rule():
    """Reads where the evicted (or, without it, the cold) runs are told slower than the warm ones; the
    engine's start where cold is told slower than evicted; neither: its own work. Differences the
    rule cannot tell from noise name nothing."""
    from catbench.report.summary import Tables, _bounds
    runs = []
    for q, tg, e, states in (
            ("HV2", "parquet", "duckdb", {"warm": 0.09, "evicted": 0.2, "cold": 0.22}),
            ("HV2", "disk", "lsdb", {"warm": 2.0, "evicted": 2.0, "cold": 4.2}),
            ("SHV1", "disk", "lsdb", {"warm": 3.0, "evicted": 3.0, "cold": 3.0}),
            ("HV2", "disk", "mysql", {"warm": 0.3, "cold": 1.2}),
            ("LV1", "disk", "mysql", {"cold": 0.01})):
        for cache, s in states.items():
            runs += [{"query": q, "target": tg, "query_engine": e, "cache": cache, "seconds": s * (1 + 0.02 * k)}
                     for k in (-1, 0, 1)]
    [(kind, caption, head, rows)] = _bounds(Tables(query_runs=runs), REPORT)
    assert head == ["query", "target/engine", "bound"] and "comparison rule" in caption
    got = {(q, te): b for q, te, b in rows}
    assert got[("HV2", "parquet/duckdb")] == "reading its data (evicted 2.2× warm)"
    assert got[("HV2", "disk/lsdb")] == "the engine's start (cold 2.1× evicted)"
    assert got[("SHV1", "disk/lsdb")] == "its own work (CPU, tasks): evicted not told from warm"
    assert got[("HV2", "disk/mysql")] == "reading its data (cold (a restart too) 4× warm)"
    assert ("LV1", "disk/mysql") not in got          # no warm runs: nothing to read a bound from
