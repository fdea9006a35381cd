"""The one comparison rule (report/stats.py) and its wording wherever a result is judged:
findings in summary.md, and `catbench compare`. Distributions that overlap are "within
noise", separated ones are a finding, a single run is never one. The rule's promise (at most
alpha false winners from one distribution, at every n) is checked by simulation."""

import csv

import pytest
from catbench.report.compare import compare
import numpy as np
from catbench.report.stats import Figure, median_interval, ratio_interval, verdict
from catbench.report.wording import sentence, short, versus
from catbench.report.tables import make_tables
from support.runs import FAST, OVERLAPS_FAST, SLOW, make_run, run_with_loads
from catbench.cli.report import report_spec
from support.runs import REPORT
from support.text import line_with


def test_interval_of_the_typical_value():
    xs = [3.0, 1.0, 2.0, 5.0, 4.0]
    lo, hi = median_interval(xs)
    gm = float(np.exp(np.mean(np.log(xs))))
    assert lo < gm < hi and lo > 0
    assert median_interval(xs) == (lo, hi)                              # same rows, same interval
    assert median_interval([7.0]) == (None, None)                       # one run: no interval
    assert median_interval([2.0, 2.0, 2.0]) == (2.0, 2.0)
    # two runs cannot bound it (one degree of freedom): no range, words instead (test_repeat.py)
    assert median_interval([1.0, 1.1]) == (None, None)
    r, rlo, rhi = ratio_interval(SLOW, FAST)
    assert r == pytest.approx(2.0, rel=0.01) and rlo < r < rhi and rlo > 1.5


def test_separated_distributions_are_a_finding():
    v = verdict(Figure.of(FAST), Figure.of(SLOW))
    assert v.kind == "better" and v.ratio == pytest.approx(2.0, rel=0.01) and v.p < 0.001
    text = sentence("sorted", "one-file-at-a-time", v, unit="s")
    # the ratio and its interval, the direction, p, and the faster one's median, interval and n
    assert text.startswith("sorted ") and "2.01x [1.85–2.18]" in text and "faster than one-file-at-a-time" in text
    assert "(p=1.9e-05)" in text and "1.00 s [0.92–1.09, n=3]" in text
    # and the other way round, for a figure where higher is better
    v = verdict(Figure.of([100, 98, 103]), Figure.of([10, 11, 9.5]), higher_is_better=True)
    assert v.kind == "better" and v.ratio == pytest.approx(10.0, rel=0.02)


def test_overlapping_distributions_are_within_noise():
    v = verdict(Figure.of(FAST), Figure.of(OVERLAPS_FAST))
    assert v.kind == "noise" and not v.real
    said = sentence("disk", "tmpfs", v, unit="s")
    assert said.startswith("disk and tmpfs") and "within noise" in said and "(n=3 vs 3, p=" in said


def test_a_difference_below_the_practical_threshold_is_not_a_winner():
    a, b = Figure.of([1.000, 1.001, 1.002]), Figure.of([1.050, 1.051, 1.052])
    assert verdict(a, b, threshold=0.0).kind == "better"      # significant...
    v = verdict(a, b, threshold=0.10)                          # ...but only 5 %
    assert v.kind == "small" and not v.real
    assert "less than the 10% practical threshold" in sentence("a", "b", v)


def test_too_few_repetitions_are_never_a_finding():
    v = verdict(Figure.of([1.0]), Figure.of([9.0]))
    assert v.kind == "single"
    text = sentence("a", "b", v, unit="s")
    assert text.startswith("a vs b: 1.00 s [single run] vs 9.00 s [single run]")
    assert "n=1 vs 1" in text and "n ≥ 2" in text and "not a finding" in text and "faster" not in text


def _lognormal(rng, cv, n, scale=1.0):
    return rng.lognormal(np.log(scale), np.sqrt(np.log1p(cv * cv)), n)


TRIALS = 2000
RULE = {"threshold": 0.05, "alpha": 0.05}
# binomial tolerance: 3 standard errors of a rate of ALPHA over TRIALS trials
TOLERANCE = 3 * np.sqrt(0.05 * 0.95 / TRIALS)


