"""The insert working set (prepare/working_set.py) on inputs with a known answer."""

import csv
import json

import numpy as np
import pytest
from catbench.core.infra.config import validate
from catbench.prepare.rowtext import IndexText
from catbench.prepare.working_set import estimate, open_leaves, rows_per_leaf
from catbench.report.tables import make_tables
from catbench.prepare.spec import PoolSetup, PrepareSpec
from support.runs import make_run
from support.runs import REPORT


def test_sorted_keys_keep_about_one_leaf_open():
    keys = np.arange(1, 1_000_001, dtype=np.int64)
    window = keys[400_000:500_000]
    assert open_leaves(window, keys, len(keys), 200) <= 2


def test_uniformly_random_keys_open_about_a_leaf_per_row():
    rng = np.random.default_rng(3)
    keys = rng.permutation(np.arange(1, 2_000_001, dtype=np.int64))
    ref = np.sort(keys)
    window = keys[-1000:]                  # 1,000 rows over 10,000 leaves
    got = open_leaves(window, ref, len(keys), 200)
    assert 900 <= got <= 1000              # ~ the window: 1000 (1 - 1000/20000) on average
    # a window far larger than the table: every leaf open, none filled
    assert open_leaves(keys[:1_000_000], ref, len(keys), 100_000) == 20


def test_interleaved_keys_keep_one_leaf_per_insertion_point_open():
    n, copies = 300, 2000                  # local * 2^20 + copy, copy after copy
    keys = (np.arange(1, n + 1)[None, :] * (1 << 20) + np.arange(copies)[:, None]).ravel()
    ref = np.sort(keys)
    got = open_leaves(keys[len(keys) // 2:len(keys) // 2 + 100 * n], ref, len(keys), 400)
    assert n <= got <= 2 * n


def _write_input(folder, keys, files=4):
    folder.mkdir(parents=True)
    text, manifest = IndexText(len(keys)), {}
    b = [len(keys) * k // files for k in range(files + 1)]
    for k in range(files):
        part = keys[b[k]:b[k + 1]]
        num, _ = text.lines(part, np.zeros(len(part), np.int32), np.zeros(len(part), np.int32))
        (folder / f"part-{k:05d}.tsv").write_bytes(bytes(num))
        manifest[f"part-{k:05d}.tsv"] = {"rows": len(part), "bytes": len(bytes(num))}
    (folder / "manifest.json").write_text(json.dumps({"rows": len(keys), "files": manifest}))


@pytest.mark.parametrize("pool_size, expect", [("6M", True), ("1G", False)])
def test_estimate_of_a_random_input_against_small_and_large_pools(tmp_path, pool_size, expect):
    keys = np.random.default_rng(1).permutation(np.arange(1, 300_001, dtype=np.int64))
    _write_input(tmp_path / "input", keys)
    cfg = validate({"run": "t", "seed": 1, "catalog": {"patch": {}, "sky": {}},
                    "load": {"settings": {"innodb_buffer_pool_size": pool_size}}})
    doc = estimate(tmp_path / "input", PoolSetup.of(cfg))
    assert doc["rows"] == 300_000 and doc["pool_pages"] == (6 << 20 if expect else 1 << 30) // 16384
    char28 = doc["variants"]["char28"]
    assert char28["rows_per_leaf"] == rows_per_leaf("char28", 16384, ordered=False)
    assert char28["collapse_expected"] is expect
    if expect:   # every leaf of the table is open: the table over the pool
        assert char28["working_set_pages"] == pytest.approx(char28["leaves"], rel=0.02)


def test_estimate_of_a_sorted_input_expects_no_collapse(tmp_path):
    _write_input(tmp_path / "input", np.arange(1, 300_001, dtype=np.int64))
    doc = estimate(tmp_path / "input", PoolSetup(6 << 20, 16384))
    for v in doc["variants"].values():
        assert v["working_set_pages"] <= 2 and not v["collapse_expected"]
        assert v["table_over_pool"] > 1.5   # the table outgrows the pool all the same


def test_the_collapse_table_carries_the_prediction_and_the_layout(tmp_path):
    run = make_run(tmp_path)
    (run / "index").mkdir()
    (run / "index" / "working_set.json").write_text(json.dumps({
        "id_layout": "spatial", "order": "chunk", "pool_pages": 384, "variants": {
            "char28": {"rows_per_leaf": 197, "window_rows": 1000, "leaves": 900, "table_over_pool": 2.3,
                     "working_set_pages": 40, "working_set_over_pool": 0.104, "collapse_expected": False}}}))
    make_tables(run, report=REPORT)
    with open(run / "tables" / "load_collapse.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    char28 = [r for r in rows if r["variant"] == "char28"]
    assert char28 and all(r["id_layout"] == "spatial" and r["arrival_order"] == "chunk"
                        and float(r["predicted_working_set_over_pool"]) == 0.104
                        and r["collapse_expected"] == "false" for r in char28)


def test_the_finding_says_what_was_predicted_and_names_a_miss():
    from catbench.report.findings.loads import _prediction
    row = {"engine": "innodb", "id_layout": "random", "arrival_order": "generation",
           "predicted_working_set_over_pool": 3.9}
    said, miss = _prediction(row, collapsed=True)
    assert "random ids" in said and "collapse expected" in said and not miss and "miss" not in said
    said, miss = _prediction({**row, "predicted_working_set_over_pool": 0.2}, collapsed=True)
    assert "collapse not expected" in said and miss and "a miss: it collapsed" in said
    said, miss = _prediction(row, collapsed=False)
    assert miss and "a miss: it did not collapse" in said
    assert _prediction({**row, "engine": "rocksdb"}, True) == ("", False)
    assert _prediction({"engine": "innodb"}, False) == ("", False)


def test_the_collapse_finding_counts_the_misses():
    from catbench.report.findings import collapse
    base = {"target": "disk", "variant": "bigint", "engine": "innodb", "strategy": "one-file-at-a-time",
            "n": 2, "half_table_over_pool": 2.25, "initial_rows_per_s": 1000, "final_rows_per_s": 100,
            "final_over_initial": 0.1, "n_halved": 2, "id_layout": "random", "arrival_order": "generation"}
    rows = [{**base, "predicted_working_set_over_pool": 0.81},
            {**base, "variant": "char28", "predicted_working_set_over_pool": 3.0}]
    out = collapse(rows, [])
    assert sum("a miss: it collapsed" in s for s in out) == 1
    assert out[-1].startswith("**1 of 2 ") and "missed" in out[-1]       # the count of misses and of predictions


@pytest.mark.parametrize("preset", ["config.yaml", "index-study.yaml", "index-bench.yaml"])
def test_presets_validate_with_each_id_layout_up_to_1e10_rows(preset):
    import yaml
    from pathlib import Path
    from catbench.prepare.ids import IdLayout
    given = yaml.safe_load((Path(__file__).parent.parent / "config" / preset).read_text())
    assert validate(given)["catalog"]["id_layout"] == "random"
    for layout in ("random", "spatial", "interleaved"):
        cfg = validate({**given, "catalog": {**given["catalog"], "id_layout": layout}})
        IdLayout(PrepareSpec.of(cfg))
        if preset != "config.yaml":   # the preset's knob at its largest documented value
            big = {**given["catalog"], "id_layout": layout, "patch": {**given["catalog"]["patch"], "objects": 10**6}}
            assert IdLayout(PrepareSpec.of(validate({**given, "catalog": big}))).n > 10**10
