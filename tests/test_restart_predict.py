"""The restart half of the scale model (workflow/catbench/predict/restarts/model.md): fits, the user's
quantities, its regimes, and ``catbench predict --data`` over rung result files written in the
restart and cluster stages' format."""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import replace
from pathlib import Path

import pytest

from catbench.cli.main import main
from catbench.predict import coverage
from catbench.predict.restarts import model
from catbench.predict.restarts.age import max_checkpoint_age
from catbench.predict.restarts.runs import PhaseObservation, read_restarts
from support.restart_rungs import G, ladder as _ladder, write_rung as _write_rung



def test_fit_recovers_a_slope_and_its_interval_covers_the_truth_far_past_the_rungs():
    pts = [(q, 0.2 + 3e-9 * q * (1 + e)) for q, e in
           ((1e8, 0.02), (1e8, -0.02), (2e8, 0.01), (2e8, -0.01), (4e8, 0.02), (4e8, -0.02))]
    f = model.fit(pts)
    assert f.b == pytest.approx(3e-9, rel=0.05)
    y, lo, hi = model.interval(f, 4e9, 0.95, 0.05)
    assert lo < 0.2 + 3e-9 * 4e9 < hi
    assert y == pytest.approx(12.2, rel=0.05)


def test_a_driven_phase_whose_rungs_span_too_little_is_refused():
    with pytest.raises(ValueError, match="spans 1.05x"):
        model.fit([(1e8, 1.0), (1.05e8, 1.1), (1.02e8, 1.0)])


def test_a_repetition_without_its_quantity_is_left_out_counted_and_never_a_quantity_of_nothing():
    pts = [(q, 0.2 + 3e-9 * q) for q in (1e8, 1e8, 2e8, 4e8, 4e8)] + [(None, 0.5)]
    f = model.fit(pts)
    assert f.left_out == 1 and f.n == 5 and f.b == pytest.approx(3e-9)
    with pytest.raises(ValueError, match="2 repetition"):      # what is left must still tell the slope
        model.fit([(1e8, 0.5), (4e8, 1.4), (None, 0.5), (None, 0.6)])


def test_a_slope_not_told_from_noise_keeps_its_fitted_value_with_the_interval_from_none_to_the_most():
    f = model.fit([(1e8, 1.0), (1e8, 1.1), (2e8, 0.95), (2e8, 1.05), (4e8, 1.0), (4e8, 1.02)])
    assert f.b == 0 and f.b_point == 0 and f.b_high > 0 and "told from noise" in f.note   # flat: a fixed cost
    near, far = model.interval(f, 4e8, 0.95, 0.05), model.interval(f, 4e10, 0.95, 0.05)
    assert near[0] == far[0] and far[2] > 2 * near[2]
    # an SST's seconds over the bytes it streamed, rungs of 122-206 MB dominated by the joiner's
    # fixed ~11 s: the slope (~13 ms a MB) is not told from their noise, yet 2.3 GB must be copied
    sst = model.fit([(122e6, 12.77), (122e6, 13.0), (152e6, 12.06), (152e6, 12.99), (206e6, 14.26), (206e6, 13.48)])
    assert sst.b == 0 and sst.b_point == pytest.approx(1.33e-8, rel=0.05)
    y, lo, hi = model.interval(sst, 2.31e9, 0.95, 0.05)
    assert y == pytest.approx(41.7, rel=0.03) and lo < 13.1 + 1 and hi > y


def test_pages_recovered_follow_random_touches_and_stop_at_every_page():
    sh = model.Shares(checkpoint_age=0.7, age_range=None, redo_per_touch=1000.0, crash_share=1.0, dump=0.9,
                      sst=None, sst_redo=None, sst_redo_range=None, copy_per_byte=[], ist_per_down_s=None, moved={},
                      single_batch_up_to=0.3, multi_batch_from=math.inf, page=16384)
    n = 1e6
    assert sh.recovered(1000.0 * n, n * 16384) == pytest.approx(16384 * n * (1 - math.exp(-1)))
    assert sh.recovered(1e15, n * 16384) == pytest.approx(n * 16384)
    assert replace(sh, redo_per_touch=None).recovered(1.0, 5.0) == 5.0


