"""The one comparison rule (report/stats.py) and its wording wherever a result is judged:
findings in summary.md, and `catbench compare`. Distributions that overlap are "within
noise", separated ones are a finding, a single run is never one."""

import csv
import json

import pytest
from catbench.report.compare import compare
from catbench.report.stats import (
    Figure,
    median_interval,
    ratio_interval,
    sentence,
    verdict,
)
from catbench.report.tables import make_tables
from test_tables import make_run

FAST = [1.00, 1.04, 0.97]            # three repetitions each
SLOW = [2.00, 2.10, 1.95]            # clearly apart from FAST
OVERLAPS_FAST = [1.02, 0.90, 1.15]   # intervals overlap FAST's
NEAR = [1.05, 1.052, 1.051]          # apart from FAST? no: FAST's interval reaches 1.04; and < 10 %


def test_interval_of_the_median_is_seeded_and_inside_the_data():
    lo, hi = median_interval([3.0, 1.0, 2.0, 5.0, 4.0])
    assert 1.0 <= lo <= 3.0 <= hi <= 5.0
    assert median_interval([3.0, 1.0, 2.0, 5.0, 4.0]) == (lo, hi)     # same rows, same interval
    assert median_interval([7.0]) == (None, None)                      # one run: no interval
    assert median_interval([2.0, 2.0, 2.0]) == (2.0, 2.0)
    r, rlo, rhi = ratio_interval(SLOW, FAST)
    assert r == pytest.approx(2.0) and rlo < r < rhi and rlo > 1.5


def test_separated_distributions_are_a_finding():
    v = verdict(Figure.of(FAST), Figure.of(SLOW))
    assert v.kind == "better" and v.ratio == pytest.approx(2.0)
    text = sentence("sorted", "sequential", v, unit="s")
    assert text == "sorted is 2.00x faster than sequential: 1.00 s [0.97–1.04, n=3] vs 2.00 s [1.95–2.10, n=3]."
    # and the other way round, for a figure where higher is better
    v = verdict(Figure.of([100, 98, 103]), Figure.of([10, 11, 9.5]), higher_is_better=True)
    assert v.kind == "better" and v.ratio == pytest.approx(10.0)


def test_overlapping_distributions_are_within_noise():
    v = verdict(Figure.of(FAST), Figure.of(OVERLAPS_FAST))
    assert v.kind == "noise" and not v.real
    assert sentence("disk", "tmpfs", v, unit="s").startswith("disk and tmpfs are within noise (n=3 vs 3)")


def test_a_difference_below_the_practical_threshold_is_noise():
    a, b = Figure.of([1.000, 1.001, 1.002]), Figure.of([1.050, 1.051, 1.052])
    assert a.hi < b.lo                                   # significant...
    assert verdict(a, b, threshold=0.10).kind == "noise"  # ...but only 5 %
    assert verdict(a, b, threshold=0.01).kind == "better"


def test_a_single_run_is_never_a_finding():
    v = verdict(Figure.of([1.0]), Figure.of([9.0]))
    assert v.kind == "single"
    text = sentence("a", "b", v, unit="s")
    assert text == "a vs b: 1.00 s [single run] vs 9.00 s [single run] — single runs, not a finding."


