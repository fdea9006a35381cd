"""Config validation: the default config is valid; every bad config fails naming the key,
both through catbench.core.infra.config.validate and through the real snakemake."""

import copy
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from catbench.core.infra.config import ConfigError, load, n_groups, validate
from catbench.prepare import catalog as cat_mod
from support.preflight import check
from support import preloaded

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = REPO / ".venv" / "bin"
DEFAULT = yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def test_default_config_validates():
    cfg = validate(DEFAULT)
    assert cfg == load(REPO / "config" / "config.yaml")
    assert cfg["partition"]["num_stripes"] == 85
    assert cfg["partition"]["num_sub_stripes_per_stripe"] == 12
    assert cfg["run"] == "default"
    # validate returns a copy and does not touch its input
    assert DEFAULT == yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def test_defaults_are_filled_in():
    cfg = validate({"catalog": {"patch": {}, "sky": {}}, "partition": {}})
    assert cfg["run"] == "default" and cfg["seed"] == 20131208
    assert cfg["catalog"]["patch"]["objects"] == 6000
    assert cfg["catalog"]["sky"] == {"ra_min_deg": 0, "ra_max_deg": 360,
                                     "dec_min_deg": -90, "dec_max_deg": 90}
    assert cfg["partition"]["overlap_deg"] == pytest.approx(1 / 60, rel=1e-3)
    assert n_groups(cfg) >= 1 and cat_mod.n_copies(cfg["catalog"]) > 1000


def test_repetitions_and_the_comparison_rule_have_schema_defaults():
    cfg = validate({"catalog": {"patch": {}, "sky": {}}, "partition": {}})
    assert [cfg[s]["repetitions"] for s in ("fio", "load", "queries", "restart")] == [3, 3, 3, 3]
    assert cfg["report"] == {"confidence": 0.95, "alpha": 0.05, "practical_threshold": 0.1, "between_run_cv": 0.1}
    assert cfg["queries"]["max_repetitions"] is None      # fixed n unless a config asks to adapt
    assert cfg["load"]["settings"] == {} and cfg["load"]["repetition_limit_s"] is None


def test_default_run_gives_the_index_loads_a_pool_the_char28_table_outgrows():
    cfg = validate(DEFAULT)
    from catbench.predict.ladder import MIN_POOL
    assert cfg["load"]["settings"]["innodb_buffer_pool_size"] == "10M"       # a rung's least (stage predict)
    assert 10 * 2**20 >= MIN_POOL
    assert cfg["server"]["settings"]["innodb_buffer_pool_size"] == "256M"    # queries, restarts
    # the CHAR(28) table held 149 bytes per row during the random-order load of the default run
    # (22 MB for 148k rows; InnoDB files grow in MB steps, so leave room): ~2x a 10 MiB pool
    from catbench.core.infra.config import estimated_objects
    assert estimated_objects(cfg) * 140 >= 1.9 * 10 * 2**20


def with_change(dotted: str, value, delete=False):
    cfg = copy.deepcopy(DEFAULT)
    *path, last = dotted.split(".")
    d = cfg
    for k in path:
        d = d.setdefault(k, {})
    if delete:
        del d[last]
    else:
        d[last] = value
    return cfg


