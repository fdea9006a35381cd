"""The checkpoint age a crash finds: held at the flush-ahead marks where the load takes 0.7 s or
more to fill the user's log to the mark at the rungs' redo rate (and the pool holds the limit's
redo), the rungs' draw otherwise; a third of the pool recovered in one batch; and the restart ladder's rungs: the cleaners' free-page depth scaled with the pool, the
time a node is down spanning the rungs' ratio from a share of the target's."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from catbench.core.infra.config import layered, validate
from catbench.predict.restarts import model
from catbench.predict.restarts.age import HELD_FROM_S, held_band, max_checkpoint_age
from catbench.predict.restarts.runs import read_restarts
from catbench.predict.spec import rungs
from support.paths import REPO
from support.restart_rungs import G, ladder, write_rung


def _crash(obs, sizes, at):
    return next(p for p in model.predict_all(obs, sizes, at, 0.95, 0.05) if p["key"]["kind"] == "crash-during-load")


def test_a_log_the_load_fills_in_0_7_s_or_more_holds_the_age_at_the_marks():
    obs, sizes = ladder()
    for s in sizes.values():
        s.checkpoint_age = [0.2 * s.redo_log_bytes, 0.4 * s.redo_log_bytes]   # the rungs' draw
        s.redo_rate = [3e7]
    sh = model.Shares.of(list(sizes.values()))
    node = model.UserNode(600 * G, 128 * G, 8 * G)
    band = held_band(8 * G, 128 * G, 16384, 3e7)
    limit = max_checkpoint_age(8 * G, 16384) / (8 * G)
    assert band == pytest.approx((7 / 8 * limit, limit)) and band[0] == pytest.approx(0.71, abs=0.01)
    assert model.checkpoint_age(node, sh) == pytest.approx(sum(band) / 2 * 8 * G)
    crash = _crash(obs, sizes, node)
    assert crash["age_range"] == pytest.approx(list(band))
    assert any("held at 0.71-0.81 of the redo log" in w for w in crash["regime"]), crash["regime"]
    drawn = _crash(obs, sizes, replace(node, redo_log=HELD_FROM_S * 3e7 / 2))   # filled in under the threshold
    assert drawn["age_range"] == pytest.approx([0.2, 0.4])
    assert any("0.30 of the redo log, as in the rungs' kills" in w for w in drawn["regime"]), drawn["regime"]
    assert drawn["total_s"] < crash["total_s"]
    # a pool under the limit's redo writes its pages for room before the log fills: the draw
    assert model.checkpoint_age(replace(node, pool=4 * G), sh) == pytest.approx(0.3 * 8 * G)
    # rungs that recorded no redo rate (results written before it was kept): the rungs' draw
    for s in sizes.values():
        s.redo_rate = []
    assert _crash(obs, sizes, node)["age_range"] == pytest.approx([0.2, 0.4])
    # an age the user gives wins over both
    assert model.checkpoint_age(replace(node, checkpoint_age=1 * G), sh) == 1 * G


def test_the_rungs_redo_rate_is_read_from_each_kills_load_pace(tmp_path):
    run = write_rung(tmp_path, "r1", 1.0)
    path = tmp_path / "r1/restart/disk/crash-during-load.json"
    doc = json.loads(path.read_text())
    for rep, det in enumerate(doc["detail"]):
        det["load_pace"] = {"seconds": 2.0, "redo_bytes": 6e7, "redo_Bps": 3e7 + rep, "checkpoint_age": 1e6}
    path.write_text(json.dumps(doc))
    _obs, sizes = read_restarts([run])
    assert sizes[("r1", "disk")].redo_rate == [3e7, 3e7 + 1]


def test_restart_rungs_scale_the_cleaners_depth_and_span_the_time_down():
    cfg = validate(layered({"run": "rs", "base": str(REPO / "config/restart-study.yaml"),
                            "cluster": {"gcache_size": "320M", "load": {"down_s": 40}}}, REPO))
    out = rungs(cfg)
    pred = cfg["predict"]
    factors = [r / pred["target_rows"] for r in pred["rows"]]
    assert [r["server"]["settings"]["innodb_lru_scan_depth"] for r in out] == [
        max(100, round(1536 * f)) for f in factors]
    share = pred["downtime_share"]
    # the largest rung down for half the target's 40 s, the others by their rows' ratio to it
    assert [r["cluster"]["load"]["down_s"] for r in out] == pytest.approx(
        [40 * share * r / max(pred["rows"]) for r in pred["rows"]], rel=1e-3)
    assert out[-1]["cluster"]["gcache_size"] == f"{round(320 * 1024 * share)}K"
    for r in out:
        validate(r)
    own = layered({"run": "rs", "base": str(REPO / "config/restart-study.yaml"),
                   "server": {"settings": {"innodb_lru_scan_depth": 20000}}}, REPO)
    assert rungs(validate(own))[-1]["server"]["settings"]["innodb_lru_scan_depth"] == round(
        20000 * factors[-1])
    restart_own = layered({"run": "rs", "base": str(REPO / "config/restart-study.yaml"),
                           "restart": {"settings": {"innodb_lru_scan_depth": 20000}}}, REPO)
    assert rungs(validate(restart_own))[-1]["restart"]["settings"]["innodb_lru_scan_depth"] == round(
        20000 * factors[-1])    # a depth the restart's own settings give is scaled too


def test_an_age_under_a_third_of_the_pool_is_one_batch_past_the_rungs_own():
    obs, sizes = ladder()      # the rungs recovered 0.7 of a log half their pool: 0.35 of it, in one batch
    for s in sizes.values():
        s.batches = [(0.2 * s.pool_bytes, False)] * 2      # ... here only 0.2 of it
    node = model.UserNode(600 * G, 128 * G, 8 * G)
    assert "refused" not in _crash(obs, sizes, replace(node, checkpoint_age=0.3 * 128 * G))   # a third: MariaDB's
    refused = _crash(obs, sizes, replace(node, checkpoint_age=0.4 * 128 * G))["refused"]
    assert "several batches" in refused and "a third of the pool" in refused and "0.20 of their pool" in refused
