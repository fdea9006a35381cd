"""A user's mistakes said in one line naming the key, flag or file and what to do, before
the work where they can be seen then: a target's tmpdir, DuckDB's sort memory, a full disk
during the chunk sort, a hand-edited prediction file, outputs that cannot be written, a
ladder whose rungs the workflow would refuse, and Ctrl-C."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.indexinput import write_files
from support.servers import tmpfs
from support.preflight import check

REPO = Path(__file__).resolve().parent.parent


def _catbench(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "catbench", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def _one_line_error(p, command: str) -> str:
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    (line,) = [ln for ln in p.stderr.splitlines() if ln.startswith(f"catbench {command}: error:")]
    return line


def test_a_target_tmpdir_that_is_a_file_stops_the_run_before_any_job(tmp_path):
    (tmp_path / "afile").write_text("x")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"base: tests/configs/tiny.yaml\nrun: tmpcheck\nstages: [fio]\n"
                   f"targets: {{disk: {{path: {tmp_path / 'disk'}, tmpdir: {tmp_path / 'afile'}}}}}\n")
    refusal = check(REPO, cfg, "--cores", "1").refusal
    assert "targets.disk.tmpdir" in refusal, refusal
    assert not (REPO / "results" / "tmpcheck").exists()


def _generation_order(num, char):
    write_files(Path(num), "bigint", 4, 100_000)
    write_files(Path(char), "char28", 4, 100_000)
    return {"files": 4, "rows": 400_000}


def test_too_little_sort_memory_names_the_key(tmp_path):
    from catbench.prepare.index_order import written_in_order
    with pytest.raises(ValueError, match=r"config key 'index.sort_memory': 1MB is too little"):
        written_in_order("chunk", _generation_order, tmp_path / "n", tmp_path / "c", "1MB")
    assert not (tmp_path / "n").exists() and not list(tmp_path.glob(".arrival-*"))


def test_a_full_disk_during_the_chunk_sort_names_the_place_and_what_to_do():
    from catbench.prepare.index_order import written_in_order
    with tmpfs("40M") as d:    # room for the generation-order files, not for the sort too
        with pytest.raises(ValueError, match=rf"out of space in {d}\b.*index\.order: generation"):   # where, the key
            written_in_order("chunk", _generation_order, d / "n", d / "c", "64MB")
        assert not (d / "n").exists() and not list(d.glob(".arrival-*"))   # nothing that looks complete


@pytest.mark.parametrize("row, says", [
    ({"key": {}, "seconds": 1}, r"predictions\[0\].key lacks target, engine, strategy"),
    ({"key": {"target": "disk", "engine": "innodb", "strategy": "bulk"}, "seconds": "fast"},
     r"predictions\[0\].seconds is 'fast', not a number"),
])
def test_a_hand_edited_prediction_row_is_named(tmp_path, row, says):
    from catbench.report.inputs import MetricsError, collect
    run = tmp_path / "results" / "r"
    (run / "predict").mkdir(parents=True)
    (run / "predict" / "prediction.json").write_text(json.dumps({"predictions": [row], "validation": []}))
    with pytest.raises(MetricsError, match=says):
        collect(run)


@pytest.mark.parametrize("args, says", [
    (["predict", "--config", "config/ladder.yaml", "--results", "results/none", "--out", "/tmp"],
     "--out /tmp is a directory"),
    (["predict", "--config", "config/ladder.yaml", "--results", "results/none", "--out", "/proc/x/p.json"],
     "cannot write in /proc/x"),
    (["ladder", "--config", "config/ladder.yaml", "--out", "/etc/hostname"], "--out /etc/hostname is a file"),
    (["compare", "results/a", "results/b", "--out", "/proc/c.csv"], "cannot write in /proc"),
])
def test_an_output_that_cannot_be_written_is_refused_before_the_work(args, says):
    assert says in _one_line_error(_catbench(*args), args[0])


def test_a_ladder_whose_rungs_the_workflow_would_refuse_is_refused(tmp_path):
    cfg = tmp_path / "long.yaml"
    cfg.write_text(f"base: {REPO / 'config' / 'ladder.yaml'}\nrun: {'r' * 62}\n")
    line = _one_line_error(_catbench("ladder", "--config", str(cfg), "--out", str(tmp_path / "rungs")), "ladder")
    assert "-rung1' of" in line and "config key 'run'" in line
    assert not list((tmp_path / "rungs").glob("*.yaml"))


@pytest.mark.slow
def test_ctrl_c_ends_a_jobs_log_with_a_line_not_a_traceback(tmp_path):
    log = tmp_path / "job.log"
    with open(log, "w") as f:
        p = subprocess.Popen([sys.executable, "-m", "catbench", "index-generate", "--config",
                              '{"catalog": {"patch": {"objects": 3000000}}, "partition": {"index_files": 4}}',
                              "--out", str(tmp_path / "n"), "--out-char28", str(tmp_path / "c"),
                              "--metrics", str(tmp_path / "m.json")], cwd=REPO, stdout=f, stderr=f)
        time.sleep(3)
        p.send_signal(signal.SIGINT)
        assert p.wait(60) == 130
    text = log.read_text()
    assert "Traceback" not in text and text.rstrip().endswith("catbench index-generate: interrupted by SIGINT")
    assert not (tmp_path / "m.json").exists()
