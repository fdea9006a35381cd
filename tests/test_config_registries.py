"""The schema's kind lists come from the registries' modules: a new restart kind or loading
strategy is its module alone, and a config naming it validates."""

import functools
from pathlib import Path

import pytest
from catbench.core.infra.config import ConfigError, load_schema, validate
from catbench.core.infra.config import registries
from catbench.load.strategies import STRATEGIES
from catbench.restart.options import KINDS


def test_the_schema_lists_what_the_modules_declare_in_their_order():
    props = load_schema()["properties"]
    assert props["load"]["properties"]["strategies"]["items"]["enum"] == list(STRATEGIES)
    assert props["restart"]["properties"]["kinds"]["items"]["enum"] == list(KINDS)
    assert props["restart"]["properties"]["kinds"]["default"] == list(KINDS)
    with pytest.raises(ConfigError, match="config key 'restart.kinds.0'"):
        validate({"restart": {"kinds": ["reboot"]}}, whole=False)


def test_a_new_module_is_a_new_name(tmp_path, monkeypatch):
    kinds = tmp_path / "restart" / "kinds"
    kinds.mkdir(parents=True)
    (kinds / "__init__.py").write_text("KINDS = {}\n")
    (kinds / "late.py").write_text('KIND = "late"\nORDER = 2\n')
    (kinds / "early.py").write_text('"""doc"""\nKIND = "early"\nORDER = 1   # first\n')
    monkeypatch.setattr(registries, "PACKAGE", tmp_path)
    schema = {"kinds": {"items": {"x-registry": ["restart/kinds", "KIND"]},
                        "default": {"x-registry": ["restart/kinds", "KIND"]}}}
    assert registries.expand(schema) == {"kinds": {"items": {"enum": ["early", "late"]},
                                                   "default": ["early", "late"]}}
    (kinds / "odd.py").write_text('KIND = "odd"\nORDER = 1\n')
    with pytest.raises(registries.RegistryError, match="two modules share an ORDER"):
        registries.declared(kinds, "KIND")
    (kinds / "odd.py").write_text('KIND = "odd"\n')
    with pytest.raises(registries.RegistryError, match=r"odd\.py: KIND .*ORDER"):
        registries.declared(kinds, "KIND")


def _module_registries(node, where=()) -> list:
    """Every ``{x-registry: [folder, CONSTANT]}`` of a loaded (not expanded) schema over a folder of
    modules (not of SQL files), with where in the schema it stands."""
    if isinstance(node, dict):
        if registries.KEY in node and not node[registries.KEY][0].startswith("resources/"):
            return [(where, *node[registries.KEY])]
        return [r for k, v in node.items() for r in _module_registries(v, (*where, k))]
    return []