BAD = [
    # (key set, value, key named in the error)
    ("bogus", 1, "bogus"),
    ("catalog.bogus", 1, "catalog.bogus"),
    ("catalog.patch.objectz", 10, "catalog.patch.objectz"),
    ("partition.num_stripe", 85, "partition.num_stripe"),
    ("partition.num_stripes", "x", "partition.num_stripes"),
    ("partition.num_stripes", 85.5, "partition.num_stripes"),
    ("partition.num_stripes", 0, "partition.num_stripes"),
    ("partition.num_sub_stripes_per_stripe", 0, "partition.num_sub_stripes_per_stripe"),
    ("partition.overlap_deg", -0.1, "partition.overlap_deg"),
    ("partition.overlap_deg", 0.2, "partition.overlap_deg"),   # > 180/1020 deg
    ("partition.index_files", 0, "partition.index_files"),
    ("partition.max_rows_per_group", -5, "partition.max_rows_per_group"),
    ("catalog.patch.objects", -1, "catalog.patch.objects"),
    ("catalog.patch.objects", 0, "catalog.patch.objects"),
    ("catalog.patch.cluster_count", -2, "catalog.patch.cluster_count"),
    ("catalog.patch.cluster_fraction", 1.5, "catalog.patch.cluster_fraction"),
    ("catalog.sources_per_object", -1, "catalog.sources_per_object"),
    ("catalog.filler_columns", -1, "catalog.filler_columns"),
    ("catalog.max_objects_per_part", 0, "catalog.max_objects_per_part"),
    ("catalog.sky.ra_max_deg", 0, "catalog.sky.ra_max_deg"),        # ra_max <= ra_min
    ("catalog.sky.dec_max_deg", -4, "catalog.sky.dec_max_deg"),     # dec_max <= dec_min
    ("catalog.sky.dec_max_deg", -10, "catalog.sky.dec_max_deg"),    # dec_max < dec_min
    ("catalog.sky.dec_min_deg", -91, "catalog.sky.dec_min_deg"),
    ("catalog.sky.ra_max_deg", 361, "catalog.sky.ra_max_deg"),
    ("seed", -1, "seed"),
    ("seed", "abc", "seed"),
    ("run", "a/b", "run"),
    ("run", "", "run"),
    ("catalog.patch", "big", "catalog.patch"),
    # server options are judged before any job (their bypass forms: test_server)
    ("server.settings", {"innodb_log_file_size": "1X"}, "server.settings.innodb_log_file_size"),
    ("server.settings", {"loose-skip-networking": 0}, "server.settings.loose-skip-networking"),
    ("restart.settings", {"skip-grant-tables": 1}, "restart.settings.skip-grant-tables"),
    ("load.settings", {"skip-grant-tables": 1}, "load.settings.skip-grant-tables"),
    ("load.repetitions", 0, "load.repetitions"),
    ("fio.repetitions", 0, "fio.repetitions"),
    ("restart.repetitions", 0, "restart.repetitions"),
    ("report.confidence", 1.5, "report.confidence"),
    ("report.confidence", 0.5, "report.confidence"),
    ("report.practical_threshold", -0.1, "report.practical_threshold"),
    ("report.bogus", 1, "report.bogus"),
]


@pytest.mark.parametrize("key,value,named", BAD, ids=[f"{k}={v!r}" for k, v, _ in BAD])
def test_bad_config_names_the_key(key, value, named):
    with pytest.raises(ConfigError, match=rf"config key '{named}'"):
        validate(with_change(key, value))


# -- names: a wrong one (an old name included) fails naming the key ----------------------

@pytest.mark.parametrize("key,value,named", [
    ("load.variants", ["char"], "load.variants.0"),
    ("load.variants", ["seed"], "load.variants.0"),              # the variants' names before char28/bigint
    ("load.variants", ["sequential"], "load.variants.0"),        # a name of another key
    ("load.strategies", ["sequential"], "load.strategies.0"),    # one-file-at-a-time's name before
    ("queries.index_variant", "bigint28", "queries.index_variant"),
    ("restart.variant", "qserv", "restart.variant"),
    ("cluster.variant", "one-file-at-a-time", "cluster.variant"),
])
def test_a_wrong_name_fails_naming_the_key(key, value, named):
    with pytest.raises(ConfigError, match=rf"config key '{re.escape(named)}': '[^']+' is not one of"):
        validate(with_change(key, value))


