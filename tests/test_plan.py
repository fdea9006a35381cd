"""A user's config over the default run (config key base), the run's plan (rows, expected
minutes per stage) and its limit (run_limit_h): in the package and through `snakemake -n`."""

import dataclasses
import os
import re
from pathlib import Path

import pytest
import yaml
from catbench.core.infra.jobs import plan as cb_plan
from catbench.core.infra.jobs.requests import LOCAL
from catbench.core.infra.jobs.sizing import QueryWork, RunSizes
from catbench.core.infra.config import ConfigError, layered, typed_overrides, validate
from catbench.load.spec import LoadSpec
from catbench.load.strategies import get_strategy, load_pairs
from support.text import line_with
from support.preflight import check
from support import preloaded

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = REPO / ".venv" / "bin"
PRESETS = ["config/config.yaml", "config/index-study.yaml", "config/index-bench.yaml", "config/bench.yaml",
           "tests/configs/small.yaml", "tests/configs/tiny.yaml"]
MINE = {"run": "mine", "targets": {"nvme": {"path": "/tmp/catbench-plan-test"}},
        "server": {"settings": {"innodb_buffer_pool_size": "128M"}}}


def as_run(raw: dict, overrides: dict | None = None) -> dict:
    """The validated config as the workflow makes it (cli/dag.py Dag.of)."""
    return validate(typed_overrides(layered(raw, REPO), overrides or {}))


def run_plan(cfg: dict) -> dict:
    pairs, _ = load_pairs(cfg["load"]["strategies"], cfg["load"]["engines"], cfg["load"]["skip"])
    per = len(cfg["targets"]) * len(cfg["load"]["variants"]) if "load_index" in cfg["stages"] else 0
    return cb_plan.plan(RunSizes.of(cfg), [(e, get_strategy(s).resumable) for e, s in pairs] * per,
                        time_limit_s=LoadSpec.of(cfg).time_limit_s)


@pytest.mark.parametrize("name", PRESETS)
def test_a_preset_is_a_complete_config_unchanged_by_layering(name):
    raw = yaml.safe_load((REPO / name).read_text())
    assert raw["base"] is None
    assert as_run(raw) == validate(raw)


def test_a_user_config_layers_over_the_default_run():
    default = validate(yaml.safe_load((REPO / "config" / "config.yaml").read_text()))
    cfg = as_run(MINE)
    assert cfg["targets"] == {"nvme": {"path": "/tmp/catbench-plan-test"}}
    assert cfg["catalog"] == default["catalog"] and cfg["load"] == default["load"]
    assert cfg["stages"] == default["stages"] and cfg["base"] == "config/config.yaml"
    # mappings merge key by key: the default run's other server settings stay
    assert cfg["server"]["settings"] == {**default["server"]["settings"], "innodb_buffer_pool_size": "128M"}
    # stages given replace the default run's; --config overrides apply last
    cfg = as_run({**MINE, "stages": ["fio"]}, {"load": {"repetitions": "5"}})
    assert cfg["stages"] == ["fio"] and cfg["load"]["repetitions"] == 5
    assert as_run({**MINE, "base": None})["catalog"]["patch"]["objects"] == 6000   # the schema's


def test_a_missing_or_looping_base_names_the_key(tmp_path):
    with pytest.raises(ConfigError, match="config key 'base'"):
        as_run({**MINE, "base": str(tmp_path / "none.yaml")})
    loop = tmp_path / "loop.yaml"
    loop.write_text(f"base: {loop}\n")
    with pytest.raises(ConfigError, match="config key 'base'.*loop"):
        as_run({**MINE, "base": str(loop)})


def test_the_default_run_and_every_preset_are_under_their_limit():
    for name in PRESETS:
        p = run_plan(validate(yaml.safe_load((REPO / name).read_text())))
        cb_plan.check_limit(p)
        assert 0 < p["total_minutes"] and p["objects"] > 0
    p = run_plan(as_run(MINE))
    assert p["total_minutes"] < 60 * p["limit_h"] and set(p["minutes"]) >= {"catalog", "load_index", "queries"}