def test_a_dump_is_never_priced_past_the_pool():
    sh = model.Shares(checkpoint_age=0.5, age_range=None, redo_per_touch=None, crash_share=1.0, dump=1.2,
                      sst=None, sst_redo=None, sst_redo_range=None, copy_per_byte=[], ist_per_down_s=None, moved={},
                      single_batch_up_to=0.3, multi_batch_from=math.inf, page=16384)
    assert model.quantities(model.UserNode(100 * G, 10 * G, 8 * G), sh, "clean/dump-on")[0]["buffer_pool_load"] == 10 * G
    assert model.quantities(model.UserNode(5 * G, 10 * G, 8 * G), sh, "clean/dump-on")[0]["buffer_pool_load"] == 6 * G


def test_the_start_grows_with_the_pool_only_on_large_pages():
    assert model.driver("clean/dump-off", "start_to_engine_ready", large_pages=True).words == "buffer pool"
    assert model.driver("clean/dump-off", "start_to_engine_ready", large_pages=False) is None
    assert model.driver("clean/dump-on", "buffer_pool_load", large_pages=False).words == "pages in the dump"


def test_a_measured_share_of_nothing_is_nothing_and_an_unknown_one_the_whole_log():
    """The redo a donor's backup copied or a kill left: a share the rungs measured at 0 gives 0
    bytes (not the whole log), one no rung measured gives the whole log (capped by the server),
    and the words say which."""
    sh = model.Shares(checkpoint_age=0.0, age_range=None, redo_per_touch=None, crash_share=1.0, dump=0.9,
                      sst=None, sst_redo=0.0, sst_redo_range=None, copy_per_byte=[], ist_per_down_s=None, moved={},
                      single_batch_up_to=0.3, multi_batch_from=math.inf, page=16384)
    at = model.UserNode(40 * G, 80 * G, 8 * G)
    assert model.checkpoint_age(at, sh) == 0.0
    q, _, words = model.quantities(at, sh, "node-restart-sst")
    assert q["sst_prepare"] == 0.0 and "0.00 of the redo log" in words[0]
    unknown = replace(sh, checkpoint_age=None, sst_redo=None)
    whole = max_checkpoint_age(8 * G, 16384)
    assert model.checkpoint_age(at, unknown) == pytest.approx(min(8 * G, whole))
    q, _, words = model.quantities(at, unknown, "node-restart-sst")
    assert q["sst_prepare"] == pytest.approx(min(8 * G, whole)) and "no rung's backup said" in words[0]


def test_ist_whose_missed_writes_outgrow_the_gcache_is_answered_by_sst():
    obs, sizes = _ladder()
    at = model.UserNode(40 * G, 80 * G, 8 * G, downtime_s=3600.0, gcache=128 * 2 ** 20)
    got = {p["key"]["kind"]: p for p in model.predict_all(obs, sizes, at, 0.95, 0.05)}
    ist = got["node-restart-ist"]
    assert ist["transfer"] == "SST" and "outgrow the donor's" in ist["regime"][-1]
    assert ist["total_s"] == pytest.approx(got["node-restart-sst"]["total_s"])
    within = {p["key"]["kind"]: p for p in model.predict_all(obs, sizes, model.UserNode(40 * G, 80 * G, 8 * G, None, None,
                                                                                 60.0, 8 * G), 0.95, 0.05)}
    assert within["node-restart-ist"]["transfer"] == "IST"
    assert within["node-restart-ist"]["total_s"] < got["node-restart-sst"]["total_s"]


def test_crash_recovery_in_several_batches_is_refused_unless_a_rung_ran_it():
    at = model.UserNode(600 * G, 8 * G, 64 * G)      # 0.7 x 64 GiB of redo against an 8 GiB pool
    obs, sizes = _ladder()
    crash = next(p for p in model.predict_all(obs, sizes, at, 0.95, 0.05) if p["key"]["kind"] == "crash-during-load")
    assert "several batches" in crash["refused"] and "innodb_buffer_pool_size" in crash["refused"]
    inside = model.UserNode(600 * G, 8 * G, 64 * G, checkpoint_age=0.1 * 8 * G)   # as the rungs: one batch
    crash = next(p for p in model.predict_all(obs, sizes, inside, 0.95, 0.05) if p["key"]["kind"] == "crash-during-load")
    assert "refused" not in crash
    obs, sizes = _ladder(multi=True)
    crash = next(p for p in model.predict_all(obs, sizes, at, 0.95, 0.05) if p["key"]["kind"] == "crash-during-load")
    assert "refused" not in crash and crash["dominant"] in ("redo_scan", "redo_apply")


