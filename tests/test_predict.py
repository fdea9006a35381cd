"""The scale model (workflow/catbench/predict/model.md): the fit, the integral over the
table's growth, the ladder's rungs, the refusals, and a smoke test on real results."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from catbench.core.infra.config import ConfigError, validate
from catbench.predict.rate import RateCurve, fit_rate, load_seconds, rows_by
from catbench.predict.scale import PredictTarget, fit, predict, validate as validate_ladder
from catbench.predict.spec import Fitting, PredictSpec, rungs
from support.predict import DEVICE, TRUE, curve_rates, ladder, rung_rep

REPO = Path(__file__).resolve().parent.parent
OPTS = Fitting(min_rungs=2, x_margin=1.25, bootstrap=30, run_noise=0.0, confidence=0.95)
def test_fit_recovers_the_cached_cost_the_collapse_and_the_miss_cost():
    x = np.linspace(0.05, 8, 300)
    c = fit_rate(x, curve_rates(x, noise=0.05), form="misses")
    assert c.form == "misses" and c.a == pytest.approx(TRUE.a, rel=0.05)
    assert c.miss_s == pytest.approx(TRUE.miss_s, rel=0.05) and c.x_c == pytest.approx(0.85, abs=0.05)
    # past the collapse every insert misses once: the rate tends to 1 / (a + miss_s), not to 0
    assert c.rate(1e6) == pytest.approx(1 / (TRUE.a + TRUE.miss_s), rel=0.05)


def test_integral_of_a_constant_rate():
    c = RateCurve("steady", 1e-5)
    assert load_seconds(c, 1e7, 50, 1e8) == pytest.approx(100.0, rel=1e-9)
    assert rows_by(c, 30, 1e7, 50, 1e8) == pytest.approx(3e6, rel=1e-6)


def test_integral_of_the_misses_matches_its_closed_form():
    bpr, pool, n = 50.0, 1e8, 1e8              # x reaches 50
    n_c = TRUE.x_c * pool / bpr
    closed = TRUE.a * n + TRUE.miss_s * ((n - n_c) - n_c * np.log(n / n_c))
    assert load_seconds(TRUE, n, bpr, pool) == pytest.approx(closed, rel=1e-4)
    assert load_seconds(TRUE, n_c / 2, bpr, pool) == pytest.approx(TRUE.a * n_c / 2, rel=1e-4)


def test_a_ladder_predicts_its_largest_rung_and_the_target_within_its_interval():
    reps = ladder()
    v = validate_ladder(reps, OPTS)
    assert v["compared"] == "seconds" and v["predicted_over_measured"] == pytest.approx(1.0, abs=0.1)
    t = PredictTarget(1e8, 1.2e9)
    p = predict(reps, t, OPTS)
    truth = load_seconds(TRUE, 1e8, reps[0].bytes_per_row, 1.2e9)
    assert p["seconds_ci_low"] <= p["seconds"] <= p["seconds_ci_high"]
    assert p["seconds"] == pytest.approx(truth, rel=0.1)
    assert p["regime"] == "I/O bound (random page reads)"
    assert p["fit"]["calibration_k"] == pytest.approx(1.2, rel=0.1)


def test_the_users_scale_and_pool_are_answered_from_rungs_past_the_collapse():
    # 10^10 rows, a 128 GiB pool: 1,000x the largest rung, a table ÷ pool the rungs reached
    reps = ladder()
    t = PredictTarget(1e10, 128 * 2**30)
    p = predict(reps, t, OPTS)
    bpr = reps[0].bytes_per_row
    truth = load_seconds(TRUE, 1e10, bpr, t.pool)
    assert "refused" not in p and p["seconds"] == pytest.approx(truth, rel=0.1)
    # the later half of the rows at the rate the misses give there
    n, x = 1e10, np.array([0.5e10, 1e10]) * bpr / t.pool
    later = 0.5e10 / (load_seconds(TRUE, n, bpr, t.pool) - load_seconds(TRUE, n / 2, bpr, t.pool))
    assert p["later_half_rate"] == pytest.approx(later, rel=0.1)
    assert p["later_half_x"] == pytest.approx(list(x), rel=1e-6)
    assert p["later_half_rate_ci_low"] <= p["later_half_rate"] <= p["later_half_rate_ci_high"]


@pytest.mark.parametrize("reps, target, why", [
    ("one", PredictTarget(1e8, 1.2e9), "the model needs 2"),
    ("short", PredictTarget(1e8, 1.2e9), "not 2× it"),
    ("nofio", PredictTarget(1e8, 1.2e9), "no fio page-read figure"),
])
def test_predictions_refuse_beyond_what_the_model_supports_and_name_the_rung(reps, target, why):
    given = {"one": lambda: [r for r in ladder() if r.rows == 1_000_000],
             "short": lambda: ladder(x_final=1.4), "nofio": lambda: ladder(device={})}[reps]()
    p = predict(given, target, OPTS)
    assert "seconds" not in p and why in p["refused"]
    if reps == "short":
        assert "10,000,000 rows" in p["refused"] and "predict.pool_per_row_bytes" in p["refused"]   # rung, key


def test_a_working_set_that_fit_in_every_rung_refuses_a_target_it_outgrows():
    flat = RateCurve("steady", 2.5e-6)
    reps = [rung_rep(n, n * 6, f"r{n}", 0, x_final=0.8, curve=flat, ws_over_pool=0.9, collapse_expected=False)
            for n in (1_000_000, 3_000_000)]
    p = predict(reps, PredictTarget(1e7, 1e7 * 6 / 1.2), OPTS)
    assert "working set" in p["refused"] and "a rung of 3,000,000 rows" in p["refused"]


def test_a_sorted_load_is_steady_with_its_sort_a_line_in_n_and_a_spill_pass_at_n():
    # the sort: a 0.12 s start, then 3.5 µs a row before the first row (a radix sort's line:
    # fitted.pre_line); rows appended at 3 µs each
    def rung(n, rep):
        return rung_rep(n, n * 12, f"r{n}", rep, curve=RateCurve("steady", 3e-6), sorts=True,
                    key=("disk", "char28", "innodb", "sorted", "random"), in_file_order=False,
                    pre_s=0.12 + 3.5e-6 * n, sort_memory=2**40)
    reps = [rung(n, rep) for n in (1_000_000, 3_000_000, 10_000_000) for rep in range(2)]
    in_memory = predict(reps, PredictTarget(1e10, 128 * 2**30, sort_memory=2**50), OPTS)
    assert in_memory["fit"]["form"] == "steady" and in_memory["regime"] == "sort bound"
    truth = 3e-6 * 1e10 + 0.12 + 3.5e-6 * 1e10
    assert in_memory["seconds"] == pytest.approx(truth, rel=0.05)
    spilled = predict(reps, PredictTarget(1e10, 128 * 2**30, sort_memory=2**30), OPTS)
    one_pass = 38 * 1e10 * DEVICE["seq_s_per_byte"]          # written once, read back once
    assert spilled["seconds"] - in_memory["seconds"] == pytest.approx(one_pass, rel=0.01)


def test_a_key_builds_cost_per_row_grows_with_log_n_past_the_depth_a_cache_sorts_free():
    # MyISAM's key build after the rows: 0.2 µs per row per log2 N past 2^17 keys (a cache's
    # worth), rows appended at 2 µs each; the median per N log2 N of the rungs misses it at 10^10
    def rung(n, rep):
        return rung_rep(n, n * 12, f"r{n}", rep, curve=RateCurve("steady", 2e-6),
                        key=("disk", "bigint", "myisam", "deferred-pk", "random"), in_file_order=False,
                        post_s=2e-7 * n * (np.log2(n) - 17) * (1 + 0.01 * rep))
    reps = [rung(n, rep) for n in (2_000_000, 4_000_000, 8_000_000) for rep in range(2)]
    p = predict(reps, PredictTarget(1e10, 128 * 2**30), OPTS)
    assert p["post_s"] == pytest.approx(2e-7 * 1e10 * (np.log2(1e10) - 17), rel=0.03)
    assert p["regime"] == "index-build bound"
    flat = [dataclasses.replace(r, post_s=1e-8 * r.rows * np.log2(r.rows)) for r in reps]
    assert predict(flat, PredictTarget(1e10, 128 * 2**30), OPTS)["post_s"] == pytest.approx(1e-8 * 1e10 * np.log2(1e10), rel=0.01)
    one = [r for r in reps if r.rung_rows == 8_000_000]     # one size: its own per N log2 N
    assert fit(one, "steady").post == (0.0, pytest.approx(2e-7 * (23 - 17) / 23, rel=0.02))


def test_a_ladder_config_validates_and_names_its_rungs():
    base = {"run": "study", "base": str(REPO / "config/index-study.yaml"),
            "predict": {"rows": [2_017_600, 10_088_000, 5_044_000], "target_rows": 100_880_000},
            "load": {"settings": {"innodb_buffer_pool_size": "512M", "innodb_log_file_size": "1G"},
                     "time_limit_s": 600, "sort_memory": "4GB"}}
    from catbench.core.infra.config import layered
    cfg = validate(layered(base, REPO))
    out = rungs(cfg)
    assert [r["run"] for r in out] == ["study-rung1", "study-rung2", "study-rung3"]
    assert [r["catalog"]["patch"]["objects"] for r in out] == [200, 500, 1000]
    assert out[0]["load"]["settings"]["innodb_buffer_pool_size"] == f"{round(512 * 1024 / 50)}K"
    assert out[0]["load"]["settings"]["innodb_log_file_size"] == f"{round(2**20 / 50)}K"   # the redo log too
    assert out[2]["load"]["time_limit_s"] == pytest.approx(60.0)
    assert out[1]["load"]["sort_memory"] == f"{round(4 * 2**20 / 20)}KiB"
    assert out[0]["load"]["sort_memory"] == "131072KiB"   # 4 GB / 50 is under the sort's least
    files = cfg["partition"]["index_files"]
    assert [r["partition"]["index_files"] for r in out] == [max(1, round(files * f)) for f in (0.02, 0.05, 0.1)]
    kept = rungs({**cfg, "predict": {**cfg["predict"], "scale_files": False}})
    assert [r["partition"]["index_files"] for r in kept] == [files] * 3
    for r in out:
        validate(r)     # every rung is a valid config of its own
    with pytest.raises(ConfigError, match="buffer pool .innodb_buffer_pool_size., under a rung's least"):
        rungs({**cfg, "predict": {**cfg["predict"], "rows": [100_880]}})
    small_log = {**cfg, "load": {**cfg["load"], "settings": {**cfg["load"]["settings"], "innodb_log_file_size": "96M"}}}
    with pytest.raises(ConfigError, match="redo log .innodb_log_file_size., under a rung's least .4 MiB"):
        rungs(small_log)    # 96 MB / 50 is under InnoDB's least
    with pytest.raises(ConfigError, match="config key .predict"):
        validate({**base, "predict": {"rows": [1000], "target_rows": 1e8}})
    own = {**cfg, "index": {**cfg["index"], "source": "file"}}
    with pytest.raises(ConfigError, match=r"config key 'index.source': file\b"):
        rungs(own)      # a rung would generate ids, not read the user's
    close = {**cfg, "predict": {**cfg["predict"], "rows": [5_044_000, 5_048_000]}}
    with pytest.raises(ConfigError, match=r"predict\.rows: \[5044000(\.0)?, 5048000(\.0)?\] .*same 500 objects"):
        rungs(close)    # a rung is a whole number of objects


def test_a_one_stream_load_is_not_given_the_time_limit(tmp_path):
    from catbench.cli.predict import _target
    cfg = validate({"load": {"time_limit_s": 240, "sort_memory": "2GB",
                             "settings": {"innodb_buffer_pool_size": "512M"}}})
    stream = [rung_rep(10**6, 6e6, "r", time_limit_s=None)]
    by_file = [rung_rep(10**6, 6e6, "r", time_limit_s=2.4, stopped=True)]
    spec = PredictSpec.of(cfg)
    assert _target(spec, "innodb", 1e8, stream).time_limit_s is None
    assert _target(spec, "innodb", 1e8, by_file).time_limit_s == 240


def test_the_interval_holds_every_leave_one_rung_out_prediction():
    # one rung 30 % slow: the bootstrap over repetitions cannot see it, leaving it out does
    def rung(n, rep):
        r = rung_rep(n, n * 12, f"r{n}", rep)
        return dataclasses.replace(r, rate=r.rate * (0.7 if n == 3_000_000 else 1.0))
    reps = [rung(n, rep) for n in (1_000_000, 3_000_000, 10_000_000) for rep in range(2)]
    t = PredictTarget(1e8, 1.2e9)
    p = predict(reps, t, OPTS)
    for n in (1_000_000, 3_000_000, 10_000_000):
        q = predict([r for r in reps if r.rung_rows != n], t, OPTS.replace(bootstrap=0))
        assert p["seconds_ci_low"] <= q["seconds"] <= p["seconds_ci_high"]


def _noisy_ladder(rng, sigma, sizes=(1_000_000, 2_000_000, 4_000_000, 8_000_000)):
    """A ladder whose every rung ran once more: each rung's rates × exp(N(0, sigma))."""
    out = []
    for n in sizes:
        c = float(np.exp(rng.normal(0.0, sigma)))
        out += [dataclasses.replace(r, rate=r.rate * c) for r in (rung_rep(n, n * 12, f"r{n}", rep) for rep in range(2))]
    return out


