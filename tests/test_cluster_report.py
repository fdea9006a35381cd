"""Galera node restarts (results/<run>/cluster/) and the isolation records of measuring jobs in
the final tables, the findings, the checks and the report, from files written here in the
stages' own format (support/runs.py)."""

import csv
from pathlib import Path

import pytest
from catbench.report.html import make_report
from catbench.report.stats import SEP
from catbench.report.summary import summary_sections
from catbench.report.tables import make_tables, read_tables
from support.runs import make_run, write_cluster, write_isolation
from support.runs import REPORT
from support.text import line_with


def read(path: Path) -> list:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def section(md: str, title: str) -> str:
    start = md.index(title)
    end = md.find("\n## ", start + 1)
    return md[start:end if end >= 0 else None]


@pytest.fixture
def cluster_run(tmp_path):
    run = make_run(tmp_path, with_optional=False)
    write_cluster(run, "disk", "node-crash", [6.0, 6.5, 7.0])
    write_cluster(run, "disk", "node-restart-ist", [2.0, 2.2, 2.1], inserts_during=500.0)
    write_cluster(run, "disk", "node-restart-sst", [20.0, 22.0, 21.0])
    (run / "cluster" / "disk" / "node-crash.error.json").write_text('{"error": "an earlier attempt"}')
    (run / "cluster" / "disk" / "summary.json").write_text('{"target": "disk", "rows_lost_total": 0}')
    return run


@pytest.mark.slow
def test_cluster_table_and_finding(cluster_run):
    make_tables(cluster_run, report=REPORT)
    rows = read(cluster_run / "tables" / "cluster_restart.csv")
    assert [r["kind"] for r in rows if r["phase"] == "node_down"] == [
        "node-restart-ist", "node-restart-sst", "node-crash"]          # the stage's order of kinds
    by = {(r["kind"], r["phase"]): r for r in rows}
    ans = by[("node-restart-sst", "process_start_to_first_answer")]
    assert ans["n"] == "3" and float(ans["seconds"]) == 21.0
    assert float(ans["seconds_min"]) == 20.0 and float(ans["seconds_max"]) == 22.0
    assert float(ans["seconds_ci_low"]) < 20.0 < 22.0 < float(ans["seconds_ci_high"])
    assert sorted(map(float, ans["seconds_values"].split(SEP))) == [20.0, 21.0, 22.0]
    xfer = by[("node-restart-sst", "state_transfer")]
    assert xfer["transfer"] == "SST" and int(xfer["transfer_bytes"]) == 5_000_000 and xfer["donors"] == "node2"
    assert by[("node-crash", "state_transfer")]["transfer"] == "IST"
    assert [r["phase"] for r in rows if r["kind"] == "node-crash"][:4] == [
        "kill", "wsrep_recover", "innodb_crash_recovery", "node_down"]  # phases in the file's order
    assert {r["acked_lost"] for r in rows} == {"0"} and {r["checksums_equal"] for r in rows} == {"true"}
    assert by[("node-crash", "node_down")]["acked_inserts"] == "3000"

    load = {(r["kind"], r["window"], r["role"]): r for r in read(cluster_run / "tables" / "cluster_load.csv")}
    during = load[("node-restart-ist", "during", "insert")]
    assert during["n"] == "3" and float(during["inserts_per_s"]) == 505.0 and during["nodes"] == "node1"
    assert during["inserts_per_s_ci_low"] and len(during["inserts_per_s_values"].split(SEP)) == 3
    assert load[("node-restart-ist", "during", "restarted")]["lookups_failed"] == "9"

    md = (cluster_run / "tables" / "summary.md").read_text()
    found = section(md, "### A Galera cluster node restarted under load")
    assert "`node-restart-ist` (IST) **2.10 s** [" in found and "`node-restart-sst` (SST) **21.0 s** [" in found
    assert "`node-crash` (IST) **6.50 s** [" in found and "after it went down" in found
    assert line_with(found, "`node-restart-ist` 505 rows/s [")       # the insert rate while down
    assert "Acknowledged inserts lost: 0 of 3,000" in found and "FAILED" not in found
    # the comparison rule judges the two fastest kinds: 2.1 s against 6.5 s, three repetitions each
    assert line_with(found, "disk", "first answer", "`node-restart-ist` is ", "faster than `node-crash`")
    checks = section(md, "## Checks")
    assert "Cluster restart" not in checks     # (make_run's loads fail checks of their own)
    alone = summary_sections({k: v for k, v in read_tables(cluster_run / "tables").items() if "cluster" in k},
                             None, REPORT)
    assert line_with(str(alone), "All checks passed", "acknowledged insert", "cluster node restart")
    assert "| disk | node-restart-sst | SST | 3 |" in section(md, "## Cluster node restart")

    html = make_report(cluster_run, report=REPORT).read_text()
    assert 'data-name="cluster_restart"' in html and 'href="tables/cluster_restart.csv"' in html
    assert 'href="tables/isolation.csv"' in html


