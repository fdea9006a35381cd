"""The record of sealed checks and the intervals widened by the model's measured error."""

import math

import pytest
from catbench.predict import coverage as cov

RECORD_HEAD = "check,page,figure,form,engine,strategy,past_rungs,level,predicted,low,high,measured,pred_over_meas,inside,in_sample,note\n"


def _record(tmp_path, rows):
    p = tmp_path / "coverage.csv"
    p.write_text(RECORD_HEAD + "".join(rows))
    return p


def test_the_record_holds_twenty_sealed_figures_and_every_form_is_known():
    checks = cov.read()
    assert len(checks) >= 20 and {c.form for c in checks} <= set(cov.FORMS)
    assert sum(c.inside is not None for c in checks) >= 20


def test_in_sample_and_curve_points_are_left_out(tmp_path):
    p = _record(tmp_path, [
        "a,p,seconds,sort-bound,innodb,sorted,10,0.95,10,9,11,10,1.0,true,false,\n",
        "b,p,seconds,sort-bound,innodb,sorted,10,0.95,10,9,11,5,2.0,false,true,tuned on it\n",
        "c,p,seconds to table/pool 1,other,innodb,one-file-at-a-time,,0.95,,,,,9.6,,false,\n"])
    assert [c.check for c in cov.read(p)] == ["a"]


def test_the_error_of_a_form_is_its_rms_log_miss_without_the_check_left_out(tmp_path):
    rows = [f"c{i},p,seconds,sort-bound,innodb,sorted,10,0.95,1,0.9,1.1,1,{r},,false,\n"
            for i, r in enumerate([1.1, 0.9, 1.2, 0.8, 1.0, 1.5])]
    checks = cov.read(_record(tmp_path, rows))
    logs = [math.log(r) for r in (1.1, 0.9, 1.2, 0.8, 1.0, 1.5)]
    assert cov.error(checks, "sort-bound") == pytest.approx(math.sqrt(sum(x * x for x in logs) / 6))
    assert cov.error(checks, "sort-bound", leave_out="c5") == pytest.approx(math.sqrt(sum(x * x for x in logs[:5]) / 5))
    # a form with fewer than MIN_FORM figures takes every form's
    assert cov.error(checks, "key-build") == cov.error(checks, "sort-bound")


def test_widening_adds_the_error_in_quadrature_on_the_log_scale_each_side_on_its_own():
    lo, hi = cov.widen(100.0, 90.0, 110.0, 0.2, 0.95)
    zs = 1.959964 * 0.2
    assert lo == pytest.approx(100 * math.exp(-math.hypot(math.log(100 / 90), zs)), rel=1e-5)
    assert hi == pytest.approx(100 * math.exp(math.hypot(math.log(110 / 100), zs)), rel=1e-5)
    assert cov.widen(100.0, None, None, 0.0) == (100.0, 100.0)
    # a lopsided interval (a stopped load's rows: [15.1 M, 300 M] about 21.7 M) never narrows
    lo, hi = cov.widen(21.7, 15.1, 300.0, 0.2)
    assert lo < 15.1 and hi > 300.0


def test_a_prediction_states_its_form_error_level_and_keeps_the_rungs_interval():
    p = {"seconds": 100.0, "seconds_ci_low": 90.0, "seconds_ci_high": 110.0, "rows": 5.0,
         "rows_ci_low": None, "rows_ci_high": None}
    cov.widen_prediction(p, cov.load_form("rocksdb", "bulk"), 0.95)
    assert p["form"] == "sort-bound" and p["level"] == 0.95 and p["model_error"] > 0
    assert (p["seconds_rungs_ci_low"], p["seconds_rungs_ci_high"]) == (90.0, 110.0)
    assert p["seconds_ci_low"] < 90.0 and p["seconds_ci_high"] > 110.0 and p["rows_ci_low"] is None
    assert cov.load_form("rocksdb", "one-file-at-a-time") == "lsm-misses"
    assert cov.load_form("myisam", "deferred-pk") == "key-build"