def test_the_rungs_scatter_about_the_fit_sets_the_run_noise():
    from catbench.predict.scale import run_noise
    reps = ladder()
    assert run_noise(reps, fit(reps, "misses"), 0.05) == 0.05           # rungs on the fit: the floor
    off = [dataclasses.replace(r, rate=r.rate * (0.7 if r.rung_rows == 3_000_000 else 1.0)) for r in reps]
    assert run_noise(off, fit(off, "misses"), 0.05) > 0.15               # one rung 30 % slow


@pytest.mark.slow
def test_the_same_ladder_run_twice_predicts_within_each_others_interval():
    # the rungs of each run are off by a between-run noise of 5 %; the repetitions within a run
    # agree, so only the run noise can hold the other run's prediction (no own-miss widening)
    rng, t, hits, pairs = np.random.default_rng(7), PredictTarget(1e8, 1.2e9), 0, 12
    opts = OPTS.replace(bootstrap=60, run_noise=0.05, own_check=False)
    for _ in range(pairs):
        a, b = (predict(_noisy_ladder(rng, 0.05), t, opts) for _ in range(2))
        hits += (a["seconds_rungs_ci_low"] <= b["seconds"] <= a["seconds_rungs_ci_high"]
                 and b["seconds_rungs_ci_low"] <= a["seconds"] <= b["seconds_rungs_ci_high"])
    assert hits >= pairs - 3
    no_noise = opts.replace(run_noise=0.0)
    a = predict(_noisy_ladder(np.random.default_rng(1), 0.0), t, no_noise)
    b = predict(_noisy_ladder(np.random.default_rng(1), 0.0), t, opts)
    assert b["seconds_rungs_ci_high"] - b["seconds_rungs_ci_low"] > \
        2 * (a["seconds_rungs_ci_high"] - a["seconds_rungs_ci_low"])


