"""Set-up installs what the configured stages need: the tools a config asks for
(catbench system-tools) and install-system.sh's choice of packages from them, checked
without installing anything (CATBENCH_DRY_RUN, a fake apt-get, a PATH without the tools)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from catbench.core.infra.config import validate
from catbench.cli.main import main as catbench_main
from catbench.core.infra.jobs.system import TOOLS, missing_packages, needed_tools

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "workflow" / "scripts" / "install-system.sh"
BASH = shutil.which("bash")


def _cfg(path="config/config.yaml", **over):
    cfg = yaml.safe_load((REPO / path).read_text())
    cfg.update(over)
    return validate(cfg)


def _script(*args, env=None, path=None):
    env = {**os.environ, **(env or {})}
    if path is not None:
        env["PATH"] = str(path)
    return subprocess.run([BASH, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=60)


def _bare_path(tmp_path, uid="0"):
    """A PATH with the script's own helpers only (none of the tools it checks), and an
    ``id`` that says ``uid``."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for tool in ("sort", "tr", "cat"):
        (bin_ / tool).symlink_to(shutil.which(tool))
    (bin_ / "id").write_text(f"#!{BASH}\necho {uid}\n")
    (bin_ / "id").chmod(0o755)
    return bin_


def test_default_config_needs_the_server_and_fio_only():
    cfg = _cfg()
    need = needed_tools(cfg)
    assert need[:1] == ["server"] and "fio" in need
    assert ("rocksdb" in need) == ("rocksdb" in cfg["load"]["engines"])
    assert not {"cluster", "slurm", "browser"} & set(need)


def test_cluster_stage_adds_galera_and_its_sst_tools():
    cfg = _cfg(stages=["fio", "load_index", "cluster"])
    assert needed_tools(cfg) == ["server", "fio", "cluster"]
    assert needed_tools(_cfg("config/bench.yaml")) == ["server", "fio", "cluster"]


def test_index_bench_needs_myrocks():
    assert needed_tools(_cfg("config/index-bench.yaml")) == ["server", "rocksdb", "fio"]


def test_stages_decide_server_and_plugin():
    assert needed_tools(_cfg(stages=[])) == []
    assert needed_tools(_cfg(stages=["fio"])) == ["fio"]
    rocks = {"variants": ["char28"], "engines": ["innodb", "rocksdb"]}
    # MyRocks is for the index study's loads only
    assert needed_tools(_cfg(stages=["queries"], load=rocks)) == ["server"]
    assert needed_tools(_cfg(stages=["load_index"], load=rocks)) == ["server", "rocksdb"]


def test_all_lists_every_tool_the_script_knows(capsys):
    assert catbench_main(["system-tools", "--config", "all"]) == 0
    assert capsys.readouterr().out.split() == list(TOOLS)
    line = next(x for x in SCRIPT.read_text().splitlines() if x.startswith("all="))
    assert line.split("=", 1)[1].strip('"').split() == list(TOOLS)


def test_cli_prints_a_config_s_tools(capsys):
    assert catbench_main(["system-tools", "--config", str(REPO / "config" / "index-bench.yaml")]) == 0
    assert capsys.readouterr().out.split() == ["server", "rocksdb", "fio"]
    assert catbench_main(["system-tools", "--config", str(REPO / "no-such.yaml")]) == 1


def test_present_tools_install_nothing(tmp_path):
    # every tool is installed on this machine: nothing to install, apt-get never called
    if _script("all", env={"CATBENCH_DRY_RUN": "1"}).stdout.strip():
        pytest.skip("some system tools are not installed here")
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "apt-get").write_text(f"#!{BASH}\ntouch {tmp_path}/called\nexit 1\n")
    (fake / "apt-get").chmod(0o755)
    for args in (["all"], ["server", "fio"]):
        out = _script(*args, path=f"{fake}:{os.environ['PATH']}")
        assert out.returncode == 0, out.stderr
        assert not (tmp_path / "called").exists()


def test_only_the_named_tools_are_checked(tmp_path):
    out = _script("fio", "cluster", env={"CATBENCH_DRY_RUN": "1"}, path=_bare_path(tmp_path))
    assert out.returncode == 0, out.stderr
    pkgs = set(out.stdout.split())
    assert {"fio", "mariadb-backup", "rsync", "socat"} <= pkgs
    assert not {"mariadb-server", "mariadb-plugin-rocksdb", "slurm-wlm", "munge", "chromium"} & pkgs


def test_without_root_it_prints_the_command_and_fails(tmp_path):
    out = _script("fio", path=_bare_path(tmp_path, uid="1000"))
    assert out.returncode == 1
    assert "sudo apt-get install -y fio" in out.stderr


