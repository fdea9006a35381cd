"""A run predicted from a ladder in its report: ``catbench predict --out
results/<run>/predict/prediction.json`` over synthetic rungs (support/predict.py), then the report's
Prediction section (how far to trust it, a table per target, a refusal's reason, the
validation) and its plot; a run without the file shows neither."""

import json
import re

import pytest
from catbench.report.html import make_report
from catbench.report.inputs import MetricsError
from catbench.report.tables import make_tables
from support.predict import add_queries, queries_section, write_prediction
from support.runs import documented_columns, make_run
from support.runs import REPORT
from support.text import line_with

PNG = b"\x89PNG\r\n\x1a\n"


def _section(text: str, start: str, end: str) -> str:
    return text[text.index(start):text.index(end, text.index(start))]


@pytest.mark.slow
def test_the_report_shows_the_prediction_and_its_validation(tmp_path, capsys):
    run = make_run(tmp_path, with_optional=False)
    assert write_prediction(run).is_file()
    capsys.readouterr()
    make_tables(run, report=REPORT)
    md = _section((run / "tables" / "summary.md").read_text(), "## Prediction at 100,000,000 rows", "## Checks")
    assert "**How far to trust it**" in md and "2 loads within [0.67, 1.5]" in md
    assert re.search(r"\| char28/innodb/one-file-at-a-time/random \| [\d,]+ s \(\d+\.\d h\) \| \[[\d,]+, [\d,]+\] s \| "
                     r"[\d.]+ GB \| I/O bound \(random page reads\) \|", md)
    assert re.search(r"\| char28/myisam/one-file-at-a-time/random \| [\d,]+ rows by the 20,000 s limit \| \[[\d,]+, [\d,]+\] rows \|",
                     md)
    assert line_with(md, "| char28/innodb/sorted/random |", "no prediction", "1 rung(s) (1,000,000 rows)", "needs 2")
    assert re.search(r"\| disk/char28/innodb/one-file-at-a-time/random \| 10,000,000 \| 1,000,000, 3,000,000 \| "
                     r"3 \| seconds \| [\d,]+ \| [\d,]+ \| [\d.]+ \| yes \|", md)
    assert "| disk/char28/myisam/one-file-at-a-time/random | 10,000,000 | 1,000,000, 3,000,000 | 3 | rows |" in md

    index = make_report(run, report=REPORT)
    html = index.read_text()
    assert html.index('id="answer"') < html.index('data-name="at_scale"') < html.index('id="findings"') \
        < html.index("Prediction at 100,000,000 rows") < html.index("Checks") < html.index('id="plots"')
    assert "no prediction: 1 rung(s)" in html and "How far to trust it" in html
    assert 'data-name="prediction"' in html and "How far does the scale model hold" in html
    for name in ("prediction", "at_scale"):
        assert (index.parent / f"{name}.png").read_bytes()[:8] == PNG
    assert "## Prediction at" in (index.parent / "summary.md").read_text()   # made anew: the tables' predate it


@pytest.mark.slow
def test_the_answer_comes_first_with_every_method_and_the_protocols_total(tmp_path):
    run = make_run(tmp_path, with_optional=False)
    write_prediction(run)
    make_tables(run, report=REPORT)
    md = (run / "tables" / "summary.md").read_text()
    ans = _section(md, "## At your scale: 100,000,000 rows", "## Findings")
    assert md.index("## At your scale") < md.index("## Findings")
    # the fastest first, then the one-file-at-a-time protocol's total past its time limit
    assert re.search(r"disk: \*\*At 100,000,000 rows\*\*.*: fastest `char28/innodb/one-file-at-a-time/random` "
                     r"\*\*[\d.,]+ (h|min|days)\*\* \[[\d.,]+ (h|min|days) – [\d.,]+ (h|min|days)\]", ans)
    row = re.search(r"\| char28/myisam/one-file-at-a-time/random \| ([\d.,]+ (?:h|days)) \| .* \| "
                    r"its 20,000 s limit stops it at [\d,]+ rows", ans)
    assert row, ans
    assert "| char28/innodb/sorted/random | no answer |" in ans and "refused: 1 rung(s)" in ans
    curve = json.loads((run / "predict" / "prediction.json").read_text())["curve"]
    finishes = next(c for c in curve if c["key"]["engine"] == "innodb" and c["key"]["target"] == "disk")
    secs = [p["seconds"] for p in finishes["predicted"]]
    assert [p["rows"] for p in finishes["predicted"]] == [1e7, 31622777, 1e8, 316227766, 1e9, 3162277660, 1e10,
                                                         31622776602, 1e11]
    assert secs == sorted(secs) and all(p["seconds_ci_low"] <= p["seconds"] <= p["seconds_ci_high"]
                                        for p in finishes["predicted"])
    assert {m["run"] for m in finishes["measured"]} == {"r1000000", "r3000000", "r10000000"}