def _two_files_collapsing_in_the_second():
    """Two files of 100k rows: 400k rows/s up to row 120k, then 20k rows/s; the sampler's
    Handler_write every 0.25 s (it counts from 5,000 rows written before the load)."""
    def rows_at(t):
        return np.where(t < 0.3, 4e5 * t, 1.2e5 + 2e4 * (t - 0.3))
    t_end = [0.25, 0.3 + 8e4 / 2e4]
    trace = {"start": np.array([0.0, 0.25]), "end": np.array(t_end), "cumulative_rows": np.array([1e5, 2e5])}
    t = np.arange(-0.5, 5.0, 0.25)
    return trace, {"time": t, "Handler_write": 5_000 + rows_at(np.maximum(t, 0)).astype(int)}


def test_rate_windows_see_a_collapse_inside_a_file_from_the_servers_rows_written():
    from catbench.predict.runs import _windows
    trace, samples = _two_files_collapsing_in_the_second()
    bpr, pool = 100.0, 1e7            # x = rows ÷ 100,000: the collapse at x = 1.2
    x, rate, rows = _windows(trace, 0.0, bpr, pool)
    assert len(x) == 2                # by the files' ends: one rate for the whole second file
    x, rate, rows = _windows(trace, 0.0, bpr, pool, samples)
    assert len(x) > 10 and rows.sum() == pytest.approx(2e5)
    assert rate[0] == pytest.approx(4e5, rel=0.05) and rate[-1] == pytest.approx(2e4, rel=0.05)
    assert np.all(rate[x > 1.25] == pytest.approx(2e4, rel=0.01))   # the collapse, inside file 2
    # a server without the counter: the files' ends
    none = {"time": samples["time"], "Handler_write": np.array([None] * len(samples["time"]))}
    assert len(_windows(trace, 0.0, bpr, pool, none)[0]) == 2