def test_a_kills_checkpoint_age_is_a_draw_the_crash_interval_spans_and_the_server_caps():
    """The rungs' kills left 0.4-0.8 of the log: the interval spans the recovery at both ends,
    the median share stays the figure, and no age passes MariaDB's ~0.81 of the log."""
    obs, sizes = _ladder()
    at = model.UserNode(40 * G, 80 * G, 8 * G)
    one = next(p for p in model.predict_all(obs, sizes, at, 0.95, 0.05) if p["key"]["kind"] == "crash-during-load")
    for s in sizes.values():
        s.checkpoint_age = [0.4 * s.redo_log_bytes, 0.7 * s.redo_log_bytes, 0.8 * s.redo_log_bytes]
    wide = next(p for p in model.predict_all(obs, sizes, at, 0.95, 0.05) if p["key"]["kind"] == "crash-during-load")
    assert wide["total_s"] == pytest.approx(one["total_s"]) and wide["age_range"] == pytest.approx([0.4, 0.8])
    assert wide["total_ci_low"] < one["total_ci_low"] and wide["total_ci_high"] > one["total_ci_high"]
    assert wide["total_ci_high"] <= wide["at_most_s"] and "0.40–0.80 of the redo log" in "; ".join(wide["regime"])
    assert model.max_checkpoint_age(8 * G, 16384) / (8 * G) == pytest.approx(0.81, abs=0.005)
    for s in sizes.values():
        s.checkpoint_age = [0.95 * s.redo_log_bytes] * 3      # more than the server allows: capped
    redo = model.checkpoint_age(at, model.Shares.of(list(sizes.values())))
    assert redo / 8 / G == pytest.approx(0.81, abs=0.005)


def test_rung_files_are_read_with_each_phase_beside_its_quantity(tmp_path):
    obs, sizes = read_restarts([_write_rung(tmp_path, "r1", 1)])
    s = sizes[("r1", "disk")]
    assert s.rows == 500000 and s.data_bytes == 6000 * 16384 and s.redo_log_bytes == 32e6
    scan = [o for o in obs if o.phase == "redo_scan"]
    assert len(scan) == 2 and scan[0].quantity == pytest.approx(0.7 * 32e6 * math.log2(3000))
    assert {o.kind for o in obs} == set(model.KINDS)
    assert s.transfers == {"node-restart-sst": ["SST", "SST"], "node-restart-ist": ["IST", "IST"]}


def test_a_table_past_the_pool_is_its_file_not_the_pools_pages(tmp_path):
    """The pool's data pages stop at the pool: a rung's table is its tablespace file where the
    clean kind measured it, and the user's data follows those bytes."""
    rungs = [_write_rung(tmp_path, f"r{k}", scale) for k, scale in enumerate((1, 2, 4), start=1)]
    for r in rungs:
        f = Path(r) / "restart" / "disk" / "clean.json"
        doc = json.loads(f.read_text())
        pages = doc["detail"][0]["modes"]["off"]["settle"]["data_pages"]
        for det in doc["detail"]:
            for m in det["modes"].values():
                m["table_file_bytes"] = 3 * pages * 16384
        f.write_text(json.dumps(doc))
    sizes = read_restarts(rungs)[1]
    assert [sizes[(f"r{k}", "disk")].data_bytes for k in (1, 2, 3)] == [3 * int(6000 * s) * 16384 for s in (1, 2, 4)]
    data = model.data_of(8_000_000, [(s.rows, s.data_bytes) for s in sizes.values()])
    assert data == pytest.approx(3 * 6000 * 16384 * 16, rel=0.01)