@pytest.mark.slow
def test_no_prediction_one_sentence_and_no_placeholder_image(tmp_path):
    run = make_run(tmp_path, with_optional=False)
    index = make_report(run, report=REPORT)
    html = index.read_text()
    assert "Prediction at" not in html and 'data-name="prediction"' not in html
    assert "prediction: no data" not in html and "at scale: no data" not in html
    assert html.index("No prediction") < html.index('id="findings"')
    assert "make ladder" in html and "predict.target_rows" in html      # how to get one
    for name in ("prediction", "at_scale"):
        assert not (index.parent / f"{name}.png").exists()
    (index.parent / "at_scale.png").write_bytes(PNG)    # one left by an earlier report is removed
    make_report(run, report=REPORT)
    assert not (index.parent / "at_scale.png").exists()


def test_a_malformed_prediction_file_is_named(tmp_path):
    run = make_run(tmp_path, with_optional=False)
    bad = run / "predict" / "prediction.json"
    bad.parent.mkdir()
    bad.write_text('{"predictions": [{"seconds": 1}]}')
    with pytest.raises(MetricsError, match=re.escape(str(bad))):
        make_report(run, report=REPORT)


def test_a_stopped_load_is_noted_with_its_table_over_the_engines_cache():
    from catbench.report.findings.checks import _notes
    from catbench.report.summary import Tables
    row = {"target": "disk", "variant": "char28", "engine": "rocksdb", "strategy": "one-file-at-a-time",
           "stopped": True, "time_limit_s": 24.0, "rows": 2118085, "table_over_pool": 0.46}
    (note,) = [n for n in _notes(Tables(loads=[row])) if "STOPPED" in n]
    assert "0.46x rocksdb_block_cache_size" in note and "–" not in note


def test_the_lead_quotes_the_protocol_on_innodb_with_its_engine_and_ids():
    from catbench.report.at_scale import _lead

    def load(engine, strategy, seconds, layout="random"):
        return {"target": "disk", "variant": "char28", "engine": engine, "strategy": strategy,
                "id_layout": layout, "seconds": seconds, "seconds_ci_low": seconds * 0.9,
                "seconds_ci_high": seconds * 1.1, "regime": "cached"}
    rows = [load("innodb", "sorted", 3600.0), load("rocksdb", "one-file-at-a-time", 7200.0),
            load("innodb", "one-file-at-a-time", 36000.0)]      # sorted by time, as answer() does
    lead = _lead(rows, 1e10, 128 * 2**30)
    assert line_with(lead, "one-file-at-a-time", "InnoDB", "random ids", "**10.0 h**", "10×"), lead
    assert "MyRocks" not in lead
    # without an InnoDB one, the fastest of the others, named by its engine and its ids
    lead = _lead([load("innodb", "sorted", 3600.0), load("rocksdb", "one-file-at-a-time", 7200.0, "spatial")],
                 1e10, None)
    assert line_with(lead, "one-file-at-a-time", "MyRocks", "spatial ids", "**2.0 h**", "2×"), lead


