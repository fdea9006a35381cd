"""config/README.md's key tables are the schema's: every key described there, and the tables
between the README's keys markers exactly what ``catbench config-readme`` writes."""

import pytest

from catbench.core.infra.config import load_schema, readme


def test_every_schema_key_has_a_description():
    missing = readme.undescribed(load_schema())
    assert not missing, f"schema keys without a description: {missing}"


def test_config_readme_is_what_the_schema_generates():
    text = readme.readme_path().read_text()
    diff = readme.first_difference(readme.render(text), text)
    assert diff is None, diff


def test_a_stale_row_is_named():
    text = readme.readme_path().read_text()
    want = readme.render(text)
    stale = want.replace("| `seed` |", "| `seed` | ", 1).replace(
        "`catalog.patch.objects` | integer", "`catalog.patch.objects` | number", 1)
    assert "key 'seed'" in readme.first_difference(want, stale)
    assert readme.first_difference(want, want + "\n").endswith("(run make config-readme)")


def test_rows_types_and_defaults():
    schema = {"properties": {
        "a": {"type": "integer", "minimum": 1, "default": 3, "description": "d|e", "x-advanced": True},
        "s": {"type": "object", "description": "S", "properties": {
            "e": {"enum": ["x", "y"], "default": "x", "description": "E"},
            "l": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "string"}}},
                  "default": [], "description": "L", "x-advanced": True},
            "m": {"type": "object", "additionalProperties": {"type": "object", "properties": {
                "p": {"type": ["string", "null"], "default": None}}}}}}}}
    rows = readme.keys(schema)
    assert [(r.key, r.section) for r in rows] == [
        ("a", "top"), ("s.e", "s"), ("s.l", "s"), ("s.l[].n", "s"), ("s.m.<name>.p", "s")]
    assert readme.undescribed(schema) == ["s.l[].n", "s.m", "s.m.<name>.p"]
    assert [r.advanced for r in rows] == [True, False, True, True, False]   # a list's fields as the list
    assert readme.type_of(rows[0].node) == "integer ≥ 1"
    assert readme.type_of(rows[1].node) == "one of `x`, `y`"
    assert readme.type_of(rows[4].node) == "string or null"
    assert readme.default_of(rows[1], {"s": {"e": "y"}}) == "`x` (config: `y`)"
    top = readme.section_block("top", schema, {})
    assert top[-1] == "| `a` | integer ≥ 1 | `3` | d\\|e |"
    text = "intro\n<!-- keys:begin top -->\nold\n<!-- keys:end top -->\n<!-- keys:begin s -->\n<!-- keys:end s -->"
    assert readme.render(text, schema, {}).split("\n")[:3] == ["intro", "<!-- keys:begin top -->", "| key | type | default | meaning |"]
    with pytest.raises(ValueError, match="no keys:begin marker for section"):
        readme.render("intro", schema, {})