def test_a_stopped_loads_rows_are_those_at_its_limit_not_at_its_last_files_end():
    from catbench.predict.runs import _rows_by_limit
    trace, samples = _two_files_collapsing_in_the_second()
    # a 2 s limit: the second file had started and ran on to 4.3 s, whole files being 200k rows
    assert _rows_by_limit(trace, samples, 0.0, 2.0) == pytest.approx(1.2e5 + 2e4 * 1.7, rel=1e-3)
    # without the server's count: between the files' ends
    assert _rows_by_limit(trace, None, 0.0, 2.0) == pytest.approx(1e5 + 1e5 * 1.75 / 4.05)
    assert _rows_by_limit(trace, samples, 0.0, 9.0) == 2e5


def test_a_windows_x_is_the_tables_size_then_where_the_sampler_has_it():
    from catbench.predict.runs import _windows
    trace, samples = _two_files_collapsing_in_the_second()
    # the file holds 2 MB more than its rows' 100 B each: preallocated pages
    samples["table_bytes"] = 2e6 + 100.0 * np.clip(samples["Handler_write"] - 5_000, 0, None)
    x_rows, _, _ = _windows(trace, 0.0, 110.0, 1e7, {k: v for k, v in samples.items() if k != "table_bytes"})
    x, rate, _ = _windows(trace, 0.0, 110.0, 1e7, samples)
    assert np.allclose(x, 0.2 + (x_rows / 110.0 * 100.0), atol=1e-6)   # table bytes ÷ pool at each middle
    assert x[rate < 3e4].min() > 1.2 + 0.2


