"""The documentation holds together: every relative link of a tracked Markdown file
points at a file that exists, and config/README.md has exactly one table row per key of
the config schema, in tables that render as tables (no blank line inside one)."""

import re
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
CONFIG_README = REPO / "config" / "README.md"

# [text](target) and [text](target "title"); images too. Not inside `code`.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def tracked_markdown() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "*.md"], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout
    return [REPO / p for p in out.split("\n") if p and (REPO / p).is_file()]


def relative_links(text: str) -> list[tuple[int, str]]:
    links, fenced = [], False
    for n, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
                continue  # http(s), mailto, ...; a pure anchor
            links.append((n, target.split("#", 1)[0]))
    return links


def test_link_pattern():
    text = ("[a](docs/x.md) [b](https://e.org) [c](#top) [d](../y.md#sec) `[e](no.md)`\n"
            "```\n[f](fenced.md)\n```\n![g](img.png \"title\") [h](mailto:a@b.c)")
    assert [t for _, t in relative_links(text)] == ["docs/x.md", "../y.md", "img.png"]


@pytest.mark.parametrize("md", tracked_markdown(), ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(md):
    broken = [f"{md.relative_to(REPO)}:{n}: {t}" for n, t in relative_links(md.read_text())
              if not (md.parent / t).exists()]
    assert not broken, "broken links:\n" + "\n".join(broken)


# -- config/README.md against the schema ----------------------------------------------

def schema_keys(node: dict, prefix: str = "") -> list[str]:
    """Dotted key paths as config/README.md names them: a section's keys one by one,
    a map of named entries as `<name>` (`targets.<name>.path`), a list of mappings and each
    of their fields (`catalog.density.clouds`, `catalog.density.clouds[].peak`), and a
    free-form mapping (`server.settings`, `queries.parameters`) as one key."""
    keys = []
    for name, sub in node.get("properties", {}).items():
        path = f"{prefix}{name}"
        if "properties" in sub:
            keys += schema_keys(sub, path + ".")
        elif isinstance(sub.get("additionalProperties"), dict) \
                and "properties" in sub["additionalProperties"]:
            keys += schema_keys(sub["additionalProperties"], path + ".<name>.")
        elif isinstance(sub.get("items"), dict) and "properties" in sub["items"]:
            keys += [path] + schema_keys(sub["items"], path + "[].")
        else:
            keys.append(path)
    return keys


def table_blocks(lines: list[str]) -> list[list[tuple[int, str]]]:
    """Runs of consecutive lines that start with '|', with their line numbers."""
    blocks, cur = [], []
    for n, line in enumerate(lines, 1):
        if line.startswith("|"):
            cur.append((n, line))
        elif cur:
            blocks.append(cur)
            cur = []
    if cur:
        blocks.append(cur)
    return blocks


def is_separator(line: str) -> bool:
    return bool(re.fullmatch(r"\|(\s*:?-{3,}:?\s*\|)+\s*", line))


def readme_row_keys(lines: list[str]) -> list[str]:
    """The keys each table row names: the first cell's backticked names; a later name
    without a dot is a sibling of the first (`catalog.sky.ra_min_deg`, `ra_max_deg`),
    and trailing `<placeholder>` parts name the mapping itself
    (`queries.parameters.<Q>.<name>` is `queries.parameters`)."""
    keys = []
    for block in table_blocks(lines):
        if len(block) < 2 or not is_separator(block[1][1]):
            continue
        for _, row in block[2:]:
            names = re.findall(r"`([^`]+)`", row.split("|")[1])
            if not names:
                continue
            first = names[0].split(".")
            while len(first) > 1 and first[-1].startswith("<"):
                first.pop()
            keys.append(".".join(first))
            for other in names[1:]:
                keys.append(".".join(first[:-1] + [other]) if "." not in other else other)
    return keys


def test_config_readme_tables_have_no_blank_line_inside():
    lines = CONFIG_README.read_text().split("\n")
    for block in table_blocks(lines):
        n = block[0][0]
        assert len(block) >= 2 and is_separator(block[1][1]), \
            f"config/README.md:{n}: a table without a header and separator row " \
            "(a blank line inside a table ends it)"


def test_config_readme_has_one_row_per_schema_key():
    keys = schema_keys(yaml.safe_load(SCHEMA.read_text()))
    assert "targets.<name>.path" in keys and "cluster.load.after_s" in keys
    rows = readme_row_keys(CONFIG_README.read_text().split("\n"))
    missing = sorted(set(keys) - set(rows))
    unknown = sorted(set(rows) - set(keys))
    twice = sorted({k for k in rows if rows.count(k) > 1})
    assert not missing, f"schema keys without a row in config/README.md: {missing}"
    assert not unknown, f"config/README.md rows for keys the schema lacks: {unknown}"
    assert not twice, f"keys with more than one row in config/README.md: {twice}"


MODEL_MD = REPO / "workflow" / "catbench" / "predict" / "model.md"
PREDICT_PKG = REPO / "workflow" / "catbench" / "predict"


def _notation_rows() -> list[tuple[str, str, str]]:
    """(symbol, code cell, JSON cell) of model.md's Notation table."""
    text = MODEL_MD.read_text().split("## Notation", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| symbol")]
    return [(r[0], r[2], r[3]) for r in rows]


def _code_names(cell: str) -> list[str]:
    """The backticked names of a code cell, a bare `.attr` given the class before it:
    `RateCurve.x_c`, `.p` -> RateCurve.x_c, RateCurve.p."""
    out, owner = [], None
    for name in re.findall(r"`([^`]+)`", cell):
        if name.startswith("."):
            name = f"{owner}{name}"
        owner = name.split(".")[0]
        out.append(name)
    return out


def test_model_md_notation_names_code_that_exists_and_json_keys_the_code_writes():
    """Every code name of model.md's Notation table resolves (a class's field, property or
    method; a predict module's function; a config key) and every JSON key in it is a string the
    predict package writes: renaming one side alone fails here."""
    import dataclasses
    import importlib
    classes = {"RateCurve": "rate", "LoadFit": "fitted", "LoadRepetition": "runs"}
    schema = SCHEMA.read_text()
    source = "\n".join(p.read_text() for p in PREDICT_PKG.rglob("*.py"))
    rows = _notation_rows()
    assert len(rows) >= 15, rows
    missing = []
    for symbol, code, js in rows:
        for name in _code_names(code):
            head, _, attr = name.partition(".")
            if head == "predict":                     # a config key
                ok = re.search(rf"^\s+{attr}:", schema, re.M) is not None
            elif head in classes:
                cls = getattr(importlib.import_module(f"catbench.predict.{classes[head]}"), head)
                ok = not attr or attr in {f.name for f in dataclasses.fields(cls)} | set(dir(cls))
            elif attr:
                ok = hasattr(importlib.import_module(f"catbench.predict.{head}"), attr)
            else:                                     # a method of the class named before it
                ok = any(hasattr(getattr(importlib.import_module(f"catbench.predict.{m}"), c), head)
                         for c, m in classes.items())
            if not ok:
                missing.append(f"{symbol}: code {name}")
        for key in re.findall(r"`([a-z0-9_]+)`", js):
            if f'"{key}"' not in source:
                missing.append(f"{symbol}: JSON {key}")
    assert not missing, missing