def test_a_ram_and_a_held_page_cache_together_are_refused_naming_both():
    with pytest.raises(ConfigError, match=r"config keys 'server\.ram' and 'server\.page_cache'"):   # both named
        validate({"server": {"ram": "1G", "page_cache": "10M"}})
    assert validate({"server": {"page_cache": "10M"}})["server"]["page_cache"] == "10M"
    for key, value in (("ram", "0K"), ("ram", "48M"), ("page_cache", "0K"), ("page_cache", "512K")):
        with pytest.raises(ConfigError, match=rf"config key 'server.{key}': {value} is under"):
            validate({"server": {key: value}})
    assert validate({"server": {"ram": "128M"}})["server"]["ram"] == "128M"


def test_a_wrong_skip_pair_still_names_load_skip():
    from catbench.core.server.loaddata import LoadError
    from catbench.load.strategies import load_pairs
    cfg = validate(with_change("load.skip", ["innodb/sequential"]))
    with pytest.raises(LoadError, match="config key load.skip names innodb/sequential"):
        load_pairs(cfg["load"]["strategies"], cfg["load"]["engines"], cfg["load"]["skip"])


def test_a_wrong_name_on_the_command_line_fails_naming_the_option(tmp_path, capsys):
    import argparse

    from catbench.cli.storage import add_subcommands
    parser = argparse.ArgumentParser()
    add_subcommands(parser.add_subparsers(dest="cmd"))
    base = ["load-index", "--target", "t", "--path", str(tmp_path), "--input-dir", str(tmp_path), "--out", str(tmp_path)]
    for flags in (["--variant", "seeds"], ["--variant", "seed"], ["--strategy", "sequential"]):
        with pytest.raises(SystemExit):
            parser.parse_args(base + flags)
        assert f"argument {flags[0]}: invalid choice: '{flags[1]}'" in capsys.readouterr().err


def test_missing_sections_take_the_schema_defaults():
    assert validate({}) == validate({"catalog": {"patch": {}, "sky": {}}, "partition": {}})


def test_sky_lower_than_a_patch_or_narrower_than_a_patch():
    cfg = with_change("catalog.sky", {"ra_min_deg": 0, "ra_max_deg": 10,
                                      "dec_min_deg": 0, "dec_max_deg": 1})
    with pytest.raises(ConfigError, match=r"config key 'catalog\.sky'"):
        validate(cfg)
    cfg = with_change("catalog.sky", {"ra_min_deg": 0, "ra_max_deg": 1.5,
                                      "dec_min_deg": 0, "dec_max_deg": 4})
    with pytest.raises(ConfigError, match=r"config key 'catalog\.sky'.*does not fit"):
        validate(cfg)


def test_overlap_equal_to_a_sub_stripe_is_allowed():
    cfg = with_change("partition.overlap_deg", 180.0 / 1020)
    assert validate(cfg)["partition"]["overlap_deg"] == 180.0 / 1020


def test_several_errors_are_all_reported():
    cfg = with_change("bogus", 1)
    cfg["partition"]["num_stripes"] = "x"
    cfg["catalog"]["patch"]["objects"] = -1
    with pytest.raises(ConfigError) as e:
        validate(cfg)
    msg = str(e.value)
    for key in ("bogus", "partition.num_stripes", "catalog.patch.objects"):
        assert f"config key '{key}'" in msg


# -- through the real snakemake ------------------------------------------------------

def snakemake_dry_run(tmp_path, cfg_text, *extra):
    cfgfile = tmp_path / "bad.yaml"
    cfgfile.write_text(cfg_text)
    env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}"}
    return preloaded.run(
        [str(VENV_BIN / "snakemake"), "partition", "-n", "-s", str(REPO / "Snakefile"),
         "-d", str(tmp_path / "wd"), "--configfile", str(cfgfile), *extra],
        capture_output=True, text=True, env=env, timeout=120)