def test_the_rows_by_a_limit_never_reach_past_the_inputs_rows():
    reps = ladder()
    full = predict(reps, PredictTarget(1e8, 1.2e9), OPTS)["seconds"]
    p = predict(reps, PredictTarget(1e8, 1.2e9, time_limit_s=0.995 * full), OPTS)
    assert p["stopped"] and p["rows"] < 1e8
    assert p["all_rows_seconds"] == pytest.approx(full)          # and the time to load them all
    assert p["rows_ci_low"] < p["rows"] <= p["rows_ci_high"] <= 1e8


def test_myrocks_filled_in_input_order_is_a_misses_load_over_its_block_cache():
    # its rate follows the block cache's misses, not the LSM's levels (docs/results: two shapes
    # 256x apart alike at the same misses)
    reps = ladder(key=("disk", "char28", "rocksdb", "one-file-at-a-time", "random"))
    assert predict(reps, PredictTarget(1e8, 1.2e9), OPTS)["fit"]["form"] == "misses"


def test_each_interval_carries_the_ladders_own_miss_on_its_largest_rung():
    # the largest rung 25 % slower than its smaller ones say: the re-run interval cannot see it
    def rung(n, rep):
        r = rung_rep(n, n * 12, f"r{n}", rep)
        return dataclasses.replace(r, rate=r.rate * (0.8 if n == 10_000_000 else 1.0),
                                   seconds=r.seconds / (0.8 if n == 10_000_000 else 1.0))
    reps = [rung(n, rep) for n in (1_000_000, 3_000_000, 10_000_000) for rep in range(2)]
    p = predict(reps, PredictTarget(1e8, 1.2e9), OPTS)
    bare = predict(reps, PredictTarget(1e8, 1.2e9), OPTS.replace(own_check=False))
    own = p["fit"]["own_check"]["predicted_over_measured"]
    assert own < 0.9
    assert p["seconds_rungs_ci_low"] == pytest.approx(bare["seconds_rungs_ci_low"] * own, rel=1e-6)
    assert p["seconds_rungs_ci_high"] == pytest.approx(bare["seconds_rungs_ci_high"] / own, rel=1e-6)
    # then the form's measured error on record, in quadrature: wider still, the level stated
    assert p["seconds_ci_low"] < p["seconds_rungs_ci_low"] and p["seconds_ci_high"] > p["seconds_rungs_ci_high"]
    assert p["level"] == OPTS.confidence and p["form"] == "btree-misses" and p["model_error"] > 0


def test_level_rows_scale_an_lsms_sizes_for_more_rows_than_the_target():
    base = {"run": "study", "base": str(REPO / "config/index-study.yaml"),
            "predict": {"rows": [2_522_000, 10_088_000], "target_rows": 100_880_000},
            "load": {"settings": {"innodb_buffer_pool_size": "512M",
                                  "rocksdb_default_cf_options": "write_buffer_size=64m;max_bytes_for_level_base=256m"}}}
    from catbench.core.infra.config import layered
    cfg = validate(layered(base, REPO))
    same = rungs(cfg)[1]["load"]["settings"]
    assert same["rocksdb_default_cf_options"] == "write_buffer_size=6554k;max_bytes_for_level_base=26214k"
    deep = rungs({**cfg, "predict": {**cfg["predict"], "level_rows": 10 ** 10}})[1]["load"]["settings"]
    # the LSM's sizes for 10^10 rows (1/991 of them), the pool still for the target's (1/10)
    assert deep["rocksdb_default_cf_options"] == "write_buffer_size=66k;max_bytes_for_level_base=264k"
    assert deep["innodb_buffer_pool_size"] == same["innodb_buffer_pool_size"] == f"{round(512 * 1024 / 10)}K"
    # MyRocks' bulk never meets the memtables: its rung keeps the config's LSM, in a config of its own
    bulk = {**cfg, "load": {**cfg["load"], "strategies": [*cfg["load"]["strategies"], "bulk"]}}
    two = rungs(bulk)
    assert [r["run"] for r in two][:2] == ["study-rung1", "study-rung1-config-lsm"] and len(two) == 4
    scaled, kept = two[2]["load"], two[3]["load"]
    assert "rocksdb/bulk" in scaled["skip"] and scaled["settings"]["rocksdb_default_cf_options"] == \
        same["rocksdb_default_cf_options"]
    assert kept["engines"] == ["rocksdb"] and kept["strategies"] == ["bulk"] and kept["skip"] == []
    assert kept["settings"]["rocksdb_default_cf_options"] == "write_buffer_size=64m;max_bytes_for_level_base=256m"
    assert kept["settings"]["rocksdb_block_cache_size"] == scaled["settings"]["rocksdb_block_cache_size"]
    only = {**cfg, "load": {**cfg["load"], "engines": ["rocksdb"], "strategies": ["bulk"], "skip": []}}
    assert [r["run"] for r in rungs(only)] == ["study-rung1-config-lsm", "study-rung2-config-lsm"]