def test_a_run_over_its_limit_names_the_key_and_a_stage_target_only_its_stages():
    p = run_plan(as_run({**MINE, "base": None}))   # the schema's full sky: ~60 M objects
    # the key, the run's time and its largest stage, the limit
    with pytest.raises(ConfigError, match=r"config key 'run_limit_h': .*~\d+\.\d h "
                                          r"\((queries|restart|load_index) .*\).* 3 h\b"):
        cb_plan.check_limit(p)
    cb_plan.check_limit(p, ["partition"])          # the catalog and its chunks: under 3 h
    cb_plan.check_limit(p, ["results/mine/load/nvme/char28/innodb/sorted"])   # one job: not planned here
    with pytest.raises(ConfigError, match="run_limit_h"):
        cb_plan.check_limit(p, ["load_index"])


def _at_density(side_deg: float, partition: dict | None = None) -> dict:
    """The user's run over a patch of 150,000 objects on ``side_deg`` x ``side_deg``, copied
    twice: the same rows at any side, at a survey's density on 1 deg²."""
    return run_plan(as_run({**MINE, "partition": partition or {}, "catalog": {
        "patch": {"objects": 150_000, "ra_width_deg": side_deg, "dec_height_deg": side_deg},
        "density": {"model": "uniform"},
        "sky": {"ra_min_deg": 0.0, "ra_max_deg": 2.2 * side_deg, "dec_min_deg": -0.6 * side_deg,
                "dec_max_deg": 0.6 * side_deg}}}))


def test_the_queries_estimate_grows_with_the_density_and_the_plan_suggests_stripes():
    sparse, dense = _at_density(10.0), _at_density(1.0)
    assert sparse["objects"] == dense["objects"] == 300_000
    # the same rows 100x as crowded: a box or a near-neighbour query reads its chunk's rows
    assert dense["minutes"]["queries"] > 1.5 * sparse["minutes"]["queries"], (sparse["minutes"], dense["minutes"])
    assert dense["chunks"].chunk_rows > 10 * sparse["chunks"].chunk_rows
    said = "\n".join(cb_plan.lines(dense))
    assert "the densest holds ~300,000 objects" in said and "150,000 objects/deg²" in said
    assert re.search(r"suggestion: .*partition.auto_chunk_rows = 10,000 .*num_stripes: auto .* pick \d+ x \d+",
                     said), said
    assert "suggestion" not in "\n".join(cb_plan.lines(sparse))
    # auto takes the suggestion: chunks under the bound, the estimate back down
    auto = _at_density(1.0, {"num_stripes": "auto", "num_sub_stripes_per_stripe": "auto"})
    assert auto["chunks"].chunk_rows <= 10_000 and "suggestion" not in "\n".join(cb_plan.lines(auto))
    assert auto["minutes"]["queries"] < dense["minutes"]["queries"]


def test_shv1s_estimate_is_the_distance_tests_its_drawn_box_is_sized_to():
    from catbench.core.infra.jobs.requests import SHV1_TESTS_PER_S, _crowding_seconds
    dense = _at_density(1.0, {"num_stripes": "auto", "num_sub_stripes_per_stripe": "auto"})
    chunks = dense["chunks"]
    q = QueryWork(repetitions=1, max_repetitions=None, budget_s=None, cold=False, queries=("SHV1",), streams=0,
                  stream_seconds=0.0, targets=1, shv1_tests=10 ** 7, shv1_rows=100_000)
    scan = _crowding_seconds("LV3", chunks, 1e6, q, 300_000)
    # 100,000 Objects x ~1,400 of their sub-chunk and overlap: over 10^7, so the box shrinks to it
    assert _crowding_seconds("SHV1", chunks, 1e6, q, 300_000) - scan == pytest.approx(10 ** 7 / SHV1_TESTS_PER_S)
    fewer = dataclasses.replace(q, shv1_rows=1_000)
    assert _crowding_seconds("SHV1", chunks, 1e6, fewer, 300_000) - scan < 10 ** 7 / SHV1_TESTS_PER_S / 5