def test_predict_answers_every_kind_at_the_users_node(tmp_path, capsys):
    rungs = [_write_rung(tmp_path, f"r{k}", scale) for k, scale in enumerate((1, 2, 4), start=1)]
    out = tmp_path / "p.json"
    args = ["predict", "--config", "config/restart-study.yaml", "--data", "60G", "--pool", "128G", "--redo", "8G",
            "--out", str(out)]
    for r in rungs:
        args += ["--results", r]
    assert main(args) == 0
    said = capsys.readouterr().out
    assert all(s in said for s in ("restarts predicted", "60.0 GiB data", "128.0 GiB pool", "8.0 GiB redo log"))
    doc = json.loads(out.read_text())["restarts"]
    got = {p["key"]["kind"]: p for p in doc["predictions"]}
    assert set(got) == set(model.KINDS)
    for p in got.values():
        assert "refused" not in p, p
        # the record's error at the kind's farthest phase past the rungs widens the rungs' spread
        past = max(ph["past_rungs"] or 1 for ph in p["phases"])
        sigma = coverage.error_at(coverage.read(), "restart", past)
        assert sigma >= coverage.error(coverage.read(), "restart")
        assert p["total_ci_low"] <= p["total_s"] <= p["total_ci_high"] and p["dominant"] in model.KINDS[p["key"]["kind"]]
        assert p["model_error"] == sigma > 0 and p["total_ci_low"] <= p["total_rungs_ci_low"] <= p["total_s"]
        assert p["total_ci_high"] / p["total_s"] >= math.exp(1.959 * sigma) and p["total_ci_high"] > p["total_rungs_ci_high"]
    sst = got["node-restart-sst"]
    assert sst["dominant"] == "sst_stream" and sst["dominant_bound"] == "CPU"
    assert sst["age_range"] == [pytest.approx(0.2), pytest.approx(0.3)]
    stream, prepare = (next(p for p in sst["phases"] if p["phase"] == ph) for ph in ("sst_stream", "sst_prepare"))
    assert prepare["quantity_bytes"] == pytest.approx(0.25 * 8 * G)      # the rungs' median share of the user's log
    # a node at rest: its tables and what a datadir holds beside them, not the undo the rungs' load grew
    assert stream["quantity_bytes"] == pytest.approx(60 * G + 44e6 + prepare["quantity_bytes"])
    assert "checkpoint age" in got["crash-during-load"]["regime"][0]
    # past the record's reach an answer is refused, the quantities and their distance still said
    assert main([*args[:4], "600G", *args[5:]]) == 0
    said = capsys.readouterr().out
    far = {p["key"]["kind"]: p for p in json.loads(out.read_text())["restarts"]["predictions"]}["node-restart-sst"]
    assert "refused" in far and "total_s" not in far and "larger" in far["refused"], far
    assert max(ph["past_rungs"] or 0 for ph in far["phases"]) > coverage.reach_limit(coverage.read())
    stream = next(ph for ph in far["phases"] if ph["phase"] == "sst_stream")
    assert stream["quantity_bytes"] == pytest.approx(600 * G + 44e6 + prepare["quantity_bytes"])   # the data's order
    assert [ln for ln in said.splitlines() if "node-restart-sst" in ln] == [ln for ln in said.splitlines() if "sst_stream 60" in ln], said


def test_files_named_on_predicts_command_line_are_read_guarded(tmp_path, capsys):
    """--sealed /dev/zero once grew to 23.5 GB; a FIFO given to --device hung; a device file's
    YAML error echoed its lines; .inf passed as a positive number; 1e308 was refused as text."""
    import os
    rung = _write_rung(tmp_path, "r1", 1)
    base = ["predict", "--config", "config/restart-study.yaml", "--results", rung, "--data", "1G"]
    assert main([*base, "--sealed", "/dev/zero"]) != 0
    assert "/dev/zero is not a regular file" in capsys.readouterr().err
    fifo = tmp_path / "dev.fifo"
    os.mkfifo(fifo)
    assert main([*base, "--device", str(fifo)]) != 0
    assert "is not a regular file" in capsys.readouterr().err
    dev = tmp_path / "dev.yaml"
    dev.write_text("page_read_us: 85\nsecret_token: [unclosed\n")
    assert main([*base, "--device", str(dev)]) != 0
    err = capsys.readouterr().err
    assert "line" in err and "secret_token" not in err
    figures = "page_write_us: 20\nseq_read_MBps: 3200\nseq_write_MBps: 1050\n"
    dev.write_text("page_read_us: .inf\n" + figures)
    assert main([*base, "--device", str(dev)]) != 0
    assert "'page_read_us' must be a positive finite number" in capsys.readouterr().err
    dev.write_text("page_read_us: 1e2\n" + figures)
    assert main([*base, "--device", str(dev)]) == 0