@pytest.mark.slow
def test_the_curve_at_n_is_the_prediction_of_every_row_at_n():
    from catbench.predict.curve import GRID, curve
    reps = ladder()
    targets = [PredictTarget(n, n * 12) for n in GRID]
    got = curve(reps, targets, OPTS)
    for t, c in zip(targets, got):
        p = predict(reps, t, OPTS)
        assert c["seconds"] == pytest.approx(p["seconds"], rel=1e-9) and c["regime"] == p["regime"]
        assert (c["seconds_ci_low"], c["seconds_ci_high"]) == pytest.approx((p["seconds_ci_low"], p["seconds_ci_high"]))
    one = curve([r for r in reps if r.rung_rows == 1_000_000], targets[:2], OPTS)
    assert all("needs 2" in c["refused"] for c in one)     # each N refused on its own, with the reason


def test_a_page_cache_beside_the_pool_serves_misses_at_its_own_cost_until_the_table_outgrows_both():
    c = RateCurve("misses", 4e-6, miss_s=150e-6, x_c=1.0, p=1.0)
    assert c.with_page_cache(1.0, 0.5) is c and c.with_page_cache(0.25, None) is c   # no page cache, or no cost
    ram = c.with_page_cache(0.25, 0.1)      # pool ÷ (pool + page cache) = 1/4: a pool miss at 0.1 × the device's
    x = np.array([0.5, 2.0, 4.0, 16.0, 1e6])
    assert np.all(ram.device_ratio(x) <= ram.miss_ratio(x))
    assert ram.device_ratio(3.9) == 0 and ram.miss_ratio(3.9) > 0.7   # misses read back from RAM only
    assert np.all(ram.seconds_per_row(x) <= c.seconds_per_row(x) + 1e-15)
    assert ram.seconds_per_row(3.9) == pytest.approx(4e-6 + 15e-6 * (1 - 1 / 3.9))
    assert ram.rate(1e9) == pytest.approx(c.rate(1e9), rel=1e-6)   # past both, every insert reads the device


def test_the_miss_cost_is_fitted_on_the_misses_each_level_served():
    x = np.linspace(0.05, 10, 400)
    truth = RateCurve("misses", 4e-6, miss_s=150e-6, x_c=1.0, p=1.0).with_page_cache(0.3, 0.05)
    m, d = truth.miss_ratio(x), truth.device_ratio(x)
    rng = np.random.default_rng(3)
    rate = 1 / truth.seconds_per_row(x) * np.exp(rng.normal(0, 0.03, x.size))
    c = fit_rate(x, rate, form="misses", misses=m, served=(d, 0.05))
    assert c.miss_s == pytest.approx(150e-6, rel=0.1) and c.cache_s == pytest.approx(7.5e-6, rel=0.1)
    # read as if the device had served every miss, the cost of one is far lower
    assert fit_rate(x, rate, form="misses", misses=m).miss_s < 0.5 * c.miss_s


@pytest.mark.parametrize("method, page_cache", [(None, 0), ("O_DIRECT", 0), ("fsync", (10 - 2 - 0.25) * 2**30)])
def test_the_page_cache_at_the_target_is_the_ram_left_beside_the_pool_where_reads_are_buffered(method, page_cache):
    cfg = validate({"predict": {"target_rows": 10**9}, "server": {"ram": "10G", "settings": (
        {"innodb_flush_method": method} if method else {})}, "load": {"engines": ["innodb"],
                                                                      "settings": {"innodb_buffer_pool_size": "2G"}}})
    spec = PredictSpec.of(cfg)
    assert spec.page_cache("innodb", 2 * 2**30, None) == page_cache
    assert spec.page_cache("myisam", 2 * 2**30, 4 * 2**30) == 2 * 2**30 - 0.25 * 2**30   # --ram over server.ram
    # MyRocks' memtables (RocksDB's 64 MiB x 2 where not set) are the server's own too
    assert spec.page_cache("rocksdb", 2 * 2**30, 4 * 2**30) == 2 * 2**30 - 0.25 * 2**30 - 128 * 2**20
    # a rung's memory: the target's page cache x the rows, held beside its server's own where
    # reads are buffered; else its RAM, the server's own unscaled
    (rung,) = rungs({**cfg, "predict": {**cfg["predict"], "rows": [10088000]}})
    if page_cache:
        assert rung["server"]["ram"] is None
        assert rung["server"]["page_cache"] == f"{round(page_cache * 10088000 / 10**9 / 1024)}K"
    else:
        assert rung["server"]["page_cache"] is None
        assert rung["server"]["ram"] == f"{round(((10 * 2**30 - 256 * 2**20) * 10088000 / 10**9 + 256 * 2**20) / 1024)}KiB"
    validate(rung)    # a rung's config is a valid config


