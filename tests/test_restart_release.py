"""A shutdown gives back the pool its server touched: priced past the rungs' own by the memory
probe's release (predict/restarts/memory.py release_excess)."""

import json
from pathlib import Path

import pytest
from catbench.predict.restarts import model
from catbench.predict.restarts.runs import read_restarts
from catbench.restart.memory import touch_curve
from support.restart_rungs import G, write_rung as _write_rung


def _with_probe(path: str, release_s: float | None) -> None:
    for name in ("clean.json", "node-restart-sst.json", "node-restart-ist.json"):
        for f in Path(path).rglob(name):
            doc = json.loads(f.read_text())
            doc["memory_touch"] = {"chunk_bytes": 256 * 2**20, "seconds": [0.1] * 4,
                                   **({} if release_s is None else {"release_s": release_s})}
            f.write_text(json.dumps(doc))


def _clean(tmp_path, release_s, pool=4 * G):
    rungs = [_write_rung(tmp_path, f"r{k}", s) for k, s in enumerate((1, 2, 4), start=1)]
    for r in rungs:
        _with_probe(r, release_s)
    obs, sizes = read_restarts(rungs)
    at = model.UserNode(data=16 * G, pool=pool, redo_log=G)
    preds = {p["key"]["kind"]: p for p in model.predict_all(obs, sizes, at, 0.95, 0.1)}
    return preds["clean/dump-off"], sizes


def test_the_shutdown_gives_back_the_users_pool_at_the_probes_rate_past_the_rungs(tmp_path):
    # 1 GiB of probe given back in 0.5 s: 0.5 s a GiB past the rungs' median pool held
    p, sizes = _clean(tmp_path / "a", 0.5)
    held = sorted(min(s.pool_bytes, s.data_bytes) for s in sizes.values())[1]
    shut = next(ph for ph in p["phases"] if ph["phase"] == "shutdown")
    assert shut["memory_s"] == pytest.approx(0.5 * (4 * G - held) / G, rel=1e-6)
    assert shut["seconds"] == pytest.approx(0.03 + shut["memory_s"], rel=1e-3) and shut["bound"] == "memory (release)"
    assert any("gives back" in w for w in p["regime"])
    # the pool it held, not more: a smaller pool gives back less
    small, _ = _clean(tmp_path / "b", 0.5, pool=G)
    assert next(ph for ph in small["phases"] if ph["phase"] == "shutdown")["memory_s"] < shut["memory_s"]


def test_rungs_whose_probe_timed_no_release_price_none_and_the_probe_times_it(tmp_path):
    p, _ = _clean(tmp_path, None)
    shut = next(ph for ph in p["phases"] if ph["phase"] == "shutdown")
    assert shut["memory_s"] == 0 and shut["bound"] == "fixed"
    curve = touch_curve(32 * 2**20, chunk=16 * 2**20)
    assert len(curve["seconds"]) == 2 and curve["release_s"] > 0
