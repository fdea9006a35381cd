"""What `catbench compare` and the rule say when they cannot judge, and what a "within noise"
could have seen: ties and zero spread, values <= 0, figures whose measuring job met other
work (isolation records), and the minimum detectable ratio of every verdict that is no finding."""

import csv
import json

import pytest

from catbench.report.compare import compare, tally, write
from catbench.report.stats import RunSpread, Figure, verdict
from catbench.report.wording import sentence, short
from catbench.report.tables import make_tables
from support.runs import FAST, OVERLAPS_FAST, run_with_loads
from catbench.cli.report import report_spec
from support.runs import REPORT


def test_zero_spread_is_its_own_verdict_never_p_0():
    flat = verdict(Figure.of([1.2, 1.2]), Figure.of([1.0, 1.0]))
    assert flat.kind == "flat" and not flat.tested and flat.p is None
    words = sentence("a", "b", flat) + short(flat)
    assert "no spread within either figure" in words and "p=" not in words and "faster" not in words
    same = verdict(Figure.of([1.2, 1.2]), Figure.of([1.2, 1.2]))
    assert same.kind == "flat"
    said = short(same)
    assert said.startswith("not a finding") and "identical" in said and "1.20" in said


def test_a_value_at_or_below_zero_is_not_called_too_few_repetitions():
    v = verdict(Figure.of([0.0, 1.0, 2.0]), Figure.of([1.0, 2.0, 3.0]))
    assert v.kind == "nonpositive" and not v.tested
    assert "a value ≤ 0" in short(v) and "too few" not in short(v)


def test_within_noise_says_what_it_could_not_see():
    v = verdict(Figure.of(FAST), Figure.of(OVERLAPS_FAST))
    assert v.kind == "noise" and 1.3 < v.mdr < 3
    assert "could not see a difference under" in short(v) and f"{v.n_see} repetitions each would see 1.30x" in short(v)
    assert 3 < v.n_see < 100
    # more repetitions never beat a between-run spread that alone is larger than 1.3x
    wide = verdict(Figure.of(FAST), Figure.of(OVERLAPS_FAST), between=RunSpread(0.05, 10.0))
    assert wide.mdr > v.mdr and "no number of repetitions would see 1.30x" in short(wide)


def test_a_bound_too_wide_to_mean_anything_is_not_printed_as_a_number():
    v = verdict(Figure.of([0.01, 1.0]), Figure.of([0.02, 1.5]))    # two repetitions, 100x apart
    assert v.kind == "noise" and v.mdr > 100
    assert "could not see even a 100x difference" in short(v) and "under" not in short(v)


def _met_other_work(run, job: str) -> None:
    rec = {"host": "h", "target": "disk", "alone": False, "other_catbench_jobs": ["123 catbench load"]}
    (run / job / "isolation.json").write_text(json.dumps(rec))
    make_tables(run, report=REPORT)


@pytest.mark.slow
def test_a_figure_whose_job_met_other_work_is_not_compared(tmp_path):
    loads = {("disk", "sorted"): FAST, ("disk", "one-file-at-a-time"): [10 * x for x in FAST]}
    a = run_with_loads(tmp_path, "A", loads)
    b = run_with_loads(tmp_path, "B", {k: [3 * x for x in v] for k, v in loads.items()})
    _met_other_work(b, "load/disk/char28/innodb/sorted")
    rows = compare(a, b, report_spec({"practical_threshold": 0.0}))
    assert rows[0]["column"] == "common offset"
    got = {r["key"]: r for r in rows if r["table"] == "load_time" and r["column"] == "seconds"}
    met = got["target=disk, variant=char28, engine=innodb, strategy=sorted"]
    assert met["verdict"] == "not comparable (B's job met other work)"
    other = got["target=disk, variant=char28, engine=innodb, strategy=one-file-at-a-time"]["verdict"]
    assert other.startswith("A 3.00x [") and "holds under Holm's correction" in other
    kinds = [r.get("kind") for r in rows]
    assert sum(k in ("better", "worse") for k in kinds) == 1 and kinds.count("apart") == 1
    said = tally(rows)
    assert "1 figures judged" in said and "1 called different (100 %)" in said and "1 not comparable" in said
    write(rows, tmp_path / "c.csv")
    with open(tmp_path / "c.csv", newline="") as fh:
        assert "mdr" in next(csv.reader(fh))


