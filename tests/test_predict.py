"""The scale model (workflow/catbench/predict/model.md): the fit, the integral over the
table's growth, the ladder's rungs, the refusals, and a smoke test on real results."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from catbench.core.config import ConfigError, validate
from catbench.predict.ladder import rungs
from catbench.predict.rate import RateCurve, fit_rate, load_seconds, rows_by
from catbench.predict.runs import Rep
from catbench.predict.scale import Target, fit, predict, validate as validate_ladder

REPO = Path(__file__).resolve().parent.parent
OPTS = {"min_rungs": 2, "max_extrapolation": 100, "x_margin": 1.25, "bootstrap": 30, "confidence": 0.95,
        "below_rate": None}


def _curve(x, r0=4e5, xc=1.0, r1=2e4, k=0.4, noise=0.0, seed=1):
    rate = RateCurve("decay", r0, xc, r1, k).rate(x)
    return rate * np.exp(np.random.default_rng(seed).normal(0, noise, len(x)))


def test_fit_recovers_a_collapse_and_its_decay():
    x = np.linspace(0.05, 15, 300)
    c = fit_rate(x, _curve(x, noise=0.05))
    assert c.form == "decay"
    assert c.r0 == pytest.approx(4e5, rel=0.05) and c.r1 == pytest.approx(2e4, rel=0.1)
    assert c.k == pytest.approx(0.4, abs=0.05) and c.x_c == pytest.approx(1.0, abs=0.1)
    assert c.k_se is not None and c.k_se < 0.05


def test_fit_keeps_a_steady_rate_steady_and_finds_a_floor():
    x = np.linspace(0.05, 10, 200)
    steady = fit_rate(x, 3e5 * np.exp(np.random.default_rng(2).normal(0, 0.05, len(x))))
    assert steady.form == "steady" and steady.r0 == pytest.approx(3e5, rel=0.02)
    floor = fit_rate(x, _curve(x, xc=2.0, k=0.0, noise=0.03))
    assert floor.form == "floor" and floor.r1 == pytest.approx(2e4, rel=0.05)


def test_integral_of_a_constant_rate():
    c = RateCurve("steady", 1e5)
    assert load_seconds(c, 1e7, 50, 1e8) == pytest.approx(100.0, rel=1e-9)
    assert rows_by(c, 30, 1e7, 50, 1e8) == pytest.approx(3e6, rel=1e-6)


def test_integral_of_a_step_and_of_a_decay_match_their_closed_forms():
    bpr, pool = 50.0, 1e8
    n_c = 2.0 * pool / bpr                                  # the break at x = 2
    step = RateCurve("floor", 1e5, 2.0, 1e4, 0.0)
    n = 1e7
    assert load_seconds(step, n, bpr, pool) == pytest.approx(n_c / 1e5 + (n - n_c) / 1e4, rel=1e-9)
    assert load_seconds(step, n_c / 2, bpr, pool) == pytest.approx(n_c / 2 / 1e5, rel=1e-9)
    decay = RateCurve("decay", 1e5, 2.0, 1e4, 0.5)
    x = n * bpr / pool
    closed = n_c / 1e5 + pool / bpr * 2.0 / (1e4 * 1.5) * ((x / 2.0) ** 1.5 - 1)
    assert load_seconds(decay, n, bpr, pool) == pytest.approx(closed, rel=1e-4)


def _rep(rows, pool, run, rep=0, x_final=10.0, **kw):
    """A synthetic repetition: its windows on the decay curve, up to ``x_final``."""
    bpr = x_final * pool / rows
    x = np.linspace(x_final / 64, x_final, 32)
    rate = _curve(x, noise=0.03, seed=rep + rows % 97)
    seconds = load_seconds(RateCurve("decay", 4e5, 1.0, 2e4, 0.4), rows, bpr, pool)
    base = dict(key=("disk", "char28", "innodb", "one-file-at-a-time", "random"), run=run, rows=rows, seconds=seconds,
                stopped=False, time_limit_s=None, table_bytes=int(bpr * rows), pool=pool, input_bytes=38 * rows,
                sort_memory=2 ** 30, pre_s=0.0, post_s=0.0, server_cpu_s=None, sorts=False, x=x, rate=rate,
                weight=np.full(32, rows / 32), ws_over_pool=13.0, collapse_expected=True, rung_rows=rows)
    return Rep(**{**base, **kw})


def _ladder():
    return [_rep(n, n * 6, f"r{n}", rep) for n in (1_000_000, 3_000_000, 10_000_000) for rep in range(3)]


def test_a_ladder_predicts_its_largest_rung_and_the_target_within_its_interval():
    reps = _ladder()
    v = validate_ladder(reps, OPTS)
    assert v["compared"] == "seconds" and v["predicted_over_measured"] == pytest.approx(1.0, abs=0.1)
    t = Target(1e8, 6e8)
    p = predict(reps, t, OPTS)
    truth = load_seconds(RateCurve("decay", 4e5, 1.0, 2e4, 0.4), 1e8, reps[0].bytes_per_row, 6e8)
    assert p["seconds_ci_low"] <= p["seconds"] <= p["seconds_ci_high"]
    assert p["seconds"] == pytest.approx(truth, rel=0.1)
    assert p["regime"] == "I/O bound (random reads)"


@pytest.mark.parametrize("target, reps, why", [
    (Target(2e9, 12e9), None, "extrapolates at most 100"),
    (Target(1e8, 6e7), None, "table ÷ pool would reach"),
    (Target(1e8, 6e8), "one", "the model needs 2"),
])
def test_predictions_refuse_beyond_what_the_model_supports(target, reps, why):
    reps = [r for r in _ladder() if r.rows == 1_000_000] if reps == "one" else _ladder()
    p = predict(reps, target, OPTS)
    assert "seconds" not in p and why in p["refused"]


def test_a_working_set_that_fit_in_every_rung_refuses_a_target_it_outgrows():
    reps = [_rep(n, n * 6, f"r{n}", 0, x_final=0.8, ws_over_pool=0.9, collapse_expected=False)
            for n in (1_000_000, 3_000_000)]
    p = predict(reps, Target(1e7, 1e7 * 6 / 1.2), OPTS)
    assert "working set" in p["refused"]


def test_a_ladder_config_validates_and_names_its_rungs():
    base = {"run": "study", "base": str(REPO / "config/index-study.yaml"),
            "predict": {"rows": [2_017_600, 10_088_000, 5_044_000], "target_rows": 100_880_000},
            "load": {"settings": {"innodb_buffer_pool_size": "512M", "innodb_log_file_size": "1G"},
                     "time_limit_s": 600, "sort_memory": "4GB"}}
    from catbench.core.config import layered
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


@pytest.mark.parametrize("rung_spill, refused", [(0.8, True), (1.4, False)])
def test_an_external_sort_is_refused_only_where_no_rung_spilled(rung_spill, refused):
    # input 38 B/row; the target's input is 1.9x its sort memory
    reps = [_rep(n, n * 6, f"r{n}", rep, sorts=True, sort_memory=38 * n / rung_spill)
            for n in (1_000_000, 3_000_000, 10_000_000) for rep in range(2)]
    p = predict(reps, Target(1e8, 6e8, sort_memory=38 * 1e8 / 1.9), OPTS)
    assert ("every rung sorted in memory" in p.get("refused", "")) is refused


def test_a_one_stream_load_is_not_given_the_time_limit(tmp_path):
    from catbench.cli.predict import _target
    cfg = {"load": {"time_limit_s": 240, "sort_memory": "2GB", "settings": {"innodb_buffer_pool_size": "512M"}}}
    pred = {"below_rate": None, "pool_per_row_bytes": None, "target_rows": 1e8}
    stream = [_rep(10**6, 6e6, "r", time_limit_s=None)]
    by_file = [_rep(10**6, 6e6, "r", time_limit_s=2.4, stopped=True)]
    assert _target(cfg, "innodb", 1e8, pred, stream).time_limit_s is None
    assert _target(cfg, "innodb", 1e8, pred, by_file).time_limit_s == 240


@pytest.mark.parametrize("s", [0.0, 0.3, -0.2])
def test_a_rate_that_falls_with_the_scale_at_a_given_x_is_fitted_and_extrapolated(s):
    # an LSM's rate at a given table ÷ cache falls with the rows written: rate(x) x N^-s
    def rung(n, rep):
        r = _rep(n, n * 6, f"r{n}", rep)
        return dataclasses.replace(r, rate=r.rate * (n / 1e7) ** -s)
    reps = [rung(n, rep) for n in (1_000_000, 3_000_000, 10_000_000) for rep in range(2)]
    f = fit(reps)
    assert f.scale_exp == pytest.approx(s, abs=0.05)
    t = Target(1e8, 6e8)
    truth = load_seconds(RateCurve("decay", 4e5, 1.0, 2e4, 0.4), 1e8, reps[0].bytes_per_row, 6e8) * 10 ** s
    assert predict(reps, t, OPTS)["seconds"] == pytest.approx(truth, rel=0.15)


def test_the_interval_holds_every_leave_one_rung_out_prediction():
    # one rung 30 % slow: the bootstrap over repetitions cannot see it, leaving it out does
    def rung(n, rep):
        r = _rep(n, n * 6, f"r{n}", rep)
        return dataclasses.replace(r, rate=r.rate * (0.7 if n == 3_000_000 else 1.0))
    reps = [rung(n, rep) for n in (1_000_000, 3_000_000, 10_000_000) for rep in range(2)]
    t = Target(1e8, 6e8)
    p = predict(reps, t, OPTS)
    for n in (1_000_000, 3_000_000, 10_000_000):
        q = predict([r for r in reps if r.rung_rows != n], t, {**OPTS, "bootstrap": 0})
        assert p["seconds_ci_low"] <= q["seconds"] <= p["seconds_ci_high"]


def _noisy_ladder(rng, sigma, sizes=(1_000_000, 2_000_000, 4_000_000, 8_000_000)):
    """A ladder whose every rung ran once more: each rung's rates × exp(N(0, sigma))."""
    out = []
    for n in sizes:
        c = float(np.exp(rng.normal(0.0, sigma)))
        out += [dataclasses.replace(r, rate=r.rate * c) for r in (_rep(n, n * 6, f"r{n}", rep) for rep in range(2))]
    return out


