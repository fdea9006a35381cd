"""config/README.md's key tables, written from the schema (``catbench config-readme``,
``make config-readme``): one table per section between ``<!-- keys:begin <section> -->`` and
``<!-- keys:end <section> -->``, a row per key (path, type, default, description), keys marked
``x-advanced`` in a second table. Everything outside the markers is the README's own prose,
kept as written; the schema is the one place a key's meaning and default are written."""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from . import load_schema, read_file
from ..resources import repo_dir

TOP = "top"             # the marker of the top-level keys that are no section
BEGIN = re.compile(r"^<!-- keys:begin (\S+) -->$")
HEADER = ["| key | type | default | meaning |", "|---|---|---|---|"]


@dataclass(frozen=True)
class Row:
    key: str
    node: dict
    section: str
    advanced: bool = False      # x-advanced on the key or on the list or map that holds it


def keys(node: dict, prefix: str = "", section: str | None = None, advanced: bool = False) -> list[Row]:
    """The table rows: every key that holds a value, as config/README.md names it (a map of named
    entries as ``<name>``, a list of mappings' fields as ``[]``; a free-form mapping one key)."""
    out = []
    for name, sub in node.get("properties", {}).items():
        path, sect = f"{prefix}{name}", section or (name if _is_section(sub) else TOP)
        extra, adv = sub.get("additionalProperties"), advanced or bool(sub.get("x-advanced"))
        if "properties" in sub:
            out += keys(sub, path + ".", sect, adv)
        elif isinstance(extra, dict) and "properties" in extra:
            out += keys(extra, path + ".<name>.", sect, adv)
        elif isinstance(sub.get("items"), dict) and "properties" in sub["items"]:
            out.append(Row(path, sub, sect, adv))
            out += keys(sub["items"], path + "[].", sect, adv)
        else:
            out.append(Row(path, sub, sect, adv))
    return out


def _is_section(sub: dict) -> bool:
    extra = sub.get("additionalProperties")
    return "properties" in sub or (isinstance(extra, dict) and "properties" in extra)


def undescribed(node: dict, prefix: str = "") -> list[str]:
    """Every property at every depth (sections, fields of list items and of named entries
    included) that has no ``description``."""
    out = []
    for name, sub in node.get("properties", {}).items():
        path = f"{prefix}{name}"
        if not str(sub.get("description", "")).strip():
            out.append(path)
        out += undescribed(sub, path + ".")
        for part, mark in (("additionalProperties", ".<name>."), ("items", "[].")):
            if isinstance(sub.get(part), dict):
                out += undescribed(sub[part], path + mark)
    return out


def _flow(value) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=10**6, allow_unicode=True, sort_keys=False)
    return text.strip().removesuffix("...").strip()


def _bounds(node: dict) -> str:
    marks = (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"), ("exclusiveMaximum", "<"))
    return ", ".join(f"{sign} {_flow(node[k])}" for k, sign in marks if k in node)


def type_of(node: dict) -> str:
    """A key's type in words: enums list their choices, numbers their bounds."""
    if "enum" in node:
        return "one of " + ", ".join(f"`{_flow(v)}`" for v in node["enum"])
    if "const" in node:
        return f"`{_flow(node['const'])}`"
    if "anyOf" in node:
        return " or ".join(type_of(s) for s in node["anyOf"])
    types = node.get("type", [])
    types = types if isinstance(types, list) else [types]
    words = []
    for t in types:
        if t == "array":
            words.append("list of " + (type_of(node["items"]) if node.get("items") else "values"))
        elif t == "object":
            words.append("mapping")
        elif t in ("integer", "number") and _bounds(node) and len(types) <= 2:
            words.append(f"{t} {_bounds(node)}")
        elif t != "null":
            words.append(t)
    if "null" in types:
        words.append("null")
    return " or ".join(words) or "any"


def _at(config: dict, key: str):
    """The value ``config`` sets at ``key``, or a sentinel when it sets none (or cannot)."""
    value = config
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return _UNSET
        value = value[part]
    return value


_UNSET = object()


def default_of(row: Row, config: dict) -> str:
    """The schema's default, and the default run's (config/config.yaml) where it differs."""
    node = row.node
    text = f"`{_flow(node['default'])}`" if "default" in node else "—"
    given = _at(config, row.key) if "<" not in row.key and "[]" not in row.key else _UNSET
    if given is not _UNSET and given != node.get("default", _UNSET):
        text += f" (config: `{_flow(given)}`)"
    return text


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def table(rows: list[Row], config: dict) -> list[str]:
    return HEADER + [f"| `{r.key}` | {_cell(type_of(r.node))} | {_cell(default_of(r, config))} | "
                     f"{_cell(r.node.get('description', ''))} |" for r in rows]


def section_block(name: str, schema: dict, config: dict) -> list[str]:
    """The lines between a section's markers: its table, its advanced keys' table after it."""
    rows = [r for r in keys(schema) if r.section == name]
    if not rows:
        raise ValueError(f"config/README.md: marker keys:begin {name}: the schema has no such section")
    main = [r for r in rows if not r.advanced]
    advanced = [r for r in rows if r.advanced]
    out = []
    whole = schema["properties"].get(name, {})
    if name != TOP and isinstance(whole.get("default"), dict) and whole["default"]:
        out += [f"Default of the whole section: `{_flow(whole['default'])}`.", ""]
    out += table(main, config) if main else []
    if advanced:
        out += (["", "Advanced:", ""] if main else []) + table(advanced, config)
    return out


def render(text: str, schema: dict | None = None, config: dict | None = None) -> str:
    """``text`` (config/README.md) with every marked section's tables written from the schema."""
    schema = schema or load_schema()
    config = config if config is not None else _default_config()
    lines, out, seen = text.split("\n"), [], []
    i = 0
    while i < len(lines):
        out.append(lines[i])
        m = BEGIN.match(lines[i])
        i += 1
        if not m:
            continue
        name, end = m.group(1), f"<!-- keys:end {m.group(1)} -->"
        try:
            j = lines.index(end, i)
        except ValueError:
            raise ValueError(f"config/README.md: keys:begin {name} without its {end}") from None
        out += section_block(name, schema, config) + [end]
        seen.append(name)
        i = j + 1
    unmarked = sorted({r.section for r in keys(schema)} - set(seen))
    if unmarked:
        raise ValueError(f"config/README.md: no keys:begin marker for section(s) {', '.join(unmarked)}")
    return "\n".join(out)


def first_difference(expected: str, actual: str) -> str | None:
    """None when the two READMEs are equal, else where they first differ, naming the key."""
    want, have = expected.split("\n"), actual.split("\n")
    for n, (a, b) in enumerate(zip(want, have), 1):
        if a != b:
            key = re.match(r"\| `([^`]+)`", a) or re.match(r"\| `([^`]+)`", b)
            what = f"key '{key.group(1)}'" if key else f"{a[:60]!r}"
            return f"config/README.md:{n}: {what} differs from the schema's (run make config-readme)"
    if len(want) != len(have):
        return f"config/README.md: {len(have)} lines, the schema gives {len(want)} (run make config-readme)"
    return None


def readme_path():
    return repo_dir() / "config" / "README.md"


def _default_config() -> dict:
    return read_file(repo_dir() / "config" / "config.yaml", "the default config")
