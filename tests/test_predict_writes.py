"""The scale model's depth term and writes (predict/model.md: "The tree's depth", "Writes"):
a row's cost as the table's rows double, and what a row makes the server write, from the rungs'
windows."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from catbench.predict.rate import RateCurve, fit_rate, load_seconds
from catbench.predict.runs import _window_writes
from catbench.predict.scale import PredictTarget, predict
from catbench.predict.spec import Fitting
from catbench.predict.writes import fit_writes
from support.predict import DEVICE, rung_rep

OPTS = Fitting(min_rungs=2, x_margin=1.25, bootstrap=20, run_noise=0.0, confidence=0.95)
KEY = ("disk", "char28", "innodb", "one-file-at-a-time", "spatial (chunk-sorted order)")


def _in_order(n, rep, depth_s=0.0, writes=None, device=DEVICE):
    """A key-ordered load's repetition (never misses, x ≤ 0.5): 2 µs a row at 2^17 rows,
    ``depth_s`` more per doubling of the table's rows."""
    r = rung_rep(n, n * 200, f"r{n}", rep, x_final=0.5, curve=RateCurve("steady", 2e-6), key=KEY,
                 ws_over_pool=0.1, collapse_expected=False, device=device)
    n_mid = r.x * r.pool / r.bytes_per_row
    spr = 2e-6 + depth_s * np.maximum(np.log2(n_mid) - 17, 0)
    noise = np.exp(np.random.default_rng(rep + n % 89).normal(0, 0.02, len(n_mid)))
    return dataclasses.replace(r, rate=noise / spr, n_mid=n_mid, writes=writes or {})


def test_a_rows_cost_that_grows_with_the_trees_depth_is_fitted_and_carried_to_the_target():
    reps = [_in_order(n, rep, depth_s=0.1e-6) for n in (4_000_000, 8_000_000, 16_000_000) for rep in range(2)]
    p = predict(reps, PredictTarget(1e10, 2**50), OPTS)
    assert p["fit"]["depth_s_per_row_per_doubling"] == pytest.approx(0.1e-6, rel=0.2)
    truth = load_seconds(RateCurve("steady", 2e-6, depth_s=0.1e-6, depth_ref=17.0), 1e10, 1.0, 1.0)
    assert p["seconds"] == pytest.approx(truth, rel=0.1)
    assert p["seconds"] > 1.3 * 2e-6 * 1e10            # the depth's cost at 10^10 rows, not the rungs'
    flat = [_in_order(n, rep) for n in (4_000_000, 8_000_000, 16_000_000) for rep in range(2)]
    q = predict(flat, PredictTarget(1e10, 2**50), OPTS)
    assert q["fit"]["depth_s_per_row_per_doubling"] == 0.0   # no trend: the term is not kept
    assert q["seconds"] == pytest.approx(2e-6 * 1e10, rel=0.05)


def test_fit_rate_keeps_no_depth_term_that_a_fall_with_depth_would_need():
    x = np.linspace(0.1, 1, 40)
    depth = np.linspace(17, 24, 40)
    c = fit_rate(x, 1 / (3e-6 - 0.1e-6 * (depth - 17)), form="steady", depth=depth)
    assert c.depth_s == 0.0


def _writes(n, redo=90.0, pages=0.006, device=200.0):
    k = 32
    return {"redo_bytes": np.full(k, redo), "pages_flushed": np.full(k, pages), "device_write_bytes": np.full(k, device),
            "checkpoint_age_bytes": np.full(k, 7e6)}


def test_what_a_row_writes_is_read_from_the_rungs_counters_and_given_at_the_targets_rate():
    reps = [dataclasses.replace(_in_order(n, rep, writes=_writes(n)), log_bytes=10 * 2**20)
            for n in (4_000_000, 8_000_000, 16_000_000) for rep in range(2)]
    w = fit_writes(reps)
    assert (w.redo, w.pages, w.device) == (pytest.approx(90.0), pytest.approx(0.006), pytest.approx(200.0))
    assert w.checkpoint_share == pytest.approx(7e6 / (10 * 2**20))
    p = predict(reps, PredictTarget(1e10, 2**50), OPTS)
    assert p["writes"]["device_write_bytes_per_row"] == pytest.approx(200.0)
    assert p["writes"]["device_write_MBps"] == pytest.approx(200.0 * 1e10 / p["load_s"] / 1e6)
    assert p["regime"] != "write bound (redo log and page cleaners)"