@pytest.mark.slow
@pytest.mark.parametrize("cv", [0.1, 0.2, 0.3])
def test_from_one_distribution_a_winner_is_called_at_most_alpha_of_the_time(cv):
    rng = np.random.default_rng(11)
    for n in (2, 3, 5, 10):
        called = sum(verdict(Figure.of(_lognormal(rng, cv, n)), Figure.of(_lognormal(rng, cv, n))).real
                     for _ in range(TRIALS))
        assert called / TRIALS <= 0.05 + TOLERANCE, (cv, n, called / TRIALS)


def test_a_real_difference_is_seen_and_never_the_wrong_way_round():
    """1.5x apart, 20 % spread, n = 5: the right winner about 81 % of the time (80 % is the aim;
    the bound leaves two binomial standard errors), the wrong one never."""
    rng = np.random.default_rng(12)
    right = wrong = 0
    for _ in range(TRIALS):
        v = verdict(Figure.of(_lognormal(rng, 0.2, 5)), Figure.of(_lognormal(rng, 0.2, 5, 1.5)))
        right += v.kind == "better"
        wrong += v.kind == "worse"
    assert right / TRIALS >= 0.78 and wrong == 0


def test_the_wording_never_calls_a_winner_the_rule_did_not():
    rng = np.random.default_rng(13)
    for _ in range(300):
        n = int(rng.integers(1, 6))
        v = verdict(Figure.of(_lognormal(rng, 0.3, n)), Figure.of(_lognormal(rng, 0.3, n, 1.3)))
        words = sentence("a", "b", v, unit="s") + versus("b", v) + short(v)
        assert (" faster than " in words or " slower than " in words or "B better" in words
                or "A better" in words) == v.real, words


def test_findings_count_the_comparisons_they_judged(tmp_path):
    run = run_with_loads(tmp_path, "r", {("disk", "one-file-at-a-time"): [10 * s for s in SLOW], ("disk", "sorted"): FAST})
    md = (run / "tables" / "summary.md").read_text()
    assert "tested 2 differences" in md and line_with(md, "2 of the 2", "Holm's correction", "2 tests")
    assert line_with(md, "faster than the `one-file-at-a-time` protocol", "(p=5.7e-08", "Holm's correction")


def test_findings_word_overlapping_and_separated_loads(tmp_path):
    run = run_with_loads(tmp_path, "r", {("disk", "one-file-at-a-time"): [10 * s for s in SLOW],
                                    ("disk", "sorted"): FAST, ("disk", "bulk"): OVERLAPS_FAST,
                                    ("tmpfs", "one-file-at-a-time"): [1.1, 1.0, 1.05], ("tmpfs", "sorted"): [1.0, 1.02, 0.99]})
    md = (run / "tables" / "summary.md").read_text()
    findings = md[md.index("## Findings"):md.index("## Checks")]
    # disk: sorted is 20x faster than the one-file-at-a-time protocol (apart), bulk is within noise of sorted
    # a tie with the runner-up is never "fastest"
    assert line_with(findings, "disk (char28 table): `sorted`", "lowest median", "1.00 s [0.92–1.09, n=3]", "**20.1x** [")
    assert "is fastest" not in findings
    assert "faster than the `one-file-at-a-time` protocol (p=" in findings
    assert "20.0 s [18.4–22.1, n=3]." in findings
    assert line_with(findings, "within noise of `bulk`", "1.02 s [0.751–1.38, n=3]", "(n=3 vs 3, p=")
    # tmpfs: 5 % apart, intervals overlapping: no speed-up is claimed
    line = next(x for x in findings.splitlines() if x.startswith("- tmpfs (char28 table)"))
    assert "within noise of the `one-file-at-a-time` protocol" in line and "faster than" not in line
    with open(run / "tables" / "load_time.csv", newline="") as fh:
        lt = {(r["target"], r["strategy"]): r for r in csv.DictReader(fh)}
    s = lt[("disk", "sorted")]
    assert s["n"] == "3" and 0.9 <= float(s["seconds_ci_low"]) < 1.0 < float(s["seconds_ci_high"]) <= 1.1
    assert float(s["speedup_ci_low"]) > 15 and float(s["speedup_vs_one_file_at_a_time"]) == pytest.approx(20.0, rel=0.01)
    assert s["seconds_values"] == "1;1.04;0.97"


