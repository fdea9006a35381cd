"""The schema's lists of kinds that a registry of modules owns: ``{x-registry: [folder,
CONSTANT]}`` in the schema stands for the names the modules of ``workflow/catbench/<folder>``
declare (``CONSTANT = "<name>"``), in their ``ORDER``; ``{x-registry: [resources/<folder>,
HEADER]}`` for the names of the SQL files there (``<name>.sql``), in the order their
``-- HEADER: N`` line gives. They are read as text, not imported: validating a config loads
no stage. So a new restart kind, loading strategy or query is its module (or SQL file)
alone; the schema, the CLI's choices and the rules follow."""

from __future__ import annotations

import re
from pathlib import Path

from ..resources import resources_dir

PACKAGE = Path(__file__).resolve().parents[3]     # workflow/catbench
KEY = "x-registry"


class RegistryError(RuntimeError):
    """A registry module that does not declare its name or place plainly."""


def declared(folder: Path, constant: str) -> list[str]:
    """The ``constant`` of every module of ``folder`` that has one, in the modules' ``ORDER``:
    both plain top-level lines (``NAME = "x"``, ``ORDER = 3``), read as text (a regex, not a
    parse: every validating job reads these files at its start)."""
    found = []
    for path in sorted(folder.glob("*.py")):
        text = path.read_text()
        name = re.search(rf"^{constant} = ([\"'])([^\"']+)\1", text, re.M)
        if name is None:
            if re.search(rf"^{constant}\b", text, re.M):
                raise RegistryError(f"{path}: {constant} must be a string and ORDER an integer, both plain constants")
            continue
        order = re.search(r"^ORDER = (-?\d+)\b", text, re.M)
        if order is None:
            raise RegistryError(f"{path}: {constant} must be a string and ORDER an integer, both plain constants")
        found.append((int(order.group(1)), name.group(2)))
    return _in_order(folder, found, "two modules share an ORDER")


def placed(folder: Path, header: str) -> list[str]:
    """The names of ``folder``'s SQL files (``<name>.sql``), in the order their ``-- header: N``
    line gives (a query of ``resources/queries``: ``-- place: 3``)."""
    found = []
    for path in sorted(folder.glob("*.sql")):
        place = re.search(rf"^--\s*{header}:\s*(-?\d+)\s*$", path.read_text(), re.M)
        if place is None:
            raise RegistryError(f"{path}: no '-- {header}: <integer>' line (its place among its siblings)")
        found.append((int(place.group(1)), path.stem))
    return _in_order(folder, found, f"two files share a {header}")


def _in_order(folder: Path, found: list[tuple[int, str]], clash: str) -> list[str]:
    """The names of (order, name) pairs by their order, which must be unique (not dense: a
    new entry takes a free place without renumbering its siblings)."""
    orders = [o for o, _ in found]
    if len(set(orders)) != len(orders):
        raise RegistryError(f"{folder}: {clash} ({sorted(orders)})")
    return [name for _, name in sorted(found)]


def names(folder: str, constant: str) -> list[str]:
    """The names ``{x-registry: [folder, constant]}`` stands for."""
    if folder.startswith("resources/"):
        return placed(resources_dir() / folder.removeprefix("resources/"), constant)
    return declared(PACKAGE / folder, constant)


def expand(node):
    """``node`` (a loaded schema) with every ``{x-registry: [folder, CONSTANT]}`` replaced by the
    names: an ``enum`` where it stood alone among ``items``' keys, the list itself as a default."""
    if isinstance(node, dict):
        if KEY in node:
            return {**{k: expand(v) for k, v in node.items() if k != KEY}, "enum": names(*node[KEY])}
        out = {k: expand(v) for k, v in node.items()}
        if isinstance(node.get("default"), dict) and KEY in node["default"]:
            out["default"] = list(out["default"]["enum"])
        return out
    if isinstance(node, list):
        return [expand(v) for v in node]
    return node
