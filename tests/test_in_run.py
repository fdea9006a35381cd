"""Stage predict: the run's own loads as a ladder's smallest rung, its larger rungs' configs,
the refusals before any work, and the stage end to end with the real Snakemake and server."""

import copy
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from catbench.cli.common import read_config
from catbench.core.infra.config import ConfigError, validate
from catbench.core.infra.targets import parse_size
from catbench.predict.spec import InRun, rung_config

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = REPO / ".venv" / "bin"
ENV = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}"}
DEFAULT = read_config(str(REPO / "config" / "config.yaml"))


def test_the_default_run_ladders_its_own_loads_at_twice_its_rows_on_its_first_target():
    own = InRun.of(DEFAULT)
    assert (own.rows, own.factors, own.targets, own.repetitions) == (148_000, (2,), ("disk",), 1)
    assert own.rung_runs() == ["default-rung2"]
    rung = rung_config(DEFAULT, 2)
    validate(rung)    # a config the workflow takes
    assert rung["run"] == "default-rung2" and rung["stages"] == ["load_index"]
    assert list(rung["targets"]) == ["disk"] and rung["index"]["source"] == "generate"
    assert rung["catalog"]["patch"]["objects"] == 2 * DEFAULT["catalog"]["patch"]["objects"]
    assert rung["partition"]["index_files"] == 2 * DEFAULT["partition"]["index_files"]
    assert rung["load"]["repetitions"] == 1 and rung["load"]["strategies"] == DEFAULT["load"]["strategies"]
    # every memory scaled by the rows: the pool, the redo log (the server's), the sort memory
    settings = rung["load"]["settings"]
    assert parse_size(settings["innodb_buffer_pool_size"]) == 2 * parse_size("10M")
    assert parse_size(settings["innodb_log_file_size"]) == 2 * parse_size("256M")
    assert parse_size(rung["load"]["sort_memory"].removesuffix("iB")) == 2 * parse_size("1G")
    # the answer's cache: the run's own a row, at 10^10 rows
    assert InRun.of(DEFAULT).pool == round(10 * 2**20 * 10**10 / 148_000)
    # a run whose loads adapt their repetitions still gives its rungs the number asked, no pilot
    adaptive = copy.deepcopy(DEFAULT)
    adaptive["load"]["max_repetitions"] = 6
    assert rung_config(adaptive, 2)["load"]["max_repetitions"] is None


def _with(**change) -> dict:
    cfg = copy.deepcopy(DEFAULT)
    for dotted, value in change.items():
        *path, last = dotted.split("__")
        node = cfg
        for key in path:
            node = node[key]
        node[last] = value
    return cfg


@pytest.mark.parametrize("change, key", [
    ({"load__settings": {"innodb_buffer_pool_size": "6M"}}, "load.settings.innodb_buffer_pool_size"),
    ({"stages": ["fio", "queries", "predict"]}, "stages"),
    ({"predict__in_run__targets": ["nvme"]}, "predict.in_run.targets"),
    ({"predict__target_rows": 296_000}, "predict.target_rows"),
    ({"index__source": "file"}, "stages"),
])
def test_a_run_whose_loads_cannot_be_the_smallest_rung_is_refused_naming_the_key(change, key):
    with pytest.raises(ConfigError, match=f"config key '{key}'"):
        InRun.of(_with(**change))


def test_the_rungs_load_the_b_tree_engines_alone():
    """MyRocks' ladder keeps its LSM in rungs apart (predict/spec.py _split_lsm): the run's own
    ladder leaves it out, and a run of MyRocks alone is refused before any work."""
    both = _with(load__engines=["innodb", "rocksdb"],
                 load__settings={"innodb_buffer_pool_size": "10M", "rocksdb_block_cache_size": "20M"})
    assert rung_config(both, 2)["load"]["engines"] == ["innodb"]
    assert InRun.of(both).pool == InRun.of(DEFAULT).pool      # the cache of the engine laddered
    with pytest.raises(ConfigError, match="config key 'load.engines'"):
        InRun.of(_with(load__engines=["rocksdb"]))


def test_engines_with_caches_of_different_sizes_need_the_cache_a_row():
    cfg = _with(load__engines=["innodb", "myisam"],
                load__settings={"innodb_buffer_pool_size": "10M", "key_buffer_size": "20M"})
    with pytest.raises(ConfigError, match="predict.pool_per_row_bytes"):
        InRun.of(cfg)
    assert InRun.of(_with(**{"predict__pool_per_row_bytes": 64})).pool is None   # predict's own per engine


@pytest.mark.server
def test_the_predict_stage_runs_its_rung_and_the_report_opens_with_the_answer(tmp_path):
    """A tiny generated index: the run's load, its rung at twice the rows (a Snakemake run of
    its own, started by the stage's job), the prediction, and the report that waits for it."""
    cfg = {**yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text()),
           "stages": ["load_index", "predict"], "index": {"source": "generate"},
           "targets": {"disk": {"path": str(tmp_path / "t")}},
           "predict": {"target_rows": 10**7, "bootstrap": 20}}   # the interval's resamples: few, it is checked elsewhere
    cfg["load"] = {**cfg["load"], "settings": {"innodb_buffer_pool_size": "10M"}}
    cfgfile = tmp_path / "c.yaml"
    cfgfile.write_text(yaml.safe_dump(cfg))
    wd = tmp_path / "wd"
    r = subprocess.run([str(VENV_BIN / "snakemake"), "-s", str(REPO / "Snakefile"), "-d", str(wd),
                        "--configfile", str(cfgfile), "--cores", "2"],
                       capture_output=True, text=True, env=ENV, timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    run, rung = wd / "results" / "tiny", wd / "results" / "tiny-rung2"
    marker = json.loads((run / "predict" / "rung2.json").read_text())
    assert marker["results"] == "results/tiny-rung2"
    written = yaml.safe_load((run / "predict" / "rung2.yaml").read_text())
    assert written["catalog"]["patch"]["objects"] == 600 and written["load"]["repetitions"] == 1
    rows = [json.loads(p.read_text())["rows"] for p in
            (run / "load" / "disk" / "bigint" / "innodb" / "one-file-at-a-time" / "summary.json",
             rung / "load" / "disk" / "bigint" / "innodb" / "one-file-at-a-time" / "summary.json")]
    assert rows[1] == 2 * rows[0]
    doc = json.loads((run / "predict" / "prediction.json").read_text())
    assert doc["rows"] == 10**7 and [p["key"]["target"] for p in doc["predictions"]] == ["disk"]
    assert "restarts" not in doc
    page = (run / "report" / "index.html").read_text()
    assert "At your scale: 10,000,000 rows" in page and "No prediction at your scale" not in page


def test_predict_answers_for_the_targets_asked_alone(tmp_path):
    """`catbench predict --targets`: the predict stage's rungs load on some of the run's targets;
    the others' loads (one rung each) are left out, not refused one by one."""
    from support.predict import write_prediction
    run = tmp_path / "run"
    doc = json.loads(write_prediction(run, targets=["ssd"]).read_text())
    assert {p["key"]["target"] for p in doc["predictions"]} == {"ssd"}
    doc = json.loads(write_prediction(run, targets=["disk"], loads_only=True).read_text())
    assert {p["key"]["target"] for p in doc["predictions"]} == {"disk"} and "restarts" not in doc
