"""The schema's kind lists come from the registries' modules: a new restart kind or loading
strategy is its module alone, and a config naming it validates."""

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
    with pytest.raises(registries.RegistryError, match="odd.py: KIND must be a string and ORDER an integer"):
        registries.declared(kinds, "KIND")