def _load(run, target, strategy, secs, variant="seed"):
    d = run / "load" / target / variant / "innodb" / strategy
    d.mkdir(parents=True, exist_ok=True)
    reps = [{"repetition": i, "rows": 1000, "seconds": s, "rows_per_s": 1000 / s, "table_bytes": 2**20,
             "checksum_ok": True, "optimize_stopped": False} for i, s in enumerate(secs)]
    (d / "summary.json").write_text(json.dumps({
        "target": target, "variant": variant, "strategy": strategy, "files": 4, "rows": 1000,
        "seconds": sorted(secs)[len(secs) // 2], "checksum_ok": True, "repetitions": reps,
        "server": {"variables": {"innodb_buffer_pool_size": "6291456"}}}))
    import pyarrow as pa
    import pyarrow.parquet as pq
    rows = [{"repetition": i, "file": f"f{k}", "rows": 250, "bytes": 1, "start": 100.0 * i + k * s / 4,
             "end": 100.0 * i + (k + 1) * s / 4, "cumulative_rows": 250 * (k + 1)}
            for i, s in enumerate(secs) for k in range(4)]
    pq.write_table(pa.Table.from_pylist(rows), d / "trace.parquet")
    pq.write_table(pa.Table.from_pylist([{"repetition": i, "time": 100.0 * i + t, "table_bytes": b}
                                         for i in range(len(secs)) for t, b in ((0, 0), (50, 2**20))]),
                   d / "samples.parquet")
    pq.write_table(pa.Table.from_pylist([{"repetition": i, "interval": 0, "start_s": 0.0, "end_s": s, "files": 4,
                                          "rows": 1000} for i, s in enumerate(secs)]), d / "intervals.parquet")


def _run_with(tmp_path, name, loads):
    run = tmp_path / name
    for (target, strategy), secs in loads.items():
        _load(run, target, strategy, secs)
    make_tables(run)
    return run


def test_findings_word_overlapping_and_separated_loads(tmp_path):
    run = _run_with(tmp_path, "r", {("disk", "sequential"): [10 * s for s in SLOW],
                                    ("disk", "sorted"): FAST, ("disk", "bulk"): OVERLAPS_FAST,
                                    ("tmpfs", "sequential"): [1.1, 1.0, 1.05], ("tmpfs", "sorted"): [1.0, 1.02, 0.99]})
    md = (run / "tables" / "summary.md").read_text()
    findings = md[md.index("## Findings"):md.index("## Checks")]
    # disk: sorted is 20x faster than the seed's protocol (apart), bulk is within noise of sorted
    assert "disk (seed table): **`sorted` is fastest**, 1.00 s [0.97–1.04, n=3] — **20.0x** [" in findings
    assert "faster than the seed's protocol `sequential`, 20.0 s [19.5–21.0, n=3]." in findings
    assert "It is within noise of `bulk`, 1.02 s [0.9–1.15, n=3] (n=3 vs 3)." in findings
    # tmpfs: 5 % apart, intervals overlapping: no speed-up is claimed
    line = next(x for x in findings.splitlines() if x.startswith("- tmpfs (seed table)"))
    assert "within noise of the seed's protocol `sequential`" in line and "faster than" not in line
    with open(run / "tables" / "load_time.csv", newline="") as fh:
        lt = {(r["target"], r["strategy"]): r for r in csv.DictReader(fh)}
    s = lt[("disk", "sorted")]
    assert s["n"] == "3" and float(s["seconds_ci_low"]) >= 0.97 and float(s["seconds_ci_high"]) <= 1.04
    assert float(s["speedup_ci_low"]) > 15 and float(s["speedup_vs_sequential"]) == pytest.approx(20.0)


def test_compare_gives_the_rules_verdict(tmp_path):
    a = _run_with(tmp_path, "A", {("disk", "sequential"): SLOW, ("disk", "sorted"): FAST})
    b = _run_with(tmp_path, "B", {("disk", "sequential"): FAST, ("disk", "sorted"): OVERLAPS_FAST})
    rows = {(r["table"], r["key"], r["column"]): r for r in compare(a, b)}
    seq = rows[("load_time", "target=disk, variant=seed, engine=innodb, strategy=sequential", "seconds")]
    assert seq["verdict"] == "B faster by 2.00x (intervals apart)"
    srt = rows[("load_time", "target=disk, variant=seed, engine=innodb, strategy=sorted", "seconds")]
    assert srt["verdict"] == "within noise (n=3 vs 3)"
    one = _run_with(tmp_path, "C", {("disk", "sequential"): [1.0]})
    rows = {(r["table"], r["key"], r["column"]): r for r in compare(a, one)}
    assert rows[("load_time", "target=disk, variant=seed, engine=innodb, strategy=sequential", "seconds")]["verdict"] \
        .startswith("not a finding: single run")


def test_single_runs_claim_nothing(tmp_path):
    run = make_run(tmp_path)            # every figure of this run is a single run
    make_tables(run)
    md = (run / "tables" / "summary.md").read_text()
    findings = md[md.index("## Findings"):md.index("## Checks")]
    assert "[single run]" in findings
    for line in findings.splitlines():
        if "faster" in line or "better" in line:
            assert "not a finding" in line, line


def test_a_stopped_load_is_never_ranked_by_its_seconds():
    """A load stopped at load.time_limit_s: its seconds are the limit. The findings rank
    finished loads, say how far the stopped one got, and compare engines by rate and by
    bytes per row (a stopped table holds fewer rows)."""
    from catbench.report import findings as fd

    def row(engine, strategy, secs, rows, table_bytes, stopped):
        return {"target": "disk", "variant": "seed", "engine": engine, "strategy": strategy, "n": 1,
                "seconds": secs, "rows": rows, "rows_per_s": rows / secs, "table_bytes": table_bytes,
                "stopped": stopped, "time_limit_s": 600.0 if stopped else None}
    loads = [row("innodb", "sorted", 588.0, 100_000_000, 6_100_000_000, False),
             row("innodb", "sequential", 601.0, 68_000_000, 4_400_000_000, True),
             row("rocksdb", "sequential", 600.5, 16_000_000, 150_000_000, True)]
    lines = fd.loading(loads, 0.05)
    assert lines[0].startswith("disk (seed table): **`sorted` is fastest**, 588 s [single run].")
    assert "faster than the seed's protocol" not in lines[0]   # 601 s is not sequential's finish
    assert ("`sequential` was stopped at its 600 s time limit after 68.0 M of 100 M rows (68.0%), "
            "113,145 rows/s [single run] until then") in lines[1]
    assert "a single run is not a finding" in lines[1]
    eng = fd.engines(loads, [], 0.05)[0]
    assert "rocksdb 26,644 rows/s [single run] is 0.235x the speed of InnoDB, 113,145 rows/s" in eng
    assert "stopped at the time limit: rocksdb after 16.0 M rows and innodb after 68.0 M rows" in eng
    assert "its table is 0.145x InnoDB's bytes per row" in eng
    size = fd.table_size(loads)[0]
    assert "`sequential` 4,400 MB, 64.7 B/row (stopped after 68.0 M rows)" in size
    assert "the largest is" not in size   # one finished load: nothing to compare it with


def test_the_fastest_load_says_whether_the_servers_cpu_bounds_it():
    from catbench.report import findings as fd

    def row(strategy, secs, bound):
        return {"target": "disk", "variant": "qserv", "engine": "innodb", "strategy": strategy, "n": 1,
                "seconds": secs, "rows": 4_760_000, "rows_per_s": 4_760_000 / secs, "stopped": False,
                "server_cpu_us_per_row": 3.4, "server_bound_rows_per_s": bound}
    line = fd.loading([row("sorted-parallel", 10.0, 580_000), row("sorted", 20.0, 580_000)], 0.05)[0]
    assert ("Its server spent 3.40 µs of CPU a row, which alone allows 580,000 rows/s on this host's cores: "
            "at 82.1% of that, the load is bound by the server's CPU.") in line
    line = fd.loading([row("sorted", 20.0, 2_000_000)], 0.05)[0]
    assert "at 11.9% of that, the load is not bound by the server's CPU." in line
    assert "server spent" not in fd.loading([{**row("sorted", 20.0, None)}], 0.05)[0]