def dry_run(tmp_path, cfg: dict, *extra):
    cfgfile = tmp_path / "my.yaml"
    cfgfile.write_text(yaml.safe_dump(cfg))
    env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}"}
    return preloaded.run([str(VENV_BIN / "snakemake"), "-n", "-s", str(REPO / "Snakefile"), "-d",
                           str(tmp_path / "wd"), "--configfile", str(cfgfile), *extra],
                          capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.slow
def test_snakemake_plans_the_default_run_on_the_users_one_target(tmp_path):
    mine = {**MINE, "targets": {"nvme": {"path": str(tmp_path / "x")}}}
    r = dry_run(tmp_path, mine)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    counts = {k: int(v) for k, v in re.findall(r"^(\w+)\s+(\d+)\s*$", r.stdout, re.M)}
    cfg = as_run(mine)
    assert set(re.findall(r"wildcards: .*target=(\w+)", out)) == {"nvme"}
    assert counts["load_index_run"] == len(cfg["load"]["variants"]) * len(cfg["load"]["strategies"]) == 4
    assert counts["catalog_part"] == run_plan(cfg)["counts"]["catalog"]["catalog_part"]
    assert "queries_mysql" in counts and "restart_run" in counts   # the default run's stages
    assert re.search(r"catbench: plan: 148,000 objects, 296,000 sources, 148,000 index rows", out), out[-3000:]
    assert re.search(r"catbench: plan: expected ~\d+ min \(catalog .*load_index .*\)", out)
    assert not (tmp_path / "x").exists()
    # the small aggregations run where Snakemake runs and hold the measure domain: under Slurm a
    # measuring job never meets one, even on a node that also runs Snakemake
    for name in LOCAL:
        job = re.search(rf"^(?:local)?rule {name}:\n(.*?)\n\[", out, re.S | re.M)
        assert job and re.search(r"resources: .*measure_host=1", job.group(1)), (name, out[-3000:])
    partition = re.search(r"^rule chunk_list:\n(.*?)\n\[", out, re.S | re.M)
    assert partition and "measure_host" not in partition.group(1)


def test_a_run_over_its_limit_is_stopped_before_any_job(tmp_path):
    cfgfile = tmp_path / "my.yaml"
    cfgfile.write_text(yaml.safe_dump({**MINE, "targets": {"nvme": {"path": str(tmp_path / "x")}}, "run_limit_h": 0.02}))
    refusal = check(tmp_path / "wd", cfgfile).refusal
    assert line_with(refusal, "config key 'run_limit_h'", "0.02 h"), refusal
    assert not (tmp_path / "wd" / "results").exists()


@pytest.mark.slow
def test_queries_run_only_on_the_targets_named(tmp_path):
    """queries.targets: the chunk tables and the suite go to the targets named, the plan
    counts what Snakemake plans, and a name that is not a target names the key."""
    two = {"nvme": {"path": str(tmp_path / "x")}, "hdd": {"path": str(tmp_path / "y")}}
    mine = {**MINE, "targets": two, "stages": ["queries"], "queries": {"targets": ["hdd"]}}
    r = dry_run(tmp_path, mine)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    counts = {k: int(v) for k, v in re.findall(r"^(\w+)\s+(\d+)\s*$", r.stdout, re.M)}
    assert counts["queries_mysql"] == 1 == run_plan(as_run(mine))["counts"]["queries"]["queries_mysql"]
    assert set(re.findall(r"rule queries_mysql:.*?wildcards: target=(\w+)", out, re.S)) == {"hdd"}
    assert run_plan(as_run({**mine, "queries": {"targets": None}}))["counts"]["queries"]["queries_mysql"] == 2
    with pytest.raises(ConfigError, match=r"config key 'queries.targets': 'ssd' not in targets \(nvme, hdd\)"):
        as_run({**mine, "queries": {"targets": ["ssd"]}})