def test_the_first_touch_past_the_probes_warm_part_is_priced_at_its_slow_rate():
    from catbench.predict.restarts.memory import excess, memory_excess, touch_s
    chunk = 256 * 2 ** 20
    curve = {"chunk_bytes": chunk, "seconds": [0.1] * 4 + [0.8] * 4}    # 1 GiB warm, then 8x slower
    assert touch_s(curve, 2 * chunk) == pytest.approx(0.2)
    assert touch_s(curve, 10 * chunk) == pytest.approx(0.4 + 3.2 + 1.6)    # past the probe at its last rate
    assert excess(curve, 3 * chunk) == 0.0                                  # within the warm part: the rungs' rate
    assert excess(curve, 6 * chunk) == pytest.approx(0.4 + 1.6 - 0.6)
    obs, sizes = _ladder()
    rungs = list(sizes.values())
    assert memory_excess(rungs, 4 * G, 80 * G) is None             # no RSS recorded: nothing priced
    for s in rungs:   # RSS after recovery: 200 MiB + 2 bytes a byte of redo and pages
        s.recovery_memory = [(h, 200 * 2 ** 20 + 2 * h) for h in (0.1 * G * s.rows / 1e6, 0.12 * G * s.rows / 1e6)]
        s.touch = curve
    sec, low, high, words = memory_excess(rungs, 2 * G, 80 * G)
    rss = 200 * 2 ** 20 + 4 * G
    assert sec == pytest.approx(excess(curve, rss)) and low == sec == high and "recovery fills ~4.2 GiB" in words
    capped = memory_excess(rungs, 2 * G, 1 * G)      # no more than the pool beside the server's own
    assert capped[0] == pytest.approx(excess(curve, 200 * 2 ** 20 + G)) and "recovery fills ~1.2 GiB" in capped[3]
    crash = next(p for p in model.predict_all(obs, sizes, model.UserNode(40 * G, 80 * G, 8 * G, checkpoint_age=2 * G),
                                              0.95, 0.05) if p["key"]["kind"] == "crash-during-load")
    added = sum(ph["memory_s"] for ph in crash["phases"])
    assert added > 5 and any("first touch past the rungs' rate adds" in w for w in crash["regime"])
    for s in rungs:    # the pools on large pages reserved ahead: the memory was backed before recovery
        s.large_pages = True
    crash = next(p for p in model.predict_all(obs, sizes, model.UserNode(40 * G, 80 * G, 8 * G, checkpoint_age=2 * G),
                                              0.95, 0.05) if p["key"]["kind"] == "crash-during-load")
    assert sum(ph["memory_s"] for ph in crash["phases"]) == 0 and any("large pages" in w for w in crash["regime"])


def test_a_pool_set_on_large_pages_that_are_not_reserved_stops_the_study_first(tmp_path):
    from catbench.restart.memory import large_pages_short
    info = tmp_path / "meminfo"
    info.write_text("MemTotal:       24000000 kB\nHugePages_Total:     100\nHugePages_Free:      100\n"
                    "Hugepagesize:       2048 kB\n")
    assert large_pages_short({"innodb_buffer_pool_size": "8G"}, str(info)) is None      # not asked
    said = large_pages_short({"innodb_buffer_pool_size": "8G", "large_pages": "ON"}, str(info))
    assert "restart.settings large_pages" in said and "200.0 MiB are free" in said and "vm.nr_hugepages=4352" in said
    assert "vm.nr_hugepages=320" in large_pages_short({"innodb_buffer_pool_size": "128M", "large_pages": "ON"}, str(info))
    info.write_text(info.read_text().replace("Free:      100", "Free:      400"))
    assert large_pages_short({"innodb_buffer_pool_size": "64M", "large_pages": 1}, str(info)) is None