SNAKEMAKE_BAD = [
    ("partition: {num_stripes: 0}\n", "partition.num_stripes"),
    ("partition: {num_stripes: x}\n", "partition.num_stripes"),
    ("catalog: {patch: {objects: -1}, sky: {}}\n", "catalog.patch.objects"),
    ("bogus: 3\n", "bogus"),
    ("partition: {overlap_deg: 0.5}\n", "partition.overlap_deg"),
    ("catalog:\n  patch: {}\n  sky: {ra_min_deg: 20, ra_max_deg: 10}\n", "catalog.sky.ra_max_deg"),
]


@pytest.mark.parametrize("text,named", SNAKEMAKE_BAD, ids=[n for _, n in SNAKEMAKE_BAD])
def test_the_workflows_checks_refuse_a_bad_config_naming_the_key(tmp_path, text, named):
    cfgfile = tmp_path / "bad.yaml"
    cfgfile.write_text(text)
    refusal = check(tmp_path / "wd", cfgfile, "partition").refusal
    assert f"config key '{named}'" in refusal, refusal
    assert not (tmp_path / "wd" / "results").exists()  # nothing ran


@pytest.mark.slow
def test_snakemake_refuses_a_bad_config_naming_the_key_before_any_job(tmp_path):
    """The checks' refusal is Snakemake's own error: non-zero, the key named, nothing run."""
    text, named = SNAKEMAKE_BAD[0]
    r = snakemake_dry_run(tmp_path, text)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert f"config key '{named}'" in out, out
    assert "Traceback" not in out, out
    assert not (tmp_path / "wd" / "results").exists()


@pytest.mark.slow
def test_snakemake_accepts_a_good_config(tmp_path):
    text = yaml.safe_dump(with_change("run", "ok"))
    r = snakemake_dry_run(tmp_path, text)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "catalog_patch" in r.stdout and "partition_reduce" in r.stdout


def test_a_config_override_names_the_key(tmp_path):
    """--config on top of a valid --configfile (read by Snakemake's own parser): a bad value names the key."""
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(with_change("run", "ok")))
    for override, named in (("partition={num_stripes: 0}", "partition.num_stripes"),
                            ("seed=-3", "seed"),
                            ("catalog={patch: {objects: 10}, sky: {}, colour: 1}",
                             "catalog.colour")):
        refusal = check(tmp_path / "wd", good, "partition", overrides=(override,)).refusal
        assert f"config key '{named}'" in refusal, (override, refusal)


def test_a_sections_key_from_the_command_line_is_typed_as_in_a_yaml_file(tmp_path):
    """`--config 'load={repetitions: 3}'`: Snakemake reads the inner 3 as the string '3';
    catbench types it as YAML does, so the documented form works and errors are about values."""
    from catbench.core.infra.config import typed_overrides
    cfg = typed_overrides({"load": {"repetitions": "3", "strategies": ["one-file-at-a-time"], "x": {"y": "true"}}, "run": "r"},
                          {"load": {"repetitions": "3", "x": {"y": "true"}}, "run": "r"})
    assert cfg["load"] == {"repetitions": 3, "strategies": ["one-file-at-a-time"], "x": {"y": True}} and cfg["run"] == "r"
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(with_change("run", "ok")))
    assert check(tmp_path / "wd", good, "partition", overrides=("load={repetitions: 3}",)).refusal == ""
    said = check(tmp_path / "wd", good, "partition", overrides=("load={repetitions: 0}",)).refusal
    assert "config key 'load.repetitions': 0 " in said and "minimum of 1" in said, said   # key, value, bound


def _one_run(tmp_path, *command, timeout=120):
    env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}"}
    script = [str(VENV_BIN / "python"), str(REPO / "workflow" / "scripts" / "one_run.py"), *command]
    return subprocess.run(script, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=timeout)