def test_the_rungs_scatter_about_the_fit_sets_the_run_noise():
    from catbench.predict.scale import run_noise
    reps = _ladder()
    assert run_noise(reps, fit(reps), 0.05) == 0.05           # rungs on the fit: the floor
    off = [dataclasses.replace(r, rate=r.rate * (0.7 if r.rung_rows == 3_000_000 else 1.0)) for r in reps]
    assert run_noise(off, fit(off), 0.05) > 0.15               # one rung 30 % slow


def test_the_same_ladder_run_twice_predicts_within_each_others_interval():
    # the rungs of each run are off by a between-run noise of 5 %; the repetitions within a
    # run agree, so only the run noise in the interval can hold the other run's prediction
    rng, t, hits, pairs = np.random.default_rng(7), Target(1e8, 6e8), 0, 12
    opts = {**OPTS, "bootstrap": 60, "run_noise": 0.05}
    for _ in range(pairs):
        a, b = (predict(_noisy_ladder(rng, 0.05), t, opts) for _ in range(2))
        hits += (a["seconds_ci_low"] <= b["seconds"] <= a["seconds_ci_high"]
                 and b["seconds_ci_low"] <= a["seconds"] <= b["seconds_ci_high"])
    assert hits >= pairs - 3
    no_noise = {**opts, "run_noise": 0.0}
    a = predict(_noisy_ladder(np.random.default_rng(1), 0.0), t, no_noise)
    b = predict(_noisy_ladder(np.random.default_rng(1), 0.0), t, opts)
    assert b["seconds_ci_high"] - b["seconds_ci_low"] > 2 * (a["seconds_ci_high"] - a["seconds_ci_low"])


