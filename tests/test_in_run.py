"""Stage predict: the run's own loads as a ladder's smallest rung, its larger rungs' configs,
the refusals before any work, and the stage end to end with the real Snakemake and server."""

import copy
import json
import os
from pathlib import Path

import pytest
import yaml
from catbench.cli.common import read_config
from catbench.core.infra.config import ConfigError, validate
from catbench.core.infra.targets import parse_size
from catbench.predict.spec import InRun, rung_config
from support import preloaded

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
    r = preloaded.run([str(VENV_BIN / "snakemake"), "-s", str(REPO / "Snakefile"), "-d", str(wd),
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


def test_a_run_with_queries_answers_them_at_predict_queries_in_the_predict_stage():
    """The predict rule's query flags (predict.queries; objects null = predict.target_rows), as
    `catbench predict` parses them; none without stage queries; the rule waits for the queries."""
    import argparse
    import shlex
    from catbench.cli.predict import add_subcommands
    from catbench.predict.spec import query_args
    assert query_args(DEFAULT) == "--nodes 25 --objects 10000000000 --chunks 8983 --node-ram 16G"
    mine = _with(predict__queries={"nodes": 150, "objects": 1.7e9, "chunks": 9000, "sources_per_object": 20.5,
                                   "object_bytes": 1073, "ram": "16G", "workers": 4})
    validate(mine)
    sub = argparse.ArgumentParser().add_subparsers()
    add_subcommands(sub)
    a = sub.choices["predict"].parse_args(["--config", "c", "--results", "r", *shlex.split(query_args(mine))])
    assert (a.nodes, a.objects, a.chunks, a.sources_per_object, a.object_bytes, a.node_ram, a.ram, a.workers) == \
        (150, 1.7e9, 9000, 20.5, 1073, 16 * 2**30, None, 4)
    assert query_args(_with(stages=["fio", "load_index", "predict"])) == ""
    rule = (REPO / "workflow" / "rules" / "predict.smk").read_text()
    predict_loads = " ".join(rule[rule.index("rule predict_loads:"):rule.index("rule predict:")].split())
    assert 'queries=QUERY_RUNS if "queries" in STAGES' in predict_loads      # every engine's results
    assert "query_args=RUN.query_args," in predict_loads
    from catbench.cli.workflow.dag import Dag
    dag = object.__new__(Dag)       # the rules' value for this config: predict/spec.py's, the one maker
    dag.config = mine
    assert dag.query_args == query_args(mine)
    (shell,) = [line for line in predict_loads.splitlines() if "{params.query_args}" in line]
    assert "--no-time-limit" in shell    # one command line: the loads' flags and the queries'


def _query_rung(caches=("warm",)):
    """12 chunks of 1,000 to 2,000 Objects, 100 bytes a row; HV2 2 ms + 10 ns a byte (cold 5×), LV1 2 ms."""
    from catbench.predict.queries.runs import ChunkObs, QueryRung
    rows = [1000 * (1 + c / 12) for c in range(12)]
    r = QueryRung("run", "disk", pool_bytes=64 * 2**20, connections=2)
    r.chunk_rows = {"Object": dict(enumerate(rows)), "Source": {c: 3 * n for c, n in enumerate(rows)}}
    r.chunk_bytes = {t: {c: 100 * n for c, n in v.items()} for t, v in r.chunk_rows.items()}
    for cache in caches:
        for rep in (1, 2):
            for c, n in enumerate(rows):
                b = 100 * n
                r.obs.append(ChunkObs("run", "HV2", cache, rep, c, (0.002 + 1e-8 * b * (1 if cache == "warm" else 5))
                                      * (1 + 0.01 * rep), n, b))
                r.obs.append(ChunkObs("run", "LV1", cache, rep, c, 0.002 * (1 + 0.01 * rep), n, b))
    return r


def _ask(monkeypatch, rungs, cfg, **kw):
    import argparse
    from catbench.cli import predict_node
    monkeypatch.setattr(predict_node, "_rungs", lambda results: ({"disk": rungs}, {}))
    a = argparse.Namespace(**{**dict(results=["results/run"], objects=1.2e6, sources_per_object=None, nodes=5,
                                     chunks=None, ram=None, node_ram=2**40), **kw})
    return predict_node.predict_queries_at(a, None, cfg)["disk"]


def test_the_answer_carries_each_class_at_a_few_node_counts_up_to_one_chunk_a_node(monkeypatch):
    got = _ask(monkeypatch, [_query_rung()], DEFAULT)
    assert got["classes"]["HV2"]["cache"] == "warm" and got["nodes"] == 5
    assert list(got["by_nodes"]) == ["1", "5", "12"]       # 25 and 150 are past the 12 chunks: 12 closes it
    hv2 = [got["by_nodes"][n]["HV2"] for n in ("1", "5", "12")]
    assert hv2[0] > hv2[1] > hv2[2] and got["by_nodes"]["5"]["HV2"] == got["classes"]["HV2"]["seconds"]
    # the asked count past the grid's first entries is kept; a grid below the chunks ends at 150
    assert list(_ask(monkeypatch, [_query_rung()], DEFAULT, nodes=40, chunks=400)["by_nodes"]) == \
        ["1", "5", "25", "40", "150"]


def test_a_node_past_its_memory_without_cold_queries_is_refused_naming_the_run_that_gives_them(monkeypatch):
    warm_only = _with(queries__cold=False)
    got = _ask(monkeypatch, [_query_rung()], warm_only, objects=1e9, node_ram=2**30, nodes=2)
    hv2 = got["classes"]["HV2"]
    assert got["cache"] == "cold" and "refused" in hv2
    # the key and value to set, the run whose config takes it, and the target that runs it
    assert "`queries.cold: true`" in hv2["run"] and "run default" in hv2["run"] and "make query-ladder" in hv2["run"]
    assert set(got["by_nodes"]["2"].values()) == {None}
    # a run that asked for cold repetitions and has none: the query ladder
    assert _ask(monkeypatch, [_query_rung()], DEFAULT, objects=1e9, node_ram=2**30,
                nodes=2)["classes"]["HV2"]["run"].startswith("run `make query-ladder`")
    # with cold repetitions the node is priced, and nothing to run
    priced = _ask(monkeypatch, [_query_rung(("warm", "cold"))], warm_only, objects=1e9, node_ram=2**30, nodes=2)
    assert priced["classes"]["HV2"]["cache"] == "cold" and "run" not in priced["classes"]["HV2"]
