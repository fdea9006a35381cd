"""What `catbench predict` refuses to read, and reads once: a run named twice, a job's
unfinished output, a broken summary, rows that are not a number of rows."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from catbench.predict.runs import read_runs
from support.text import line_with


def _load(run: Path, strategy: str = "one-file-at-a-time", pool: int = 10_000, rows: int = 200) -> Path:
    d = run / "load" / "disk" / "char28" / "innodb" / strategy
    d.mkdir(parents=True)
    (d / "summary.json").write_text(json.dumps({
        "files": 2, "input_bytes": 20 * rows, "time_limit_s": None, "in_file_order": strategy != "sorted",
        "server": {"variables": {"innodb_buffer_pool_size": pool}},
        "repetitions": [{"repetition": 0, "rows": rows, "seconds": 2.0, "table_bytes": 100 * rows}]}))
    pq.write_table(pa.table({"start": [0.0, 1.0], "end": [1.0, 2.0], "cumulative_rows": [rows // 2, rows],
                             "repetition": [0, 0]}), d / "trace.parquet")
    return d


def test_a_run_named_twice_is_read_once_and_unfinished_output_is_not_a_load(tmp_path):
    run = tmp_path / "r1"
    _load(run)
    _load(run, ".sorted.partial-x1y2")          # a killed job's staged output
    groups = read_runs([run, run, tmp_path / "." / "r1"])
    assert [len(v) for v in groups.values()] == [1]
    assert [k[3] for k in groups] == ["one-file-at-a-time"]


@pytest.mark.parametrize("text", ["", "[]", "null", '"x"', "{\"repetitions\": 3}"])
def test_a_broken_summary_names_its_file(tmp_path, text):
    d = _load(tmp_path / "r1")
    (d / "summary.json").write_text(text)
    with pytest.raises(ValueError, match=r"summary.json: not a load summary"):
        read_runs([tmp_path / "r1"])


@pytest.mark.parametrize("rows", ["0", "-5", "nan", "inf", "many", "1e300"])
def test_rows_that_are_not_a_number_of_rows_are_refused_before_any_work(tmp_path, rows):
    _load(tmp_path / "r1")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("run: x\n")
    p = subprocess.run([sys.executable, "-m", "catbench", "predict", "--config", str(cfg), "--results",
                        str(tmp_path / "r1"), "--rows", rows], capture_output=True, text=True)
    assert p.returncode == 2 and "--rows" in p.stderr and "Traceback" not in p.stderr
    p = subprocess.run([sys.executable, "-m", "catbench", "predict", "--config", str(cfg), "--results",
                        str(tmp_path / "r1"), "--min-rungs", "0"], capture_output=True, text=True)
    assert p.returncode == 2 and "--min-rungs" in p.stderr


def test_a_measured_run_of_other_rows_than_the_predicted_is_refused(tmp_path):
    _load(tmp_path / "r1")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("run: x\n")
    p = subprocess.run([sys.executable, "-m", "catbench", "predict", "--config", str(cfg), "--results",
                        str(tmp_path / "r1"), "--measured", str(tmp_path / "r1"), "--rows", "1e6"],
                       capture_output=True, text=True)
    assert p.returncode != 0 and line_with(p.stderr + p.stdout, "200 rows", "1,000,000")   # loaded, predicted
    assert "Traceback" not in p.stderr


def _predict(tmp_path, *argv) -> subprocess.CompletedProcess:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("run: x\n")
    return subprocess.run([sys.executable, "-m", "catbench", "predict", "--config", str(cfg), *map(str, argv)],
                          capture_output=True, text=True)


@pytest.mark.parametrize("pool", ["0", "0.4", "", "1", "999999P", "lots"])
def test_a_pool_no_server_can_have_is_refused(tmp_path, pool):
    _load(tmp_path / "r1")
    p = _predict(tmp_path, "--results", tmp_path / "r1", "--pool", pool)
    assert p.returncode == 2 and "--pool" in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_rungs_of_two_configs_are_not_fitted_together(tmp_path):
    _load(tmp_path / "r1", pool=10_000, rows=200)
    _load(tmp_path / "r2", pool=500_000, rows=400)        # 25x the cache per row
    p = _predict(tmp_path, "--results", tmp_path / "r1", "--results", tmp_path / "r2")
    assert p.returncode == 1 and "are not one ladder" in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_a_measured_run_with_another_cache_is_not_scored(tmp_path):
    _load(tmp_path / "r1", pool=10_000, rows=200)
    _load(tmp_path / "m", pool=1 << 30, rows=200)
    p = _predict(tmp_path, "--results", tmp_path / "r1", "--measured", tmp_path / "m", "--rows", "200",
                 "--pool", "100M")
    assert p.returncode == 1 and line_with(p.stderr, "1.0 GiB cache", "100.0 MiB"), p.stderr   # measured, predicted
    assert "give --pool 1024M" in p.stderr
    _load(tmp_path / "tiny", pool=600_000, rows=200)      # a cache under any --pool: never "--pool 0M"
    p = _predict(tmp_path, "--results", tmp_path / "r1", "--measured", tmp_path / "tiny", "--rows", "200",
                 "--pool", "100M")
    assert p.returncode == 1 and "it cannot be scored" in p.stderr and "--pool 0M" not in p.stderr, p.stderr


@pytest.mark.slow
def test_a_load_that_did_not_run_alone_is_neither_fitted_nor_scored_and_is_named(tmp_path):
    met = {"host": "h", "alone": False, "shared_locks": [], "other_catbench_jobs": ["123 catbench load-index"]}
    (_load(tmp_path / "r1", pool=10_000, rows=200) / "isolation.json").write_text(json.dumps(met))
    (_load(tmp_path / "r2", pool=20_000, rows=400) / "isolation.json").write_text(json.dumps({"alone": True}))
    skipped: list = []
    groups = read_runs([tmp_path / "r1", tmp_path / "r2"], skipped)
    assert [r.run for reps in groups.values() for r in reps] == ["r2"]
    where = str(tmp_path / "r1" / "load" / "disk" / "char28" / "innodb" / "one-file-at-a-time")
    assert skipped == [{"run": "r1", "load": "disk/char28/innodb/one-file-at-a-time",
                        "met": "catbench command(s) 123 catbench load-index", "path": where}]
    out = tmp_path / "p.json"
    p = _predict(tmp_path, "--results", tmp_path / "r1", "--results", tmp_path / "r2", "--measured", tmp_path / "r1",
                 "--rows", "200", "--out", out)
    assert p.returncode == 0, p.stderr
    load = "r1 disk/char28/innodb/one-file-at-a-time"
    assert line_with(p.stdout, "not fitted", load, "123 catbench load-index") and line_with(p.stdout, "not scored", load)
    doc = json.loads(out.read_text())
    assert [(s["run"], s["role"]) for s in doc["not_alone"]] == [("r1", "rung"), ("r1", "measured")]
    assert doc["measured"] == []
    p = _predict(tmp_path, "--results", tmp_path / "r1")
    assert p.returncode == 1 and line_with(p.stderr, "ran alone", "r1 disk/char28/innodb/one-file-at-a-time did not",
                                           "123 catbench load-index")
    # how to run it again alone, not only that it should be (every later run once stopped there)
    assert f"--forcerun {where}`" in p.stderr and f"--forcerun {where}`" in _predict(
        tmp_path, "--results", tmp_path / "r1", "--results", tmp_path / "r2", "--rows", "200").stdout


def _far():
    """A target run's loads at the sealed rows (10^8) and cache (6 bytes a row), on the rungs' curve."""
    from support.predict import FINISHES, rung_rep
    return {FINISHES: [rung_rep(100_000_000, 600_000_000, "far", rep) for rep in range(2)]}


def _reads(rungs: dict, target: dict):
    return lambda paths: target if any(str(p).endswith("far") for p in paths) and len(paths) == 1 else rungs


@pytest.mark.slow
def test_a_sealed_prediction_is_scored_and_refused_once_its_rungs_changed(tmp_path, capsys):
    from catbench.core.infra.config import ConfigError
    from support.predict import FINISHES, groups, write_prediction
    run, sealed = tmp_path / "far", tmp_path / "sealed.json"
    run.mkdir()
    write_prediction(run, out=sealed)                      # make far-seal
    sealed_doc = json.loads(sealed.read_text())
    capsys.readouterr()
    out = write_prediction(run, read=_reads(groups(), _far()), sealed=str(sealed), measured=[str(run)])
    assert "its figures are scored" in capsys.readouterr().out
    [scored] = json.loads(out.read_text())["measured"]
    [was] = [p for p in sealed_doc["predictions"] if tuple(p["key"].values()) == FINISHES]
    assert scored["predicted"] == was["seconds"] and scored["measured_runs"] == ["far"]
    # the first rung's durations halved after the seal: the check refuses, naming what changed
    faster = groups()
    faster[FINISHES] = [dataclasses.replace(r, seconds=r.seconds / 2, rate=r.rate * 2) if r.rung_rows == 1_000_000
                        else r for r in faster[FINISHES]]
    with pytest.raises(ConfigError, match=r"differs from the sealed one \(disk/char28/innodb/one-file-at-a-time/"
                                          r"random [^)]*: sealed [\d.e+]+, now [\d.e+]+"):
        write_prediction(run, read=_reads(faster, _far()), sealed=str(sealed), measured=[str(run)])
    # a rung's load left out (or another config's target) is named as well
    fewer = {k: v for k, v in groups().items() if k != FINISHES}
    with pytest.raises(ConfigError, match="disk/char28/innodb/one-file-at-a-time/random: sealed, not predicted"):
        write_prediction(run, read=_reads(fewer, {}), sealed=str(sealed))


def test_far_check_scores_the_sealed_prediction_before_and_after_its_target_runs():
    make = (Path(__file__).parents[1] / "Makefile").read_text()
    check = make[make.index("\nfar-check:"):make.index("\n\n", make.index("\nfar-check:"))]
    assert check.count("--sealed results/sealed/$(FAR_RUN).json") == 2
    assert check.index("--sealed") < check.index("$(SNAKEMAKE_RUN) --configfile $(FAR)\n")


@pytest.mark.parametrize("key, value", [("rows", "many"), ("seconds", "2 s"), ("table_bytes", True)])
def test_text_in_a_summary_figure_names_the_file_the_repetition_and_the_key(tmp_path, key, value):
    d = _load(tmp_path / "r1")
    s = json.loads((d / "summary.json").read_text())
    s["repetitions"][0][key] = value
    (d / "summary.json").write_text(json.dumps(s))
    with pytest.raises(ValueError, match=rf"{d / 'summary.json'}: repetition 0: {key} is .*, not a number"):
        read_runs([tmp_path / "r1"])


def test_a_load_the_config_asks_for_that_no_rung_measured_is_named_with_its_rungs():
    from catbench.cli.predict import _not_measured
    from catbench.core.infra.config import validate
    cfg = validate({"run": "x", "load": {"variants": ["char28"], "engines": ["innodb", "rocksdb"],
                                         "strategies": ["one-file-at-a-time", "bulk"]}})
    groups = {("disk", "char28", "innodb", "one-file-at-a-time", "random"): [],
              ("disk", "char28", "innodb", "bulk", "random"): []}
    missing = _not_measured(cfg, groups, "config/x.yaml")
    assert {(m["engine"], m["strategy"]) for m in missing} == {("rocksdb", "one-file-at-a-time"), ("rocksdb", "bulk")}
    assert all("make ladder LADDER=config/x.yaml" in m["how"] for m in missing)


@pytest.mark.parametrize("name", ["trace.parquet", "isolation.json"])
@pytest.mark.parametrize("plant", ["/dev/zero", "fifo", "garbage"])
def test_a_loads_files_that_are_not_what_it_wrote_are_named_never_read_whole(tmp_path, name, plant):
    """A trace linked to /dev/zero or a FIFO once went to the reader as it was (pyarrow reads a
    device until memory ends; a FIFO waits for ever); bytes that are not Parquet or JSON are named."""
    import os
    d = _load(tmp_path / "r1")
    f = d / name
    f.unlink(missing_ok=True)
    if plant == "fifo":
        os.mkfifo(f)
    elif plant == "garbage":
        f.write_bytes(b"\x00not what catbench wrote")
    else:
        f.symlink_to(plant)
    with pytest.raises(ValueError, match=re.escape(str(f))):
        read_runs([tmp_path / "r1"])