def test_a_restart_prediction_answers_at_the_nodes_size_without_the_loads_how_to():
    from catbench.report.at_scale import answer, restart_rows
    from catbench.report.summary import Tables
    doc = {"at": {"data_bytes": 600 * 2**30, "pool_bytes": 128 * 2**30, "redo_log_bytes": 8 * 2**30},
           "predictions": [
               {"key": {"target": "disk", "kind": "crash-during-load"}, "total_s": 90.0, "total_ci_low": 80.0,
                "total_ci_high": 100.0, "confidence": 0.95, "dominant": "redo_apply", "regime": ["checkpoint age"],
                "phases": [{"phase": "redo_apply", "seconds": 50.0, "bound": "device (random pages)",
                            "driver": "pages", "quantity_bytes": 1e9, "quantity_in_bytes": True, "past_rungs": 80.0}]},
               {"key": {"target": "disk", "kind": "node-restart-sst"}, "refused": "no rung ran an SST"}]}
    rows = restart_rows(doc)
    blocks = answer(Tables(restart_at_scale=rows), REPORT)
    text = json.dumps(blocks)
    assert "No prediction at your scale" not in text          # a restart study: no loads to predict
    (table,) = [b for b in blocks if b[0] == "table"]
    assert line_with(table[1], "600.0 GiB of data", "128.0 GiB buffer pool", "8.0 GiB redo log")
    assert table[3][0][:3] == ["crash-during-load", "90.0 s", "80.0 s – 100.0 s"]
    assert "80.0× the largest rung's" in table[3][0][3] and table[3][1][4] == "refused: no rung ran an SST"
    loads = answer(Tables(loads=[{"target": "disk"}], restart_at_scale=rows), REPORT)
    assert "No prediction at your scale" in json.dumps(loads)  # a run that loaded is told how to predict it


def test_a_far_checks_measured_restart_sits_beside_the_prediction_and_a_miss_is_said():
    """After `catbench predict --measured`, restart_at_scale carries the measured total, the ratio
    and the phase that took longest; a dominant phase other than the predicted one is a miss."""
    from catbench.report.at_scale import answer, restart_rows
    from catbench.report.summary import Tables
    key = {"target": "disk", "kind": "node-restart-ist"}
    doc = {"at": {"data_bytes": 2**30, "pool_bytes": 2**28, "redo_log_bytes": 2**28},
           "predictions": [{"key": key, "total_s": 4.5, "total_ci_low": 3.4, "total_ci_high": 30.9,
                            "confidence": 0.95, "dominant": "start_to_transfer", "phases": []},
                           {"key": {"target": "disk", "kind": "clean/dump-on"}, "total_s": 1.9, "total_ci_low": 1.2,
                            "total_ci_high": 2.8, "confidence": 0.95, "dominant": "buffer_pool_load", "phases": []}],
           "measured": [{"key": key, "total_measured_s": 17.1, "total_ratio": 4.5 / 17.1, "total_inside": True,
                         "n": 2, "measured_dominant": "state_transfer", "measured_dominant_measured_s": 12.5,
                         "measured_dominant_ratio": 0.0, "dominant_agrees": False}]}
    rows = restart_rows(doc)
    assert rows[0]["total_measured_s"] == 17.1 and rows[0]["n_measured"] == 2
    assert rows[0]["measured_dominant"] == "state_transfer" and rows[1]["total_measured_s"] is None
    (table,) = [b for b in answer(Tables(restart_at_scale=rows), REPORT) if b[0] == "table"]
    assert table[2][-1] == "measured (predicted ÷ measured)"
    ist, clean = table[3]
    assert ist[-1].startswith("17.1 s (n = 2): 0.26, inside") and "state_transfer 12.5 s, not the predicted" in ist[-1]
    assert ist[-1].endswith("MISS") and clean[-1] == "–"