@pytest.mark.slow
def test_compare_gives_the_rules_verdict(tmp_path):
    a = run_with_loads(tmp_path, "A", {("disk", "one-file-at-a-time"): SLOW, ("disk", "sorted"): FAST})
    b = run_with_loads(tmp_path, "B", {("disk", "one-file-at-a-time"): FAST, ("disk", "sorted"): OVERLAPS_FAST})
    rows = {(r["table"], r["key"], r["column"]): r for r in compare(a, b, REPORT)}
    seq = rows[("load_time", "target=disk, variant=char28, engine=innodb, strategy=one-file-at-a-time", "seconds")]
    assert seq["verdict"].startswith("B faster by 2.01x [") or seq["verdict"].startswith("B 2.01x [")
    srt = rows[("load_time", "target=disk, variant=char28, engine=innodb, strategy=sorted", "seconds")]
    assert srt["verdict"].startswith("within noise (n=3 vs 3, p=")
    assert not any(c.endswith("_values") for (_, _, c) in rows)   # judged through their figure
    one = run_with_loads(tmp_path, "C", {("disk", "one-file-at-a-time"): [1.0]})
    rows = {(r["table"], r["key"], r["column"]): r for r in compare(a, one, REPORT)}
    assert rows[("load_time", "target=disk, variant=char28, engine=innodb, strategy=one-file-at-a-time", "seconds")]["verdict"] \
        .startswith("not a finding: too few repetitions")


def test_single_runs_claim_nothing(tmp_path):
    run = make_run(tmp_path)            # every figure of this run is a single run
    make_tables(run, report=REPORT)
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
        return {"target": "disk", "variant": "char28", "engine": engine, "strategy": strategy, "n": 1,
                "seconds": secs, "rows": rows, "rows_per_s": rows / secs, "table_bytes": table_bytes,
                "stopped": stopped, "time_limit_s": 600.0 if stopped else None}
    loads = [row("innodb", "sorted", 588.0, 100_000_000, 6_100_000_000, False),
             row("innodb", "one-file-at-a-time", 601.0, 68_000_000, 4_400_000_000, True),
             row("rocksdb", "one-file-at-a-time", 600.5, 16_000_000, 150_000_000, True)]
    lines = fd.loading(loads, RULE)
    assert lines[0].startswith("disk (char28 table): `sorted`") and "only one that finished" in lines[0]
    assert "588 s [single run]" in lines[0]
    assert "faster than the `one-file-at-a-time` protocol" not in lines[0]   # 601 s is not its finish
    assert line_with(lines[1], "`one-file-at-a-time`", "600 s time limit", "68.0 M of 100 M rows (68.0%)",
                     "113,145 rows/s [single run]")
    assert "too few repetitions to tell" in lines[1]
    eng = fd.engines(loads, [], RULE)[0]
    assert line_with(eng, "rocksdb 26,644 rows/s [single run]", "0.235x", "InnoDB, 113,145 rows/s")
    assert line_with(eng, "time limit", "rocksdb after 16.0 M rows", "innodb after 68.0 M rows")
    assert "its table is 0.145x InnoDB's bytes per row" in eng
    size = fd.table_size(loads)[0]
    assert line_with(size, "`one-file-at-a-time` 4,400 MB", "64.7 B/row", "stopped after 68.0 M rows")
    assert "the largest is" not in size   # one finished load: nothing to compare it with


