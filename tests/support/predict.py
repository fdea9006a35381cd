"""A synthetic ladder of load repetitions on a known rate curve, and the prediction
`catbench predict` writes from it, for the scale model's tests and the report's."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np
import pytest
import yaml
from catbench.cli.predict import cmd_predict
from catbench.predict.rate import RateCurve, load_seconds, rows_by
from catbench.predict.runs import LoadRepetition

DEVICE = {"page_read_s": 100e-6, "page_write_s": 50e-6, "seq_s_per_byte": 1 / 200e6 + 1 / 400e6}
# a B-tree load: 2.5 µs a row while cached, a miss costing K = 1.2 × (read + write) = 180 µs
TRUE = RateCurve("misses", 2.5e-6, miss_s=1.2 * 150e-6, x_c=0.85)


def curve_rates(x, curve=TRUE, noise=0.0, seed=1):
    return curve.rate(x) * np.exp(np.random.default_rng(seed).normal(0, noise, len(x)))


def rung_rep(rows, pool, run, rep=0, x_final=8.0, curve=TRUE, **kw):
    """A synthetic repetition: its windows on ``curve``, up to ``x_final``."""
    bpr = x_final * pool / rows
    x = np.linspace(x_final / 64, x_final, 32)
    rate = curve_rates(x, curve, noise=0.03, seed=rep + rows % 97)
    seconds = load_seconds(curve, rows, bpr, pool)
    base = dict(key=("disk", "char28", "innodb", "one-file-at-a-time", "random"), run=run, rows=rows, seconds=seconds,
                stopped=False, time_limit_s=None, table_bytes=int(bpr * rows), pool=pool, input_bytes=38 * rows,
                sort_memory=2 ** 30, pre_s=0.0, post_s=0.0, server_cpu_s=None, sorts=False, in_file_order=True,
                x=x, rate=rate,
                weight=np.full(32, rows / 32), ws_over_pool=13.0, collapse_expected=True, rung_rows=rows,
                device=DEVICE)
    return LoadRepetition(**{**base, **kw})


def ladder(**kw):
    """Three rungs of 10^6, 3·10^6 and 10^7 rows, three repetitions each, on TRUE."""
    return [rung_rep(n, n * 12, f"r{n}", rep, **kw) for n in (1_000_000, 3_000_000, 10_000_000) for rep in range(3)]


FINISHES = ("disk", "char28", "innodb", "one-file-at-a-time", "random")
STOPPED = ("disk", "char28", "myisam", "one-file-at-a-time", "random")   # 20× slower: stopped by the time limit
ONE_RUNG = ("ssd", "char28", "innodb", "sorted", "random")     # refused: one rung
LIMIT_S = 20_000.0                                            # at 10^8 rows; a rung's is scaled by its rows


def groups() -> dict:
    """Three targets' ladders: one that finishes, one stopped by its time limit, one refused."""
    rungs = ladder()
    slow_curve = RateCurve("misses", TRUE.a * 20, miss_s=TRUE.miss_s * 20, x_c=TRUE.x_c)
    slow = []
    for r in rungs:
        r = dataclasses.replace(r, key=STOPPED, rate=r.rate / 20, seconds=r.seconds * 20)
        if r.rung_rows == 10_000_000:   # the largest rung stops at its limit
            limit = LIMIT_S * r.rung_rows / 1e8
            n = rows_by(slow_curve, limit, r.rung_rows, r.bytes_per_row, r.pool)
            r = dataclasses.replace(r, rows=int(n), stopped=True, time_limit_s=limit, seconds=limit,
                                    table_bytes=int(r.bytes_per_row * n))
        slow.append(r)
    return {FINISHES: rungs, STOPPED: slow,
            ONE_RUNG: [dataclasses.replace(r, key=ONE_RUNG) for r in rungs if r.rung_rows == 1_000_000]}


def write_prediction(run: Path, out: Path | None = None, read=None, **flags) -> Path:
    """results/<run>/predict/prediction.json as `make ladder` writes it (catbench predict --out),
    from the synthetic rungs; the target's pool is 6 bytes per row, as the rungs'. ``read``:
    what each run reads as (paths -> groups; default ``groups()``); ``flags``: more of the
    command's flags (measured, sealed)."""
    cfg = run.parent / f"{run.name}-predict.yaml"
    cfg.write_text(yaml.safe_dump({"run": run.name, "load": {"time_limit_s": LIMIT_S},
                                   "predict": {"target_rows": 100_000_000, "pool_per_row_bytes": 6,
                                               "bootstrap": 20}}))
    out = out or run / "predict" / "prediction.json"
    args = argparse.Namespace(**{**dict(config=str(cfg), results=["rung1", "rung2", "rung3", str(run)], rows=None,
                                        pool=None, ram=None, no_time_limit=False, measured=None, sealed=None, device=None,
                                        min_rungs=None, out=str(out), targets=None, loads_only=False, data=None,
                                        redo=None, checkpoint_age=None, write_rate=None, downtime=None, gcache=None),
                                   **flags})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("catbench.cli.predict.read_runs", lambda paths, skipped=None: (read or (lambda _p: groups()))(paths))
        assert cmd_predict(args) == 0
    return out


QUERY_CLASSES = ("LV1", "HV2", "SHV1")


def queries_section(refused: str | None = None, run: str | None = None, nodes: int = 25) -> dict:
    """A "queries" section as `catbench predict --nodes` writes it, for one target (disk): LV1,
    HV2 and SHV1 on ``nodes`` of 105 chunks at 10^10 Objects, a node past its memory (cold); or
    each class refused with ``refused`` (the model's sentence, after its class's name) and the
    ``run`` that would lift it."""
    def answered(i: int, q: str) -> dict:
        s = 0.004 * 100 ** i        # 4 ms, 0.4 s, 40 s
        return {"seconds": s, "ci_low": 0.8 * s, "ci_high": 1.25 * s, "n": 30 + i, "cache": "cold",
                "bound": ("dispatch", "device sequential", "tail chunk")[i], "tail_chunk_s": s / 10,
                "chunk_s": 0.9 * s, "czar_s": 0.1 * s}
    classes = {q: {"refused": f"{q}: {refused}", **({"run": run} if run else {})} if refused else answered(i, q)
               for i, q in enumerate(QUERY_CLASSES)}
    by_nodes = {str(n): {q: None if refused else 0.004 * 100 ** i * 25 / n for i, q in enumerate(QUERY_CLASSES)}
                for n in (1, 5, nodes, 105)}
    return {"disk": {"nodes": nodes, "objects": 1e10, "chunks": 105, "node_data_bytes": 300 * 2 ** 30,
                     "ram_bytes": 16 * 2 ** 30, "cache": "cold", "classes": classes, "by_nodes": by_nodes}}


def add_queries(prediction: Path, section: dict) -> Path:
    """``prediction`` (a prediction.json) with ``section`` as its "queries"."""
    import json
    doc = json.loads(prediction.read_text())
    prediction.write_text(json.dumps({**doc, "queries": section}))
    return prediction
