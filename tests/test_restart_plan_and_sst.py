"""The restart model's answer where its rungs cannot tell a phase's growth (planned at its
bound) and an SST's files split into the tables, the tablespaces and the server's own."""

from __future__ import annotations

from dataclasses import replace

import pytest
from catbench.predict.restarts import model
from support.restart_rungs import G, ladder


def test_growth_the_rungs_cannot_tell_is_planned_at_its_bound_not_assumed_away():
    """An IST whose rungs' transfer seconds are flat in noise (12.5 s at a check where the
    rungs priced ~1 s): the central figure keeps the fixed cost, the figure to plan by carries
    the slope's upper bound to the user's write sets, and a far check is scored against both."""
    obs, sizes = ladder()
    noisy = [replace(o, seconds=(0.8, 1.3, 1.1, 0.9, 1.2, 0.7)[i % 6]) if o.phase == "state_transfer" else o
             for i, o in enumerate(obs)]
    at = model.UserNode(40 * G, 80 * G, 8 * G, None, None, 600.0, 8 * G)
    ist = next(p for p in model.predict_all(noisy, sizes, at, 0.95, 0.05) if p["key"]["kind"] == "node-restart-ist")
    phase = next(ph for ph in ist["phases"] if ph["phase"] == "state_transfer")
    assert phase["plan_s"] == phase["ci_high"] > 2 * phase["seconds"]
    assert ist["plan_s"] == pytest.approx(sum(ph["plan_s"] for ph in ist["phases"]))
    assert ist["plan_s"] > ist["total_s"] + (phase["ci_high"] - phase["seconds"]) * 0.99
    assert any("planned at that bound" in w for w in ist["regime"])
    told = next(p for p in model.predict_all(obs, sizes, at, 0.95, 0.05) if p["key"]["kind"] == "node-restart-ist")
    assert told["plan_s"] is None      # a slope the rungs tell: the central figure is the one to plan by
    for measured, covered in ((ist["plan_s"] * 0.9, True), (ist["plan_s"] * 1.1, False)):
        seen = {"disk/node-restart-ist": {"total_s": measured, "n": 2, "phases": {"state_transfer": 10.0},
                                          "quantities": {}}}
        [scored] = model.score([ist], seen)
        assert scored["plan_covers"] is covered and scored["total_ratio"] < 1


def test_an_sst_of_a_node_at_rest_streams_its_data_not_the_undo_the_rungs_load_grew():
    """Rungs whose joiners held ~4× their data (the system tablespace grown by 64 MiB, its
    autoextend step, by their own load's undo, at every rung alike): a user's 600 GiB node at rest
    streams its tables and what a datadir holds beside them, not 2.3 TiB; the benchmark's own
    node, mid-load, streams that undo too, as bytes, not as a share of its data; rungs that
    recorded no split answer with the data alone and say so."""
    _, sizes = ladder()
    for s in sizes.values():   # tables 1.02× the data, 40 MB beside them, 64 MiB of undo at every rung
        s.sst_split = [(1.02 * s.data_bytes, 40e6, 64 * 2 ** 20)] * 2
    sh = model.Shares.of(list(sizes.values()))
    assert sh.sst == pytest.approx((1.02, 40e6, 64 * 2 ** 20))
    user = model.UserNode(600 * G, 128 * G, 8 * G)
    q, _, words = model.quantities(user, sh, "node-restart-sst")
    files = q["sst_stream"] - q["sst_prepare"]
    assert files == pytest.approx(1.02 * 600 * G + 40e6) and "not the 64.0 MiB of undo" in words[0]
    own = replace(user, at_rest=False)
    q, _, words = model.quantities(own, sh, "node-restart-sst")
    assert q["sst_stream"] - q["sst_prepare"] == pytest.approx(1.02 * 600 * G + 40e6 + 64 * 2 ** 20)
    assert "mid-load" in words[0]
    q, _, words = model.quantities(user, replace(sh, sst=None), "node-restart-sst")
    assert q["sst_stream"] - q["sst_prepare"] == 600 * G and "recorded no split" in words[0]


def test_a_datadirs_state_is_split_into_tables_tablespaces_and_the_servers_own(tmp_path):
    from catbench.restart.cluster.node import state_parts
    files = {"ibdata1": 300, "undo001": 20, "undo002": 30, "ibtmp1": 7, "ib_logfile0": 999, "galera.cache": 999,
             "aria_log.00000001": 5, "mysql/user.MAD": 11, "sys/sys_config.ibd": 13, "catbench/idx.ibd": 1000,
             "catbench/idx.frm": 2, "grastate.dat": 1}
    for name, size in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x" * size)
    assert state_parts(tmp_path) == {"tables": 1002, "system": 300, "undo": 50, "temp": 7, "server": 5 + 11 + 13 + 1}