def test_a_device_too_slow_for_what_a_row_writes_bounds_the_load():
    slow = {**DEVICE, "seq_write_s_per_byte": 1 / 20e6}      # 20 MB/s: 200 B a row take 10 µs
    reps = [dataclasses.replace(_in_order(n, rep, writes=_writes(n), device=slow), log_bytes=10 * 2**20)
            for n in (4_000_000, 8_000_000, 16_000_000) for rep in range(2)]
    p = predict(reps, PredictTarget(1e10, 2**50), OPTS)
    floor = 200.0 / 20e6
    assert p["fit"]["write_floor_s_per_row"] == pytest.approx(floor)
    assert p["regime"] == "write bound (redo log and page cleaners)"
    assert p["seconds"] == pytest.approx(floor * 1e10, rel=0.02)


def test_each_window_gives_its_rows_in_the_table_and_what_a_row_wrote():
    trace = {"start": np.array([0.0, 10.0]), "end": np.array([10.0, 20.0]),
             "cumulative_rows": np.array([1000.0, 2000.0])}
    t = np.arange(0.0, 21.0)
    samples = {"time": t, "Handler_write": None, "Innodb_os_log_written": 90.0 * 100 * t,
               "Innodb_buffer_pool_pages_flushed": 0.5 * t, "dev_write_bytes": 200.0 * 100 * t,
               "Innodb_checkpoint_age": np.where(t < 10, 1e6, 3e6)}
    n_mid, w = _window_writes(trace, 0.0, samples)
    assert list(n_mid) == [500.0, 1500.0]
    assert w["redo_bytes"] == pytest.approx([90.0, 90.0])
    assert w["pages_flushed"] == pytest.approx([0.005, 0.005])
    assert w["device_write_bytes"] == pytest.approx([200.0, 200.0])
    assert list(w["checkpoint_age_bytes"]) == [3e6, 3e6]


def test_a_devices_published_figures_replace_the_rungs_fio_and_a_bad_file_is_named():
    import yaml
    from catbench.core.infra.resources import resource
    from catbench.predict.runs import device_figures
    for f in sorted(resource("devices").glob("*.yaml")):
        d = device_figures(yaml.safe_load(f.read_text()), f)
        assert d["page_read_s"] > d["page_write_s"] / 10 and d["seq_write_s_per_byte"] > 0
    hdd = device_figures(yaml.safe_load(resource("devices/raid6-hdd-7200rpm.yaml").read_text()), "x")
    assert hdd["page_read_s"] == pytest.approx(7.4e-3 + 4.16e-3)
    with pytest.raises(ValueError, match=r"bad\.yaml: 'seq_write_MBps' .*\(got None\)"):     # the file, key, value
        device_figures({"page_read_us": 80, "page_write_us": 20, "seq_read_MBps": 100}, "bad.yaml")
    with pytest.raises(ValueError, match=r"unknown key\(s\) page_read_ms"):
        device_figures({"page_read_us": 80, "page_write_us": 20, "seq_read_MBps": 1, "seq_write_MBps": 1,
                        "page_read_ms": 1}, "bad.yaml")


def test_a_load_that_does_not_sort_gets_no_spill_pass_whatever_its_input():
    # the one-file-at-a-time protocol spends time before its first row (the input's scan), a
    # start and a cost a row; it sorts nothing, so an input past the sort memory adds no pass
    reps = [dataclasses.replace(_in_order(n, rep), pre_s=0.3 + 2e-7 * n) for n in (4_000_000, 8_000_000)
            for rep in range(2)]
    small, big = (predict(reps, PredictTarget(1e10, 2**50, sort_memory=m), OPTS) for m in (2**50, 2**20))
    assert big["pre_s"] == pytest.approx(small["pre_s"]) == pytest.approx(0.3 + 2e-7 * 1e10, rel=0.01)