@pytest.mark.slow
def test_the_answer_gains_each_query_class_at_the_users_nodes_with_its_csv_and_plot(tmp_path):
    """Without "queries" the answer is the loads' alone (and one sentence naming what would give
    the queries'); with them, a table of the classes, its CSV and the plot against the nodes."""
    run = make_run(tmp_path, with_optional=False)
    pp = write_prediction(run)
    index = make_report(run, report=REPORT)
    before = index.read_text()
    answer = _section(before, 'id="answer"', 'id="findings"')
    assert "char28/innodb/one-file-at-a-time/random" in answer and "Queries on" not in answer
    assert answer.count("No query answer at your scale") == 1 and "stage <code>queries</code>" in answer
    assert not (index.parent / "queries_at_scale.png").exists()
    assert not (index.parent / "tables" / "queries_at_scale.csv").exists()

    add_queries(pp, queries_section())
    index = make_report(run, report=REPORT)
    html = index.read_text()
    answer = _section(html, 'id="answer"', 'id="findings"')
    assert "No query answer" not in answer
    # the cluster, a node's data against its memory, and the fastest and slowest class with their times
    assert line_with(answer, "disk · mysql: <strong>Queries on 25 nodes", "10,000,000,000 Objects", "105 chunks",
                     "300.0 GiB", "16.0 GiB", "cold", "LV1 <strong>4 ms</strong>", "SHV1 <strong>40 s</strong>",
                     "tail chunk")
    assert "<td>HV2</td><td>400 ms</td><td>320 ms – 500 ms</td><td>31</td><td>cold</td><td>device sequential</td>" \
           "<td>40 ms</td>" in answer, answer[-6000:-4000]
    # the loads' answer is still there, above it; the plot in the answer too, after the loads'
    assert answer.index("char28/innodb/one-file-at-a-time/random") < answer.index("Queries on")
    assert answer.index('data-name="at_scale"') < answer.index('data-name="queries_at_scale"')
    assert (index.parent / "queries_at_scale.png").read_bytes()[:8] == PNG
    csv = (index.parent / "tables" / "queries_at_scale.csv").read_text().splitlines()
    assert csv[0].split(",")[:14] == ["target", "engine", "query", "nodes", "workers", "objects", "chunks",
                                      "node_data_bytes", "ram_bytes", "cache", "seconds", "ci_low_s", "ci_high_s",
                                      "n_fitted"]
    assert len(csv) == 4 and csv[2].startswith("disk,mysql,HV2,25,,")
    by_nodes = (index.parent / "tables" / "queries_by_nodes.csv").read_text().splitlines()
    assert by_nodes[0] == "target,query,nodes,seconds,asked" and len(by_nodes) == 1 + 4 * 3
    doc = documented_columns()      # every column of both files in columns.md, in order
    assert doc["queries_at_scale"] == csv[0].split(",") and doc["queries_by_nodes"] == by_nodes[0].split(",")
    make_tables(run, report=REPORT)
    md = (run / "tables" / "summary.md").read_text()
    assert "| HV2 | 400 ms | 320 ms – 500 ms | 31 | cold | device sequential | 40 ms |" in md


def test_a_refused_query_answer_is_one_sentence_naming_the_run_that_gives_it():
    from catbench.report.at_scale import answer
    from catbench.report.findings.queries_at_scale import by_nodes_rows, query_rows
    from catbench.report.summary import Tables
    from pathlib import Path
    why = "a node holds 300.0 GiB past its 16.0 GiB of memory, and no rung measured a cold query"
    run = "run `make query-ladder` (config/query-ladder.yaml)"
    doc = queries_section(refused=why, run=run)
    blocks = answer(Tables(queries_at_scale=query_rows(Path("p.json"), doc),
                           queries_by_nodes=by_nodes_rows(doc)), REPORT)
    said = [b[1] for b in blocks if b[0] == "p" and "Queries on" in b[1]]
    [said] = said                                                        # one sentence: why, and the run
    assert line_with(said, "disk · mysql: **Queries on 25 nodes", "10,000,000,000 Objects", "105 chunks", "300.0 GiB",
                     "16.0 GiB", "cold", why, run)
    assert not [b for b in blocks if b[0] == "table"] and by_nodes_rows(doc) == []
    # one class refused among answered ones: its row says why, once, and the run after the table
    doc = queries_section()
    doc["disk"]["classes"]["SHV1"] = {"refused": "SHV1: 1 chunk queries measured cold in the rungs; 2 or more are "
                                                 "needed (queries.repetitions, queries.cold)", "run": run}
    blocks = answer(Tables(queries_at_scale=query_rows(Path("p.json"), doc)), REPORT)
    (table,) = [b for b in blocks if b[0] == "table"]
    row = table[3][2]
    assert row[:5] == ["SHV1", "no answer", "–", "–", "–"] and row[6] == "–"
    assert row[5].startswith("refused") and "1 chunk queries" in row[5] and "(queries.repetitions, queries.cold)" in row[5]
    assert ("p", f"To answer the refused classes, {run}.") in blocks
    # a cluster the model refuses whole: its sentence, no table
    doc = {"disk": {"nodes": 200, "objects": 1e10, "refused": "--nodes 200 for 105 chunks: each node must hold a chunk "
                                                              "(--chunks)"}}
    blocks = answer(Tables(queries_at_scale=query_rows(Path("p.json"), doc)), REPORT)
    [said] = [b[1] for b in blocks if b[0] == "p" and "Queries on" in b[1]]
    assert not [b for b in blocks if b[0] == "table"]
    assert line_with(said, "disk · mysql: **Queries on 200 nodes", "10,000,000,000 Objects", "--nodes 200 for 105 chunks",
                     "(--chunks)")