def test_a_fixed_cost_per_input_file_is_fitted_and_fades_at_the_target():
    # every file costs 3 ms (a statement and its commit): the small rungs' small files show
    # it most, the target's large files hardly; a power law of N would extrapolate the rise
    cost, files = 0.003, 1024
    def rung(n, rep):
        r = _rep(n, n * 6, f"r{n}", rep, files=files)
        return dataclasses.replace(r, rate=1.0 / (1.0 / r.rate + cost * files / n))
    reps = [rung(n, rep) for n in (1_000_000, 3_000_000, 10_000_000) for rep in range(2)]
    f = fit(reps)
    assert f.file_cost == pytest.approx(cost, rel=0.3) and abs(f.scale_exp) < 0.05
    t = Target(1e8, 6e8, files=files)
    curve = dataclasses.replace(RateCurve("decay", 4e5, 1.0, 2e4, 0.4), per_row_s=cost * files / 1e8)
    truth = load_seconds(curve, 1e8, reps[0].bytes_per_row, 6e8)
    assert predict(reps, t, OPTS)["seconds"] == pytest.approx(truth, rel=0.1)
    # no such cost: none is fitted
    assert fit([_rep(n, n * 6, f"r{n}", rep, files=files) for n in (1_000_000, 3_000_000, 10_000_000)
                for rep in range(2)]).file_cost == 0.0


def test_a_fixed_share_of_the_cache_the_table_cannot_use_is_fitted_and_fades_at_the_target():
    # 1.2 MB of every rung's pool holds what is not the table (a transaction's undo pages):
    # a fifth of the smallest rung's pool, 2 % of the largest's; a power law of N would
    # extrapolate the rungs' rise in rate at one table ÷ pool
    overhead = 1.2e6
    def rung(n, rep):
        r = _rep(n, n * 6, f"r{n}", rep)
        return dataclasses.replace(r, rate=_curve(r.x * r.pool / (r.pool - overhead), noise=0.03, seed=rep + n % 97))
    reps = [rung(n, rep) for n in (1_000_000, 3_000_000, 10_000_000) for rep in range(2)]
    f = fit(reps)
    assert f.pool_overhead == pytest.approx(overhead, rel=0.15) and abs(f.scale_exp) < 0.05
    t = Target(1e8, 6e8)
    truth = load_seconds(RateCurve("decay", 4e5, 1.0, 2e4, 0.4), 1e8, reps[0].bytes_per_row, 6e8 - overhead)
    assert predict(reps, t, OPTS)["seconds"] == pytest.approx(truth, rel=0.03)   # 0.95 without it
    assert "could not use" in predict(reps, Target(1e5, 1e6), OPTS)["refused"]   # a cache below it
    # none: none is fitted
    assert fit([_rep(n, n * 6, f"r{n}", rep) for n in (1_000_000, 3_000_000, 10_000_000)
                for rep in range(2)]).pool_overhead == 0.0


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
    reps = _ladder()
    full = predict(reps, Target(1e8, 6e8), OPTS)["seconds"]
    p = predict(reps, Target(1e8, 6e8, time_limit_s=0.995 * full), OPTS)
    assert p["stopped"] and p["rows"] < 1e8
    assert p["rows_ci_low"] < p["rows"] <= p["rows_ci_high"] <= 1e8