def test_the_fastest_load_says_whether_the_servers_cpu_bounds_it():
    from catbench.report import findings as fd

    def row(strategy, secs, bound):
        return {"target": "disk", "variant": "bigint", "engine": "innodb", "strategy": strategy, "n": 1,
                "seconds": secs, "rows": 4_760_000, "rows_per_s": 4_760_000 / secs, "stopped": False,
                "server_cpu_us_per_row": 3.4, "server_bound_rows_per_s": bound}
    line = fd.loading([row("sorted-parallel", 10.0, 580_000), row("sorted", 20.0, 580_000)], RULE)[0]
    # the CPU a row, the rate it allows, the share reached, and the verdict
    assert line_with(line, "3.40 µs of CPU a row", "580,000 rows/s", "82.1%", "bound by the server's CPU")
    assert "not bound" not in line
    line = fd.loading([row("sorted", 20.0, 2_000_000)], RULE)[0]
    assert line_with(line, "11.9%", "not bound by the server's CPU")
    assert "server spent" not in fd.loading([{**row("sorted", 20.0, None)}], RULE)[0]


@pytest.mark.slow
def test_compare_of_two_runs_counts_the_spread_between_runs(tmp_path):
    """Repetitions inside a run never see the drift between runs: a tight 15 % difference
    between two runs is a finding only when the config says runs do not drift; a twin's
    noise floor is measured per figure family, kept with its degrees of freedom and used as
    measured, even below the config's spread."""
    from catbench.report import noise
    from catbench.report.compare import diffs, figure_pairs
    tight = [1.00, 1.01, 0.99]
    a = run_with_loads(tmp_path, "A", {("disk", "one-file-at-a-time"): tight})
    b = run_with_loads(tmp_path, "B", {("disk", "one-file-at-a-time"): [1.15 * x for x in tight]})
    key = ("load_time", "target=disk, variant=char28, engine=innodb, strategy=one-file-at-a-time", "seconds")
    drift = {(r["table"], r["key"], r["column"]): r for r in compare(a, b, REPORT)}[key]["verdict"]
    assert drift.startswith("within noise")                                     # 10 % between runs
    steady = {(r["table"], r["key"], r["column"]): r
              for r in compare(a, b, report_spec({"between_run_cv": 0.0}))}[key]["verdict"]
    assert steady.startswith("A 1.15x [")                                       # A is faster
    floor = noise.estimate(diffs(figure_pairs(a, b)), ("A", "B"))
    fam = floor["families"]["load_time.seconds"]
    assert fam["figures"] == 1 and 0.09 < fam["between_cv"] < 0.11            # log(1.15)^2 / 2
    assert fam["df"] == 1.0 and floor["offset"] is None                         # one figure: 1 df, no offset
    path = noise.save(floor, tmp_path / noise.FLOOR_FILE)
    got, note = noise.load(path)
    assert got == {f: (v["between_var"], v["df"]) for f, v in floor["families"].items()} and "twin A and B" in note
    assert noise.load(path, {"hostname": "elsewhere"})[0] is None                # another machine's floor
    small = {(r["table"], r["key"], r["column"]): r
             for r in compare(a, b, REPORT, floor={"load_time.seconds": (1e-6, 50.0)})}
    assert small[key]["verdict"].startswith("A 1.15x [")                        # the floor as measured, not 10 %


@pytest.mark.slow
def test_the_report_of_a_run_with_a_twin_shows_the_between_run_spread(tmp_path):
    from catbench.report import noise
    from catbench.report.compare import diffs, figure_pairs
    from catbench.report.html import make_report
    a = run_with_loads(tmp_path, "A", {("disk", "one-file-at-a-time"): [1.00, 1.01, 0.99]})
    b = run_with_loads(tmp_path, "B", {("disk", "one-file-at-a-time"): [1.15, 1.16, 1.14]})
    assert "has a twin" not in make_report(a, report=REPORT).read_text()
    noise.save(noise.estimate(diffs(figure_pairs(a, b)), ("A", "B")), tmp_path / noise.FLOOR_FILE)
    page = make_report(a, report=REPORT).read_text()
    assert "twin (A and B" in page and "load_time.seconds 9." in page and "(1 df)" in page