@pytest.mark.parametrize("eta", [0.0, 0.1, 0.6, 1.0])
def test_the_page_cache_share_is_read_off_the_rungs_device_reads_against_the_page_cache_they_had(eta):
    from catbench.predict.page_cache import fit_share
    reps = []
    for rows, page in ((1_000_000, 24e6), (3_000_000, 50e6), (10_000_000, 90e6)):
        r = rung_rep(rows, rows * 12, f"r{rows}", buffered=True, page_cache_seen=page)
        rho = r.pool / (r.pool + eta * page)
        reps.append(dataclasses.replace(r, misses=TRUE.miss_ratio(r.x), device_reads=TRUE.miss_ratio(r.x * rho)))
    assert fit_share(TRUE, reps) == pytest.approx(eta, abs=0.02)
    # a page cache that held every rung's table whole, and rungs with no page cache measured, say nothing
    held = [dataclasses.replace(r, x=r.x / 100, device_reads=np.zeros_like(r.x)) for r in reps]
    assert fit_share(TRUE, held) is None
    assert fit_share(TRUE, [dataclasses.replace(r, page_cache_seen=None) for r in reps]) is None


def test_a_ladder_written_over_an_earlier_one_leaves_only_its_own_rungs(tmp_path, capsys):
    import argparse

    import yaml
    from catbench.cli.ladder import cmd_ladder
    out = tmp_path / "rungs"

    def ladder_of(rows, run="study"):
        cfg = tmp_path / f"{run}-{len(rows)}.yaml"
        cfg.write_text(yaml.safe_dump({"run": run, "base": str(REPO / "config/index-study.yaml"),
                                       "predict": {"rows": rows, "target_rows": 100_880_000},
                                       "load": {"settings": {"innodb_buffer_pool_size": "512M",
                                                             "innodb_log_file_size": "1G"}}}))
        return cmd_ladder(argparse.Namespace(config=str(cfg), out=str(out)))

    assert ladder_of([2_017_600, 5_044_000, 10_088_000]) == 0
    assert ladder_of([2_017_600, 5_044_000, 10_088_000], run="other") == 0
    assert ladder_of([2_017_600, 5_044_000]) == 0          # fewer rungs: the earlier ladders' are gone
    assert sorted(p.name for p in out.iterdir()) == ["study-rung1.yaml", "study-rung2.yaml"]
    assert "removed " in capsys.readouterr().out
    (out / "mine.yaml").write_text("run: mine\n")             # not a rung catbench wrote: never removed
    (out / "x-rung1.yaml").write_text("run: y\n")
    with pytest.raises(ConfigError, match=r"--out \S*rungs holds mine\.yaml, x-rung1\.yaml\b"):
        ladder_of([2_017_600])
    assert sorted(p.name for p in out.iterdir()) == ["mine.yaml", "study-rung1.yaml", "study-rung2.yaml",
                                                     "x-rung1.yaml"]


def test_a_myrocks_target_whose_sst_index_block_outgrows_a_cache_shard_is_refused_with_the_cache_it_needs():
    # measured: 1.39 MB of index for 46 MB of SST data (CHAR(28) keys, 4 KiB blocks)
    from catbench.predict.lsm import shard_bytes
    assert [shard_bytes(c) / 2**10 for c in (600 * 2**10, 2**20, 32 * 2**20)] == [600, 512, 512]
    assert shard_bytes(128 * 2**30) == 2 * 2**30                        # at most 64 shards
    reps = ladder(key=("disk", "char28", "rocksdb", "one-file-at-a-time", "random"))
    for r in reps:
        r.table_files = {"data_bytes": 45_966_803, "index_bytes": 1_391_129}
    fits = predict(reps, PredictTarget(1e8, 1.2e9), OPTS)     # 64 MiB files: a 1.9 MiB index, shards of 18.75 MiB
    assert "refused" not in fits
    lost = predict(reps, PredictTarget(1e8, 32 * 2**20), OPTS)
    said = lost["refused"]      # the block, the shard and cache it outgrows; the cache or files that would do
    assert all(f in said for f in ("1.94 MiB index", "512 KiB shard", "32 MiB block cache", "124 MiB", "at most 16 MiB"))
    small = predict(reps, PredictTarget(1e8, 32 * 2**20, sst_file=8 * 2**20), OPTS)
    assert "index block" not in small.get("refused", "")
    bulk = [dataclasses.replace(r, key=r.key[:3] + ("bulk",) + r.key[4:], sorts=True) for r in reps]
    assert "index block" not in predict(bulk, PredictTarget(1e8, 32 * 2**20), OPTS).get("refused", "")


