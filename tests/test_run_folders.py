"""A run's folders: a ladder's rung never writes into a user's run of the same name, nor through
a link planted in results/ or on a target; a user's run never takes a rung's folder."""

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from catbench.cli.common import read_config
from catbench.core.infra.errors import TargetError
from catbench.core.infra.runfolders import MARKER, check_run, claim_rung
from catbench.predict.spec import rung_config
from support.preflight import check

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = REPO / ".venv" / "bin"
ENV = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}"}


def _config(tmp_path: Path) -> dict:
    cfg = read_config(str(REPO / "config" / "config.yaml"))
    cfg["run"] = "X"
    cfg["targets"] = {"disk": {"path": str(tmp_path / "t")}}
    return cfg


def _ladder_rung(tmp_path: Path, cfg: dict) -> subprocess.CompletedProcess:
    """`catbench ladder-rung` of rung 2, in tmp_path (its results/ there), as the predict stage runs it."""
    cfgfile = tmp_path / "X.yaml"
    cfgfile.write_text(yaml.safe_dump(cfg))
    return subprocess.run([str(VENV_BIN / "catbench"), "ladder-rung", "--config", str(cfgfile), "--rung", "2",
                           "--cores", "1", "--snakefile", str(REPO / "Snakefile"),
                           "--out", "results/X/predict/rung2.json"],
                          capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=120)


def test_a_rung_refuses_a_users_run_of_its_name_and_leaves_it_as_it_was(tmp_path):
    own = tmp_path / "results" / "X-rung2" / "load"
    own.mkdir(parents=True)
    (own / "summary.json").write_text('{"repetitions": 2}')
    r = _ladder_rung(tmp_path, _config(tmp_path))
    assert r.returncode != 0
    line = r.stderr.strip().splitlines()[-1]
    assert "results/X-rung2" in line and "not made by a ladder" in line and "'run'" in line
    assert (own / "summary.json").read_text() == '{"repetitions": 2}'
    assert sorted(p.name for p in own.parent.iterdir()) == ["load"]
    assert not (tmp_path / "results" / "X" / "predict" / "rung2.json").exists()


@pytest.mark.parametrize("where", ["results", "target"])
def test_a_rung_never_follows_a_link_planted_where_its_folder_goes(tmp_path, where):
    cfg = _config(tmp_path)
    victim = tmp_path / "victim"
    victim.mkdir()
    link = tmp_path / "results" / "X-rung2" if where == "results" else tmp_path / "t" / "X-rung2"
    link.parent.mkdir(parents=True)
    link.symlink_to(victim)
    r = _ladder_rung(tmp_path, cfg)
    assert r.returncode != 0 and "is a symbolic link" in r.stderr and str(link.relative_to(tmp_path)) in r.stderr
    assert list(victim.iterdir()) == []


def test_a_rung_made_by_its_ladder_resumes_and_another_ladders_is_refused(tmp_path):
    cfg = _config(tmp_path)
    rung = rung_config(cfg, 2)
    results = tmp_path / "results"
    claim_rung(rung, "X", 2, results)
    for folder in (results / "X-rung2", tmp_path / "t" / "X-rung2"):
        assert json.loads((folder / MARKER).read_text()) == {"ladder": "X", "rung": 2}
    claim_rung(rung, "X", 2, results)          # the same ladder's rung again: a resume
    with pytest.raises(TargetError, match="rung 2 of run 'X'.s ladder: rung 3"):
        claim_rung(rung, "X", 3, results)
    # the rung's own Snakemake run passes the workflow's check; a user's run of that name does not
    check_run(rung, results)
    mine = {**rung, "predict": {**rung["predict"], "rung": None}}
    with pytest.raises(TargetError, match="holds rung 2 of run 'X'"):
        check_run(mine, results)


def test_a_marker_that_is_not_catbenchs_is_refused_not_trusted(tmp_path):
    cfg = _config(tmp_path)
    rung = rung_config(cfg, 2)
    folder = tmp_path / "results" / "X-rung2"
    folder.mkdir(parents=True)
    (folder / MARKER).symlink_to("/dev/zero")
    with pytest.raises(TargetError, match="symbolic link"):
        claim_rung(rung, "X", 2, tmp_path / "results")
    (folder / MARKER).unlink()
    (folder / MARKER).write_text("[1, 2]")
    with pytest.raises(TargetError, match="not a rung marker"):
        claim_rung(rung, "X", 2, tmp_path / "results")


def test_the_workflow_refuses_a_run_whose_folder_is_a_link_before_any_job(tmp_path):
    cfg = _config(tmp_path)
    cfg["stages"] = ["fio"]
    cfgfile = tmp_path / "c.yaml"
    cfgfile.write_text(yaml.safe_dump(cfg))
    victim = tmp_path / "victim"
    victim.mkdir()
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "X").symlink_to(victim)
    said = check(tmp_path, cfgfile, "--cores", "1").refusal
    assert "results/X (the run's folder" in said and "is a symbolic link" in said, said
    assert list(victim.iterdir()) == []