def test_an_sst_stream_is_priced_at_its_copy_rate_where_its_totals_are_flat():
    """mariabackup's stream ends on its log-copying thread's one-second tick: rungs of 120–230 MB
    each took ~2.1 s whatever their bytes, where 2 GB took 12 s. The rate while the joiner's
    staging grew prices the bytes; the totals give the fixed part."""
    obs, sizes = _ladder()
    flat = [PhaseObservation(o.run, o.target, o.kind, o.phase, o.rep, 2.1 + 0.01 * o.rep, o.quantity)
            if (o.kind, o.phase) == ("node-restart-sst", "sst_stream") else o for o in obs]
    for s in sizes.values():
        s.sst_copy_s_per_byte = [1 / 190e6, 1 / 210e6]
    at = model.UserNode(2 * G, 4 * G, 1 * G, checkpoint_age=0.0)
    sst = next(p for p in model.predict_all(flat, sizes, at, 0.95, 0.05) if p["key"]["kind"] == "node-restart-sst")
    stream = next(x for x in sst["phases"] if x["phase"] == "sst_stream")
    q = stream["quantity_bytes"]
    fixed = statistics.fmean(2.1 + 0.01 * o.rep - o.quantity / 200e6 for o in flat
                             if (o.kind, o.phase) == ("node-restart-sst", "sst_stream"))
    assert stream["seconds"] == pytest.approx(fixed + q / 200e6, rel=0.01)     # the median of 190 and 210 MB/s
    assert stream["ci_low"] < fixed + q / 210e6 and stream["ci_high"] > fixed + q / 190e6
    assert "measured while it copied (190–210 MB/s" in stream["note"]
    for s in sizes.values():      # without the copy rate: the totals' slope, not told
        s.sst_copy_s_per_byte = []
    sst = next(p for p in model.predict_all(flat, sizes, at, 0.95, 0.05) if p["key"]["kind"] == "node-restart-sst")
    assert next(x for x in sst["phases"] if x["phase"] == "sst_stream")["seconds"] < stream["seconds"] / 2


def test_an_sst_is_never_predicted_faster_than_the_device_writes_its_bytes():
    """Rungs whose stream took a flat ~2 s tell no slope; 600 GB must still be written: the
    interval's low end is the bytes at the device's sequential rate."""
    obs, sizes = _ladder()
    flat = [PhaseObservation(o.run, o.target, o.kind, o.phase, o.rep, 2.0 + 0.1 * o.rep, o.quantity)
            if (o.kind, o.phase) == ("node-restart-sst", "sst_stream") else o for o in obs]
    for s in sizes.values():
        s.sst_copy_s_per_byte = []
    at = model.UserNode(600 * G, 128 * G, 8 * G)
    sst = next(p for p in model.predict_all(flat, sizes, at, 0.95, 0.05) if p["key"]["kind"] == "node-restart-sst")
    phase = next(x for x in sst["phases"] if x["phase"] == "sst_stream")
    assert phase["ci_low"] >= 600 * G * 1e-9 and phase["quantity_bytes"] > 600 * G   # at the rungs' least redo