def _cli(*argv) -> int:
    import argparse

    from catbench.cli import report as cli_report
    parser = argparse.ArgumentParser()
    cli_report.add_subcommands(parser.add_subparsers(dest="command"))
    args = parser.parse_args([str(a) for a in argv])
    return args.func(args)


def test_a_twin_of_one_run_under_two_spellings_is_refused(tmp_path, capsys):
    a = run_with_loads(tmp_path, "A", {("disk", "one-file-at-a-time"): [1.00, 1.01, 0.99]})
    (tmp_path / "link").symlink_to(a)
    floor = tmp_path / "floor.json"
    for b in (a, a / "tables", tmp_path / "link", tmp_path / "A" / ".." / "A"):
        assert _cli("noise-floor", a, b, "--out", floor) == 1
        err = capsys.readouterr().err
        assert f"{a} and {b} are one run" in err and "twin" in err    # both paths named
        assert not floor.exists()
        assert _cli("compare", a, b) == 1
        assert "compared with itself" in capsys.readouterr().err


@pytest.mark.slow
def test_a_twin_with_no_repeated_figure_writes_no_floor_and_an_empty_one_is_the_named_guess(tmp_path, capsys):
    from catbench.report import noise
    a = run_with_loads(tmp_path, "A", {("disk", "one-file-at-a-time"): [1.00]})
    b = run_with_loads(tmp_path, "B", {("disk", "one-file-at-a-time"): [1.10]})
    floor = tmp_path / "floor.json"
    assert _cli("noise-floor", a, b, "--out", floor) == 1
    assert "no between-run noise can be measured" in capsys.readouterr().err and not floor.exists()
    floor.write_text(json.dumps({"machine": noise.machine(), "runs": ["A", "B"], "families": {}, "offset": None}))
    assert noise.load(floor) == (None, f"the noise floor {floor} measured no figure")
    assert _cli("compare", a, b, "--noise-floor", floor, "--out", tmp_path / "c.csv") == 0
    out = capsys.readouterr().out
    assert "measured no figure" in out and "between-run spread assumed 10%" in out


def test_an_earlier_run_s_engine_column_is_refused_naming_the_commit_that_reads_it(tmp_path):
    """A run from before ``query_engine``: its query tables and files say ``engine``; the views,
    the report's tables and compare refuse it, naming the file and the commit that reads it."""
    from catbench.report.spec import MetricsError
    from catbench.report.tables import read_tables
    from support.runs import make_run
    a, b = make_run(tmp_path, "runA"), make_run(tmp_path, "runB", factor=0.5)
    make_tables(b, report=REPORT)
    make_tables(a, report=REPORT)
    for table in ("queries", "query_runs"):
        path = a / "tables" / f"{table}.csv"
        assert path.read_text().startswith("target,query_engine,")
        path.write_text(path.read_text().replace("target,query_engine,", "target,engine,", 1))
    with pytest.raises(MetricsError) as err:
        read_tables(a / "tables")
    assert str(a / "tables") in str(err.value) and "eb0a633~1" in str(err.value)
    with pytest.raises(MetricsError) as err:
        compare(a, b, REPORT)
    assert "queries.csv" in str(err.value) and "`engine`" in str(err.value) and "eb0a633" in str(err.value)
    old = [{"target": "a", "engine": "mariadb", "query": "q1", "cache": "cold", "run": 0, "seconds": 1.0,
            "result_rows": 1, "digest": "d42"}]
    (a / "queries" / "a" / "mariadb" / "results.json").write_text(json.dumps({"rows": old}))
    with pytest.raises(MetricsError) as err:
        make_tables(a, report=REPORT)
    assert "results.json" in str(err.value) and "query_engine" in str(err.value)