@pytest.mark.slow
def test_lost_acknowledged_inserts_are_a_failed_check(cluster_run):
    write_cluster(cluster_run, "disk", "node-crash", [6.0, 6.5], lost=7)
    make_tables(cluster_run, report=REPORT)
    rows = read(cluster_run / "tables" / "cluster_restart.csv")
    crash = [r for r in rows if r["kind"] == "node-crash"]
    assert {r["acked_lost"] for r in crash} == {"7"} and crash[0]["failed"].startswith("7 acknowledged inserts")
    md = (cluster_run / "tables" / "summary.md").read_text()
    checks = section(md, "## Checks")
    assert "check(s) FAILED" in checks
    assert line_with(checks, "node-crash", "disk", "7 acknowledged inserts lost")
    assert line_with(md, "FAILED", "`node-crash` 7", "3,000 acknowledged")
    html = make_report(cluster_run, report=REPORT).read_text()
    assert '<p class="fail">' in html and line_with(html, "node-crash", "disk", "7 acknowledged inserts lost")
    assert html.index("7 acknowledged inserts lost") < html.index('id="plots"')   # at the top, not in a table


@pytest.mark.slow
def test_a_measuring_job_that_did_not_run_alone_is_named(cluster_run):
    for job in ("fio/a", "fio/b", "load/a/char28/innodb/one-file-at-a-time", "cluster/disk"):
        write_isolation(cluster_run / job, job.split("/")[1])
    make_tables(cluster_run, report=REPORT)
    md = (cluster_run / "tables" / "summary.md").read_text()
    assert "All 4 measuring jobs ran alone (isolation.csv)." in section(md, "## Checks")
    iso = read(cluster_run / "tables" / "isolation.csv")
    assert {(r["stage"], r["job"]) for r in iso} >= {("cluster", "cluster/disk"), ("fio", "fio/a")}
    assert {r["alone"] for r in iso} == {"true"} and float(iso[0]["seconds"]) == 10.5
    # the isolation record beside the cluster results is not a restart kind
    assert "isolation" not in {r["kind"] for r in read(cluster_run / "tables" / "cluster_restart.csv")}

    write_isolation(cluster_run / "load/b/char28/innodb/one-file-at-a-time", "b", alone=False,
                    others=["4242 catbench fio --target b"], slurm=["77 other-job"])
    write_isolation(cluster_run / "fio/a", "a", alone=False, locks=["/tmp/catbench-measure-0.lock: {\"pid\": 9}"])
    make_tables(cluster_run, report=REPORT)
    iso = read(cluster_run / "tables" / "isolation.csv")
    assert [r["job"] for r in iso[:2]] == ["fio/a", "load/b/char28/innodb/one-file-at-a-time"]          # not alone first
    assert iso[1]["other_catbench_jobs"] == "4242 catbench fio --target b" and iso[1]["other_slurm_jobs"] == "77 other-job"
    checks = section((cluster_run / "tables" / "summary.md").read_text(), "## Checks")
    # each job named with what it met: the other command, the Slurm job, the lock
    assert line_with(checks, "load/b/char28/innodb/one-file-at-a-time", "did NOT run alone",
                     "4242 catbench fio --target b", "77 other-job")
    assert line_with(checks, "fio/a", "did NOT run alone", "/tmp/catbench-measure-0.lock")
    assert "ran alone (isolation.csv)" not in checks and "check(s) FAILED" in checks
    html = make_report(cluster_run, report=REPORT).read_text()
    assert line_with(html, "load/b/char28/innodb/one-file-at-a-time", "did NOT run alone")


@pytest.mark.slow
def test_a_run_without_the_cluster_stage(tmp_path):
    run = make_run(tmp_path, with_optional=False)
    make_tables(run, report=REPORT)
    for t in ("cluster_restart", "cluster_load", "isolation"):
        text = (run / "tables" / f"{t}.csv").read_text()
        assert text.count("\n") == 1 and text.startswith(("target,kind,", "stage,job,")), t
    md = (run / "tables" / "summary.md").read_text()
    assert "Galera" not in md and "## Cluster node restart" not in md
    assert "No isolation records in this run" in md
    html = make_report(run, report=REPORT).read_text()
    assert 'data-name="cluster_restart"' not in html and "cluster restart: no data in this run" in html


def test_an_n2_interval_does_not_hide_the_insert_rates():
    """The inserts panel is cut at 1.5x the fastest bar: one n=2 interval reaching 117,618
    rows/s (as a crashed node's rate of 135 and 363 rows/s gave) must not shrink the
    1,000 rows/s bars to slivers."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from catbench.report.plots.cluster_restart import _cluster_inserts
    load = [{"target": "t", "kind": "node-crash", "window": w, "role": "insert", "inserts_per_s": v,
             "inserts_per_s_ci_low": lo, "inserts_per_s_ci_high": hi}
            for w, v, lo, hi in (("before", 1000, 990, 1010), ("during", 249, 0.42, 117618),
                                 ("after", 1001, 995, 1007))]
    fig, ax = plt.subplots()
    _cluster_inserts(ax, load, [("t", "node-crash")])
    assert ax.get_xlim() == pytest.approx((0, 1501.5))
    plt.close(fig)