def test_the_redo_scan_grows_by_the_lookup_probe_past_the_rungs_map():
    from catbench.predict.restarts.lookup import lookup_factor, lookup_ns, mean_lookup
    curve = {"nodes": [2 ** k for k in range(10, 16)], "ns": [50, 50, 50, 100, 150, 200]}   # cache ends at 4,096
    assert lookup_ns(curve, 2 ** 12) == 50 and lookup_ns(curve, 2 ** 14) == 150
    assert lookup_ns(curve, 2 ** 17) == pytest.approx(300)              # past the probe: a level, one wait more
    assert mean_lookup(curve, 2 ** 11) == pytest.approx(50)
    obs, sizes = _ladder()
    rungs = list(sizes.values())
    assert lookup_factor(rungs, 1e6) is None                            # no probe in the rungs: nothing scaled
    at = model.UserNode(40 * G, 80 * G, 8 * G, checkpoint_age=2 * G)
    before = next(p for p in model.predict_all(obs, sizes, at, 0.95, 0.05) if p["key"]["kind"] == "crash-during-load")
    for s in rungs:
        s.lookup = curve
    mid, low, high, words = lookup_factor(rungs, 2 ** 15)
    middle = 0.5 * 2e8 / 16384                                        # the middle rung's pages
    assert mid == pytest.approx(mean_lookup(curve, 2 ** 15) / mean_lookup(curve, middle)) and low <= mid <= high and "lookups" in words
    assert lookup_factor(rungs, 2 ** 10)[0] == 1.0                      # a map no larger than theirs: as they ran
    after = next(p for p in model.predict_all(obs, sizes, at, 0.95, 0.05) if p["key"]["kind"] == "crash-during-load")
    scan = {p["phase"]: p for p in before["phases"]}["redo_scan"], {p["phase"]: p for p in after["phases"]}["redo_scan"]
    pages = next(w for w in after["regime"] if w.startswith("redo_scan: a map of"))
    assert scan[1]["seconds"] > 2 * scan[0]["seconds"] and scan[1]["bound"] == "CPU cache (page map)" and pages
    apply_ = [{p["phase"]: p for p in x["phases"]}["redo_apply"]["seconds"] for x in (before, after)]
    assert apply_[0] == apply_[1]                                       # the apply reads pages, not the map


def test_restart_rung_files_are_read_guarded_and_a_bad_one_named_not_dropped(tmp_path, capsys):
    """A rung's crash-during-load.json linked to /dev/zero once reached a MemoryError, a FIFO
    hung predict, a directory in its place dropped the rung while the output said "from N run(s)"."""
    import os
    rung = _write_rung(tmp_path, "r1", 1)
    kind = tmp_path / "r1" / "restart" / "disk" / "crash-during-load.json"
    base = ["predict", "--config", "config/restart-study.yaml", "--results", rung, "--data", "1G"]
    for make, said in ((lambda p: p.symlink_to("/dev/zero"), "is not a regular file"),
                       (os.mkfifo, "is not a regular file"),
                       (lambda p: p.mkdir(), "is not a regular file"),
                       (lambda p: p.write_text("[" * 100_000), "nested too deeply"),
                       (lambda p: p.write_text("[1, 2]"), "is not a JSON object")):
        kind.unlink() if kind.is_symlink() or kind.is_file() or kind.is_fifo() else kind.rmdir() if kind.exists() \
            else None
        make(kind)
        assert main(base) != 0
        err = capsys.readouterr().err
        assert said in err and str(kind) in err, err