@pytest.mark.parametrize("args", [[], ["slurmd"], ["all", "fio"]])
def test_bad_arguments_fail(args):
    assert _script(*args, env={"CATBENCH_DRY_RUN": "1"}).returncode == 2


@pytest.mark.slow
def test_make_targets_pass_their_config():
    if not shutil.which("make"):
        pytest.skip("no make")

    def dry(target, *var):
        return subprocess.run(["make", "-n", "-o", ".venv/.installed", target, *var], cwd=REPO,
                              capture_output=True, text=True, timeout=60).stdout

    assert "install-system.sh all" in dry("test")
    for target, config in [("run", "config/config.yaml"), ("bench", "config/bench.yaml"),
                           ("bench-index", "config/index-bench.yaml"), ("aa", "config/config.yaml"),
                           ("ladder", "config/ladder.yaml")]:
        out = dry(target)
        assert f"catbench system-tools --config {config}" in out and " all" not in out.split("snakemake")[0]
    assert "catbench system-tools --config config/index-study.yaml" in dry("run", "CONFIG=config/index-study.yaml")


def _makes_tools_command(config: Path) -> str:
    """The command ``make run CONFIG=config`` (and ``make env``) runs first for the tools, as make prints it."""
    out = subprocess.run(["make", "-n", "-o", ".venv/.installed", "run", f"CONFIG={config}"], cwd=REPO,
                         capture_output=True, text=True, timeout=60).stdout
    found = re.search(r"tools=\$\((.+?)\)\s*&&", out)
    assert found, out
    return found.group(1)


def test_make_run_accepts_a_patch_file_the_workflow_accepts(tmp_path):
    """A patch file of 1 x 1 deg on a sky 1.2 deg high (lower than the synthetic patch's default
    2 deg): the set-up's check before ``make run`` lays the catalog out from the file, as the
    workflow and ``catbench validate`` do, and writes the manifest their parse then reads."""
    if not shutil.which("make"):
        pytest.skip("no make")
    from support.patchfiles import COLUMNS, rows, write
    path = write(rows(800, ra_lo=10.0, ra_hi=11.0, dec_lo=-0.5, dec_hi=0.5), tmp_path / "patch" / "a.parquet")
    cfgfile = tmp_path / "my-rubin.yaml"
    cfgfile.write_text(yaml.safe_dump({
        "base": None, "run": "my-rubin", "stages": ["load_index"],
        "catalog": {"patch": {"file": {"paths": [str(path)], "columns": COLUMNS}},
                    "sky": {"ra_min_deg": 0, "ra_max_deg": 12, "dec_min_deg": -0.6, "dec_max_deg": 0.6}}}))
    venv = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}  # as make's PATH
    got = subprocess.run(["bash", "-c", _makes_tools_command(cfgfile)], cwd=tmp_path, capture_output=True, env=venv,
                         text=True, timeout=120)
    assert got.returncode == 0 and got.stdout.split() == ["server"], got.stderr[-2000:]
    manifest = json.loads((tmp_path / "results" / "my-rubin" / "catalog" / "patch" / "manifest.json").read_text())
    assert manifest["objects"] == 800 and manifest["dec_height_deg"] < 1.01


@pytest.mark.slow
def test_a_run_is_refused_before_any_job_when_its_tools_are_missing(tmp_path):
    # the workflow's check before any job (cli/workflow/preflight.py) reads this
    cfg = _cfg(stages=["fio", "load_index"])
    assert "fio" in missing_packages(cfg, env={**os.environ, "PATH": str(_bare_path(tmp_path))})
    assert missing_packages(_cfg(stages=[])) == []   # no stage starts a server or fio
    venv = REPO / ".venv" / "bin"
    cfgfile = tmp_path / "c.yaml"
    cfgfile.write_text(yaml.safe_dump({**yaml.safe_load((REPO / "tests" / "configs" / "small.yaml").read_text()),
                                       "base": None, "stages": ["fio"]}))
    (tmp_path / "p").mkdir()
    bare = _bare_path(tmp_path / "p")
    for tool in ("which", "bash"):   # what Snakemake itself runs
        (bare / tool).symlink_to(shutil.which(tool))
    env = {**os.environ, "PATH": f"{venv}:{bare}"}
    cmd = [str(venv / "snakemake"), "-s", str(REPO / "Snakefile"), "-d", str(tmp_path / "wd"), "--cores", "1",
           "--configfile", str(cfgfile)]
    dry = subprocess.run([*cmd, "-n"], capture_output=True, text=True, env=env, timeout=300)
    assert dry.returncode == 0 and "not installed: fio" in dry.stderr, dry.stderr[-2000:]
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode != 0 and "nothing was started" in run.stderr and "not installed: fio" in run.stderr
    assert not (tmp_path / "wd" / "results").exists()