def test_a_toy_module_is_in_the_schema_and_a_name_no_module_declares_is_refused(tmp_path, monkeypatch):
    """The mechanism, not today's lists (which the schema derives from the same modules): the
    registries' folders copied with one toy module added to each; the whole schema takes every
    toy name where its registry stands, a config naming the toy restart kind validates, and once
    the module is gone the same config is refused, naming the key and the value."""
    import shutil

    import yaml
    from catbench.core.infra.resources import SCHEMA_PATH
    found = _module_registries(yaml.safe_load(SCHEMA_PATH.read_text()))
    assert {f for _, f, _ in found} >= {"restart/kinds", "load/strategies", "core/index/engines"}, found
    for folder, constant in {(f, c) for _, f, c in found}:
        shutil.copytree(registries.PACKAGE / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
        (tmp_path / folder / "toy.py").write_text(f'{constant} = "toy-{constant.lower()}"\nORDER = 10000\n')
    kinds = ["clean", "toy-kind"]
    monkeypatch.setattr(registries, "PACKAGE", tmp_path)
    load_schema.cache_clear()       # read once a process: read it again, from the copy
    try:
        schema = load_schema()
        for where, _, constant in found:
            node = functools.reduce(lambda n, k: n[k], where, schema)
            listed = node if isinstance(node, list) else node["enum"]
            assert listed[-1] == f"toy-{constant.lower()}", (where, listed)     # last: its ORDER
        assert validate({"restart": {"kinds": kinds}}, whole=False)["restart"]["kinds"] == kinds
        (tmp_path / "restart" / "kinds" / "toy.py").unlink()
        load_schema.cache_clear()
        assert "toy-kind" not in load_schema()["properties"]["restart"]["properties"]["kinds"]["items"]["enum"]
        with pytest.raises(ConfigError, match=r"config key 'restart\.kinds\.1': 'toy-kind'"):
            validate({"restart": {"kinds": kinds}}, whole=False)
    finally:
        monkeypatch.undo()
        load_schema.cache_clear()   # the next test reads the real schema
    assert "toy-kind" not in load_schema()["properties"]["restart"]["properties"]["kinds"]["items"]["enum"]


TOY = '''"""A toy strategy: sorted's load under another name, with facts of its own."""

from .base import BytesPerRow, Strategy
from .sorted_keys import load

NAME = "toy"
ORDER = 99

STRATEGY = Strategy(NAME, load, bytes_per_row={"char28": BytesPerRow(70.0, 90.0), "bigint": BytesPerRow(40.0, 50.0)},
                    scratch_copies=3, steady=True, in_file_order=False)
'''
CHECK = '''
import sys
from pathlib import Path
import catbench
assert catbench.__file__.startswith(sys.argv[1]), catbench.__file__
from catbench.core.infra.config import validate
from catbench.core.infra.jobs import plan
from catbench.core.infra.jobs.sizing import RunSizes
from catbench.load import estimate as est
from catbench.load.spec import EstimateSpec
from catbench.load.strategies import get_strategy, load_pairs
from catbench.predict.scale import form_of
from support.predict import rung_rep
cfg = validate({"load": {"strategies": ["toy", "one-file-at-a-time"], "variants": ["char28", "bigint"]}})
assert est.MODEL[("char28", "toy")].peak == 90.0 and "toy" in est.STEADY
need = est.estimate(EstimateSpec.of(cfg), Path(sys.argv[2]))
text = "\\n".join(est.lines(need, jobs=True))
assert "char28/innodb/toy" in text, text
pairs = load_pairs(cfg["load"]["strategies"], cfg["load"]["engines"])[0]
assert plan.plan(RunSizes.of(cfg), [(e, get_strategy(s).resumable) for e, s in pairs], time_limit_s=None)["jobs"] > 0
key = ("disk", "char28", "innodb", "toy", "random")
assert form_of(key, [rung_rep(10**6, 6e6, "r", key=key, in_file_order=get_strategy("toy").in_file_order)]) == "steady"
print("toy strategy: valid")
'''


def test_a_toy_strategy_is_its_module_alone(tmp_path):
    """A copy of the package with one more strategy module, nothing else touched: the schema
    takes its name, the estimate its bytes per row, scratch and steadiness, the plan its job,
    and the prediction its form from its fact (as summary.json carries it)."""
    import os
    import shutil
    import subprocess
    import sys

    from support.paths import REPO

    repo = tmp_path / "repo"
    shutil.copytree(REPO / "workflow", repo / "workflow", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    (repo / "resources").symlink_to(REPO / "resources")
    (repo / "workflow" / "catbench" / "load" / "strategies" / "toy.py").write_text(TOY)
    env = {**os.environ, "PYTHONPATH": f"{repo / 'workflow'}{os.pathsep}{REPO / 'tests'}"}
    r = subprocess.run([sys.executable, "-c", CHECK, str(repo), str(tmp_path / "results")], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "toy strategy: valid" in r.stdout, r.stdout + r.stderr


TOY_ENGINE = '''"""A toy engine: Aria, MariaDB's crash-safe MyISAM."""

from . import Engine

NAME = "aria"
ORDER = 99

ENGINE = Engine(name=NAME, sql_name="Aria", plugin=None, settings={}, table_files="{database}/{table}*.MA[DI]",
                cache_variable="aria_pagecache_buffer_size", miss_counter="Aria_pagecache_reads",
                transactional=False, label="Aria", cache_words="Aria page cache", marker="D", curve_style=("--", "D"))
'''
CHECK_ENGINE = '''
import sys
import catbench
assert catbench.__file__.startswith(sys.argv[1]), catbench.__file__
from catbench.core.infra.config import validate
from catbench.core.index.table import ENGINES
from catbench.load.strategies import load_pairs
from catbench.predict.coverage import load_form
from catbench.report.at_scale import ENGINE_NAMES
from catbench.report.plots.prediction import ENGINE_MARKER
from catbench.report.plots.style import ENGINE_STYLE
cfg = validate({"load": {"engines": ["innodb", "aria"], "strategies": ["one-file-at-a-time", "sorted"]}})
assert list(ENGINES)[-1] == "aria" and ENGINES["aria"].sql_name == "Aria"
pairs = load_pairs(cfg["load"]["strategies"], cfg["load"]["engines"])[0]
assert ("aria", "one-file-at-a-time") in pairs and ("aria", "sorted") in pairs, pairs
assert ENGINE_NAMES["aria"] == "Aria" and ENGINE_MARKER["aria"] == "D" and ENGINE_STYLE["aria"] == ("--", "D")
assert load_form("aria", "one-file-at-a-time") == "btree-misses"
print("toy engine: valid")
'''


def test_a_toy_engine_is_its_module_alone(tmp_path):
    """A copy of the package with one more engine module, nothing else touched: the schema
    takes its name, the loads pair it with the strategies, the report its label and markers."""
    import os
    import shutil
    import subprocess
    import sys

    from support.paths import REPO

    repo = tmp_path / "repo"
    shutil.copytree(REPO / "workflow", repo / "workflow", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    (repo / "resources").symlink_to(REPO / "resources")
    (repo / "workflow" / "catbench" / "core" / "index" / "engines" / "aria.py").write_text(TOY_ENGINE)
    env = {**os.environ, "PYTHONPATH": f"{repo / 'workflow'}{os.pathsep}{REPO / 'tests'}"}
    r = subprocess.run([sys.executable, "-c", CHECK_ENGINE, str(repo)], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and "toy engine: valid" in r.stdout, r.stdout + r.stderr


def test_the_schema_and_the_workflow_take_every_engine_and_variant_of_the_registry():
    from catbench.core.index.table import ENGINES, VARIANTS
    from catbench.core.infra.config import load_schema
    root = Path(__file__).resolve().parents[1]
    load = load_schema()["properties"]["load"]
    assert load["properties"]["engines"]["items"]["enum"] == list(ENGINES)
    assert load["properties"]["variants"]["items"]["enum"] == list(VARIANTS)
    from catbench.cli.workflow.dag import Dag
    assert (Dag.engines, Dag.variants) == (tuple(ENGINES), tuple(VARIANTS))
    assert '"|".join(RUN.engines)' in (root / "Snakefile").read_text()


def test_every_engines_plugin_is_one_the_server_knows_how_to_load():
    # the engine names its plugin; the server layer owns how a plugin is loaded (binaries.PLUGINS)
    from catbench.core.index.table import ENGINES
    from catbench.core.server.binaries import PLUGINS
    assert {e.plugin for e in ENGINES.values() if e.plugin} == set(PLUGINS)