def test_a_malformed_query_answer_is_named():
    from catbench.report.findings.queries_at_scale import query_rows
    from pathlib import Path
    with pytest.raises(MetricsError, match=r"p.json: queries.disk is not an object"):
        query_rows(Path("p.json"), {"disk": {"classes": ["HV2"]}})


def test_the_engines_answers_stand_side_by_side_and_each_in_its_own_table():
    """A prediction with DuckDB and LSDB beside Qserv's plan: one table of each class per target and
    engine, then each engine's own lead (its nodes, workers, layout against memory) and table."""
    from catbench.report.at_scale import answer
    from catbench.report.findings.queries_at_scale import query_rows
    from catbench.report.summary import Tables
    from pathlib import Path
    doc = queries_section()
    lsdb = {"engine": "lsdb", "nodes": 25, "workers": 50, "objects": 1e10, "chunks": 105,
            "node_data_bytes": 2 ** 30, "ram_bytes": 16 * 2 ** 30, "cache": "warm",
            "classes": {"LV1": {"seconds": 0.5, "ci_low": 0.4, "ci_high": 0.7, "n": 9, "cache": "warm",
                                "bound": "fixed cost (index lookup, task start)"},
                        "HV2": {"refused": "HV2: 1 whole queries measured warm in the rungs; 2 or more are needed"}}}
    doc["disk"]["engines"] = {"lsdb": lsdb}
    doc["parquet"] = {"nodes": 25, "objects": 1e10, "engines": {"duckdb": {**lsdb, "engine": "duckdb", "nodes": 1,
                                                                           "workers": None, "cache": "cold",
                                                                           "node_data_bytes": 32 * 2 ** 30}}}
    rows = query_rows(Path("p.json"), doc)
    assert [(r["target"], r["engine"]) for r in rows if r["query"] == "LV1"] == \
        [("disk", "mysql"), ("disk", "lsdb"), ("parquet", "duckdb")]
    blocks = answer(Tables(queries_at_scale=rows), REPORT)
    tables = [b for b in blocks if b[0] == "table" and "Each query class at your scale" in b[1]]
    [(_, _, head, body)] = tables
    assert head == ["class", "disk · mysql", "disk · lsdb", "parquet · duckdb"]
    assert body[0] == ["LV1", "4 ms [3.2 ms, 5 ms]", "500 ms [400 ms, 700 ms]", "500 ms [400 ms, 700 ms]"]
    assert body[1][2] == "–"                                     # a refused class: no figure
    leads = [b[1] for b in blocks if b[0] == "p" and "Queries on" in b[1]]
    assert line_with(leads[1], "disk · lsdb: **Queries on 25 nodes, 50 Dask workers", "1.0 GiB of its layout",
                     "within its 16.0 GiB of memory: warm")
    assert line_with(leads[2], "parquet · duckdb: **Queries on 1 node,", "past its 16.0 GiB of memory: cold")
    own = [b for b in blocks if b[0] == "table" and b[1].startswith("disk · lsdb")]
    assert own and "whole queries" in own[0][1] and own[0][3][1][5].startswith("refused")
    assert own[0][2][-1] == "bound" and len(own[0][3][0]) == 6         # no chunk query: no largest chunk