def test_coverage_counts_the_widened_intervals_leaving_each_check_out():
    out = cov.coverage(cov.read())
    assert out["all"]["figures"] >= 20 and out["all"]["inside_widened"] <= out["all"]["widened"]
    # the design's claim, on the record: >= 80 % inside at a nominal 95 % (printed: about two thirds)
    assert out["all"]["inside_widened"] >= 0.8 * out["all"]["widened"]


def test_the_coverage_command_prints_each_form_and_the_level(capsys):
    from catbench.cli.main import main
    assert main(["coverage"]) == 0
    said = capsys.readouterr().out
    head = said.splitlines()[0]
    assert head.startswith(f"{len(cov.read())} ") and "sealed" in head and "95%" in head   # the count and level
    assert all(f"  {form}: " in said for form in (*cov.FORMS, "all"))
    assert "widened" in said and "within [0.67, 1.5]" in said


def test_a_record_that_is_not_a_regular_file_or_has_a_bad_cell_is_refused_naming_it(tmp_path):
    import os
    fifo = tmp_path / "record.csv"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="is not a regular file"):
        cov.read(fifo)
    bad = _record(tmp_path, ["a,p,seconds,sort-bound,innodb,sorted,10,0.95,10,9,11,10,x,true,false,\n"])
    with pytest.raises(ValueError, match=r"line 2: pred_over_meas .*'x'"):
        cov.read(bad)
    (tmp_path / "short.csv").write_text("check,form\na,sort-bound\n")
    with pytest.raises(ValueError, match=r"short\.csv .*high, in_sample, inside, low, pred_over_meas, predicted"):
        cov.read(tmp_path / "short.csv")


def test_the_error_grows_with_the_distance_past_the_rungs_and_is_refused_past_the_records_reach(tmp_path, monkeypatch):
    rows = [f"c{i},p,restart total (s),restart,innodb,,{d},0.95,1,0.5,2,1,{r},,false,\n"
            for i, (d, r) in enumerate([(2, 1.1), (4, 0.9), (8, 1.3), (16, 0.7), (32, 1.6)])]
    checks = cov.read(_record(tmp_path, rows))
    sigma = cov.error(checks, "restart")
    ref = sum(math.log(d) for d in (2, 4, 8, 16, 32)) / 5
    assert cov.error_at(checks, "restart", None) == cov.error_at(checks, "restart", 3) == sigma   # never below
    assert cov.error_at(checks, "restart", 1000) == pytest.approx(sigma * math.sqrt(math.log(1000) / ref))
    assert cov.error_at(checks, "restart", 1000) > cov.error_at(checks, "restart", 100) > sigma
    assert cov.reach_limit(checks) == pytest.approx(32 * 32 / 2)   # farthest × the span the record covers
    p = {"key": {}, "total_s": 10.0, "total_ci_low": 8.0, "total_ci_high": 12.0, "dominant": "a",
         "phases": [{"phase": "a", "driver": "pages", "quantity_bytes": 1e9, "quantity_in_bytes": True,
                     "past_rungs": 40.0, "seconds": 10.0}]}
    monkeypatch.setattr(cov, "record_path", lambda: tmp_path / "coverage.csv")   # widen_restart reads this record
    cov.read.cache_clear()
    try:
        near = {**p, "phases": [dict(p["phases"][0])]}
        cov.widen_restart(near, 0.95)
        assert "refused" not in near and near["model_error"] == pytest.approx(cov.error_at(checks, "restart", 40))
        far = {**p, "phases": [{**p["phases"][0], "past_rungs": 600.0}]}
        cov.widen_restart(far, 0.95)
        assert "600x past" in far["refused"] and "total_s" not in far and far["phases"][0]["quantity_bytes"] == 1e9
    finally:
        cov.read.cache_clear()   # the next test reads the real record again