def test_an_lsms_misses_pass_one_a_row_and_the_device_adds_its_read_to_a_miss_not_a_multiple():
    from catbench.predict.lsm import lsm_fit
    x = np.linspace(0.05, 8, 300)
    truth = RateCurve("misses", 20e-6, miss_s=15e-6, x_c=0.8, p=1.0, m_max=2.0)    # two runs probed
    m = truth.miss_ratio(x)
    device = {"page_read_s": 80e-6, "cache_read_s": 3e-6, "page_write_s": 60e-6}
    dev = np.where(x > 4, 0.5 * m, 0.0)                  # past x = 4 half the misses reach the device
    rate = 1.0 / (truth.seconds_per_row(x) + 77e-6 * dev)
    c, share = lsm_fit(x, rate, np.ones_like(x), "misses", m, dev, device, None)
    assert c.m_max == pytest.approx(2.0, rel=0.02) and c.cache_s == pytest.approx(15e-6, rel=0.02)
    assert c.miss_s == pytest.approx(15e-6 + 77e-6, rel=0.02) and share == pytest.approx(15 / 92, rel=0.02)
    # under a page cache: RAM-served misses at b, the device's at b + its read (no write-back)
    under = c.with_page_cache(0.25, share)
    assert under.seconds_per_row(2.0) == pytest.approx(truth.seconds_per_row(2.0), rel=0.02)


def test_a_ladder_on_a_band_of_sky_gives_its_rungs_the_rows_asked():
    """The default run's band (74 index rows a patch object, galactic density) laddered: each
    rung's catalog holds the rows predict.rows asked (the whole sky's 10,088 a patch object
    would give it 1/136 of them), and its pool is scaled by those rows."""
    from catbench.cli.common import read_config
    from catbench.core.sky.copies import catalog_objects
    cfg = read_config(str(REPO / "config" / "config.yaml"))
    cfg = validate({**cfg, "base": None, "stages": ["load_index"], "index": {**cfg["index"], "source": "generate"},
                    "load": {**cfg["load"], "time_limit_s": 24},
                    "predict": {**cfg["predict"], "rows": [302_000, 604_000], "target_rows": 1_208_000,
                                "pool_per_row_bytes": 42}})
    assert PredictSpec.of(cfg).rows_per_object == pytest.approx(74, rel=0.01)
    made = rungs(cfg)
    assert [catalog_objects(r["catalog"]) for r in made] == [pytest.approx(n, rel=0.01) for n in (302_000, 604_000)]
    pools = [int(r["load"]["settings"]["innodb_buffer_pool_size"].rstrip("K")) * 1024 for r in made]
    assert pools == [pytest.approx(n * 42, rel=0.01) for n in (302_000, 604_000)]


def test_the_time_before_the_first_row_is_a_start_and_a_cost_a_row():
    """fitted.pre_line: DuckDB's sort fell from 145 to 80 ns a row from 10^6 to 1.6 × 10^7 rows
    (its start amortised), which a line with an intercept follows and N log2 N did not."""
    from catbench.predict.fitted import pre_line

    def reps(pre, sizes=(1_000_000, 4_000_000, 16_000_000)):
        return [rung_rep(n, n * 12, f"r{n}", 0, pre_s=pre(n)) for n in sizes]
    measured = {1_000_000: 0.145, 4_000_000: 0.40, 16_000_000: 1.28}   # seconds, the VM's sort
    d, e = pre_line(reps(measured.get))
    assert 0.05 < d < 0.15 and 70e-9 < e < 80e-9
    assert d + e * 1e10 == pytest.approx(1e10 * 75e-9, rel=0.1)          # not 145 ns × 1.7 a row
    assert pre_line(reps(lambda n: 2e-7 * n, sizes=(10**6,))) == (0.0, pytest.approx(2e-7))
    d, e = pre_line(reps(lambda n: 1e-7 * n - 0.05))                      # below the origin: through it
    assert d == 0.0 and 0.9e-7 < e < 1.0e-7