def _tamper(path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize("change, said", [
    (lambda d: d["rows"][1].update(seconds=float("nan")), "rows[1].seconds is nan, not a finite number"),
    (lambda d: d["rows"][1].update(seconds=-5), "rows[1].seconds is -5, not a finite number of at least 0"),
    (lambda d: d["detail"][0]["recovery"].update(redo_bytes=-1e12), "detail[0].recovery.redo_bytes is -1000000000000.0"),
    (lambda d: d["server"]["variables"].update(innodb_page_size="0"), "innodb_page_size is 0, not a page size"),
    (lambda d: d["rows"][1].update(seconds="x"), "is not a restart result catbench wrote (TypeError"),
    (lambda d: d["detail"][0].update(recovery=[1]), "AttributeError"),
], ids=["nan", "negative", "redo-bytes", "page-size", "text", "shape"])
def test_a_tampered_restart_value_is_named_with_its_file_never_used(tmp_path, capsys, change, said):
    """NaN seconds once turned 36.4 s into "7.8 s [7.0 s, nan s]", -5 s gave 8.7 s, -1e12 redo bytes
    0.42 s; a page size of 0 divided by zero; a string or a list in a value's place was a traceback."""
    rung = _write_rung(tmp_path, "r1", 1)
    kind = tmp_path / "r1" / "restart" / "disk" / "crash-during-load.json"
    _tamper(kind, change)
    assert main(["predict", "--config", "config/restart-study.yaml", "--results", rung, "--data", "1G"]) != 0
    err = capsys.readouterr().err
    assert said in err and str(kind) in err and "Traceback" not in err, err


def test_a_rung_given_twice_and_sizes_past_the_servers_limits_are_refused(tmp_path, capsys):
    rungs = [_write_rung(tmp_path, f"r{k}", s) for k, s in ((1, 1), (2, 2))]
    base = ["predict", "--config", "config/restart-study.yaml", "--data", "600G", "--pool", "128G"]
    assert main([*base, "--results", rungs[0], "--results", rungs[1], "--results", rungs[0] + "/"]) != 0
    assert "is given twice" in capsys.readouterr().err
    both = [*base, "--results", rungs[0], "--results", rungs[1]]
    assert main([*both, "--redo", "1K"]) != 0      # it once printed a checkpoint age of -700.1 KiB
    assert "leaves no room for a checkpoint age" in capsys.readouterr().err
    assert main([*both, "--redo", "8G", "--checkpoint-age", "16G"]) != 0 and (err := capsys.readouterr().err)
    assert "--checkpoint-age 16.0 GiB" in err and "8.0 GiB redo log" in err      # the value given, its bound
    assert main([*both, "--redo", "8G", "--checkpoint-age", "4G"]) == 0


def test_restart_rungs_of_two_configs_are_not_fitted_as_one_ladder(tmp_path, capsys):
    """Rungs whose pool a row differs (another config's) were once fitted together: "from 4 run(s)"."""
    rungs = [_write_rung(tmp_path, f"r{k}", s) for k, s in ((1, 1), (2, 2))]
    for kind in ("clean", "crash-during-load"):     # r2's runs with another config's pool
        _tamper(tmp_path / "r2" / "restart" / "disk" / f"{kind}.json",
                lambda d: d["server"]["variables"].update(innodb_buffer_pool_size=str(2**33)))
    base = ["predict", "--config", "config/restart-study.yaml", "--data", "600G", "--pool", "128G", "--redo", "8G"]
    assert main([*base, "--results", rungs[0], "--results", rungs[1]]) != 0
    err = capsys.readouterr().err
    assert all(s in err for s in ("disk", "not one ladder", "r1 had", "pool bytes a row", "r2")), err


def test_the_score_names_the_measured_dominant_phase_and_a_mismatch_is_a_miss():
    """An IST predicted 4.5 s with its start as the dominant phase (1.9 s, right) while the transfer
    the model priced at 0.5 s took 12.5 s: the transfer is scored too, and the mismatch said."""
    p = {"key": {"target": "disk", "kind": "node-restart-ist"}, "total_s": 4.5, "total_ci_low": 3.4,
         "total_ci_high": 30.9, "dominant": "start",
         "phases": [{"phase": "start", "seconds": 1.9, "ci_low": 1.5, "ci_high": 2.5, "quantity_bytes": 1.0},
                    {"phase": "transfer", "seconds": 0.5, "ci_low": 0.2, "ci_high": 1.0, "quantity_bytes": 2.0}]}
    seen = {"disk/node-restart-ist": {"total_s": 17.1, "n": 2, "phases": {"start": 1.9, "transfer": 12.5},
                                      "quantities": {"start": 1.0, "transfer": 2.0}}}
    (s,) = model.score([p], seen)
    assert s["dominant"] == "start" and s["dominant_ratio"] == pytest.approx(1.0) and s["dominant_inside"]
    assert s["measured_dominant"] == "transfer" and not s["dominant_agrees"]
    assert s["measured_dominant_ratio"] == pytest.approx(0.5 / 12.5) and not s["measured_dominant_inside"]
    # a measured phase the prediction has no figure for: a miss, not skipped
    seen["disk/node-restart-ist"]["phases"]["gap"] = 14.0
    (s,) = model.score([p], seen)
    assert s["measured_dominant"] == "gap" and s["measured_dominant_predicted_s"] is None
    assert s["measured_dominant_ratio"] == 0.0 and not s["measured_dominant_inside"]
    # the same phase both ways: it agrees
    seen["disk/node-restart-ist"]["phases"] = {"start": 9.0, "transfer": 1.0}
    assert model.score([p], seen)[0]["dominant_agrees"]