@pytest.mark.slow
@pytest.mark.parametrize("alive", ["snakemake", "catbench job", "catbench coverage"])
def test_make_run_removes_a_stale_lock_and_stops_at_a_live_one(tmp_path, alive):
    """workflow/scripts/one_run.py (make run's wrapper): a lock with no Snakemake and no catbench
    job of the checkout alive is removed (saying so); with one running (a catbench job outlives a
    killed Snakemake), it stops naming the process. A read-only command (coverage) is no job."""
    (tmp_path / "Snakefile").write_text("rule all:\n    input: []\n")
    locks = tmp_path / ".snakemake" / "locks"
    locks.mkdir(parents=True)
    (locks / "0.input.lock").write_text("")
    (tmp_path / "catbench").write_text("import time; time.sleep(60)\n")
    argv = ([str(VENV_BIN / "python"), "-c", "import time; time.sleep(60)", "snakemake"] if alive == "snakemake"
            else [str(VENV_BIN / "python"), str(tmp_path / "catbench"), alive.split()[-1].replace("job", "load-index")])
    live = subprocess.Popen(argv, cwd=tmp_path)
    try:
        r = _one_run(tmp_path, timeout=60)
        if alive == "catbench coverage":
            assert r.returncode == 0 and "removing a stale Snakemake lock" in r.stderr, r.stderr
            return
        assert r.returncode == 1 and f"pid {live.pid}" in r.stderr and (locks / "0.input.lock").exists()
    finally:
        live.kill()
        live.wait()
    r = _one_run(tmp_path)
    assert r.returncode == 0 and "removing a stale Snakemake lock" in r.stderr, r.stderr
    assert not locks.is_dir() or not any(locks.iterdir())


def _holding_the_run_lock(workdir: Path, seconds: int) -> subprocess.Popen:
    """`make run`'s wrapper running `sleep` in ``workdir``, once it holds the run lock."""
    run = subprocess.Popen([str(VENV_BIN / "python"), str(REPO / "workflow" / "scripts" / "one_run.py"),
                            "sleep", str(seconds)], cwd=workdir,
                           env={**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}"})
    lock = workdir / ".snakemake" / "catbench-run.lock"
    for _ in range(100):
        if lock.exists() and lock.read_text().strip() == str(run.pid):
            break
        time.sleep(0.1)
    return run


@pytest.mark.slow
def test_two_runs_of_one_checkout_started_together_one_stops(tmp_path):
    """The run lock is held by the command make run starts (exec'd), for as long as it runs."""
    first = _holding_the_run_lock(tmp_path, 30)
    try:
        r = _one_run(tmp_path, "true", timeout=60)
        assert r.returncode == 1 and f"pid {first.pid}" in r.stderr and "another run" in r.stderr, r.stderr
    finally:
        first.kill()
        first.wait()
    assert _one_run(tmp_path, "true").returncode == 0


def test_a_number_yaml_reads_as_text_is_named_with_the_cure():
    """YAML 1.1 reads 1e-9 as text: the error once said only "not of type 'number'"."""
    with pytest.raises(ConfigError, match=r"'report.alpha': '1e-9' is read as text: .* 1\.0e-09"):
        validate({"report": {"alpha": "1e-9"}}, whole=False)
    with pytest.raises(ConfigError, match=r"'predict.in_run.targets': \[\] should be non-empty"):
        validate({"predict": {"in_run": {"targets": []}}}, whole=False)


@pytest.mark.slow
def test_snakemake_unlock_is_refused_while_a_run_of_the_checkout_is_live(tmp_path):
    """`snakemake --unlock` once succeeded under a live `make run` (only make run was guarded)."""
    env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}"}
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"run": "X", "stages": ["fio"], "targets": {"disk": {"path": str(tmp_path / "t")}}}))
    unlock = [str(VENV_BIN / "snakemake"), "-s", str(REPO / "Snakefile"), "--unlock", "--configfile", str(cfg)]
    live = _holding_the_run_lock(tmp_path, 60)
    try:
        r = preloaded.run(unlock, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        said = r.stdout + r.stderr
        assert r.returncode != 0 and "is live (it holds " in said and f"catbench-run.lock, pid {live.pid})" in said, said
    finally:
        live.kill()
        live.wait()
    r = preloaded.run(unlock, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
