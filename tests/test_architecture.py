"""The package's shape, read from its source with ``ast`` so it stays as ARCHITECTURE.md
says: stages over a small core, no import cycles (function-local imports count), no
stage importing another, small modules and functions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
PKG = TESTS.parent / "workflow" / "catbench"
STAGES = {"prepare", "load", "fio", "query", "restart", "report", "predict"}
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 100
MAX_MODULES_PER_FOLDER = 12


def _modules(root: Path = PKG) -> dict[str, Path]:
    out = {}
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def _base(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The module ``from <base> import ...`` names, absolute."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if path.name != "__init__.py":
        base = base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> list[str]:
    prefix = _base(module, path, node)
    if not prefix.startswith("catbench"):
        return []
    # "from pkg import mod" names a module; "from mod import name" names the module
    return [f"{prefix}.{a.name}" for a in node.names] + [prefix]


def holds_code(source: str) -> bool:
    """Whether an ``__init__.py`` does more than re-export: any top-level statement but its
    docstring, imports and ``__all__``."""
    def plain(n):
        return (isinstance(n, (ast.Import, ast.ImportFrom))
                or (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))
                or (isinstance(n, ast.Assign) and [ast.unparse(t) for t in n.targets] == ["__all__"]))
    return not all(plain(n) for n in ast.parse(source).body)


def _named(module: str, path: Path, node: ast.AST, mods: dict[str, Path]) -> list[str]:
    """The modules an import statement runs: each submodule it names, and the module (or
    package) it takes a name from."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.startswith("catbench")]
    if not isinstance(node, ast.ImportFrom):
        return []
    prefix = _base(module, path, node)
    if not prefix.startswith("catbench"):
        return []
    subs = [f"{prefix}.{a.name}" for a in node.names if f"{prefix}.{a.name}" in mods]
    return subs + ([prefix] if len(subs) < len(node.names) else [])


def import_graph(root: Path = PKG) -> dict[str, set[str]]:
    """Module -> the package's modules it imports, function-local imports included. An
    ``__init__.py`` is a node when it holds code (config/, the registries' packages): a
    cycle through one fails at import time like any other; one that only re-exports is not."""
    mods = _modules(root)
    coded = {m for m, p in mods.items() if p.name != "__init__.py" or holds_code(p.read_text())}
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        for node in ast.walk(ast.parse(p.read_text())):
            for t in _named(m, p, node, mods):
                # the most specific module named (a name imported from a module is not one)
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t and t != m and t != "catbench" and t in coded:
                    graph[m].add(t)
    return graph


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 else "top"


def import_cycles(graph: dict[str, set[str]]) -> list[str]:
    state: dict[str, int] = {}
    cycles = []

    def visit(m, stack):
        state[m] = 1
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycles.append(" -> ".join(stack[stack.index(n):] + [n]))
            elif n not in state:
                visit(n, stack + [n])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    return cycles


def test_no_import_cycles():
    cycles = import_cycles(import_graph())
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_stages_import_only_core():
    bad = []
    for m, deps in import_graph().items():
        layer = _layer(m)
        for d in deps:
            other = _layer(d)
            if other == layer or layer in ("cli", "top"):
                continue
            if layer == "core" or (layer in STAGES and other != "core"):
                bad.append(f"{m} imports {d}")
    assert not bad, "the dependency rule (stages import core, never each other):\n" + "\n".join(sorted(bad))


def test_report_reads_files_not_stages():
    graph = import_graph()
    bad = [f"{m} imports {d}" for m, deps in graph.items() if _layer(m) == "report"
           for d in deps if _layer(d) not in ("report", "core")]
    assert not bad


@pytest.mark.parametrize("path", sorted(PKG.rglob("*.py")), ids=lambda p: str(p.relative_to(PKG)))
def test_small_modules_and_functions(path):
    text = path.read_text()
    n = len(text.splitlines())
    assert n <= MAX_MODULE_LINES, f"{path} has {n} lines, over {MAX_MODULE_LINES}"
    long = [f"{n.name} ({n.end_lineno - n.lineno + 1} lines)" for n in ast.walk(ast.parse(text))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.end_lineno - n.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, f"{path}: functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_folders_hold_at_most_a_dozen_modules():
    for folder in [PKG, *(d for d in PKG.iterdir() if d.is_dir() and (d / "__init__.py").exists())]:
        n = len([p for p in folder.glob("*.py") if p.name != "__init__.py"])
        assert n <= MAX_MODULES_PER_FOLDER, f"{folder} holds {n} modules"


def test_the_graph_sees_function_local_imports(tmp_path):
    # the checker itself: a local import must count, or cycles could hide behind one
    graph = import_graph()
    assert "catbench.core.index.table" in graph["catbench.load.strategies"]


def test_the_graph_sees_cycles_through_an_init_that_holds_code(tmp_path):
    # the checker itself: config/__init__.py -> files -> targets -> config hid there once
    pkg = tmp_path / "catbench"
    (pkg / "conf").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "conf" / "__init__.py").write_text("def rows():\n    from ..files import total\n    return total()\n")
    (pkg / "files.py").write_text("def staged():\n    from .targets import Bad\n    raise Bad\n")
    (pkg / "targets.py").write_text("from .conf import rows\nclass Bad(Exception):\n    pass\n")
    (pkg / "reexports").mkdir()
    (pkg / "reexports" / "__init__.py").write_text('"""doc"""\nfrom .files import staged\n__all__ = ["staged"]\n')
    (pkg / "reexports" / "files.py").write_text("from . import staged\n")
    assert import_cycles(import_graph(pkg)) == ["catbench.conf -> catbench.files -> catbench.targets -> catbench.conf"]


# -- the second floor: small signatures, specs, registries, core's layers -----------------

MAX_PARAMETERS = 8


def _parameters(fn: ast.FunctionDef) -> int:
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names) + bool(a.vararg) + bool(a.kwarg)


def test_no_function_takes_more_than_eight_parameters():
    wide = [f"{p.relative_to(PKG)}:{n.lineno} {n.name} ({_parameters(n)})" for p in sorted(PKG.rglob("*.py"))
            for n in ast.walk(ast.parse(p.read_text()))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and _parameters(n) > MAX_PARAMETERS]
    assert not wide, f"functions over {MAX_PARAMETERS} parameters (group them in a small dataclass):\n" + "\n".join(wide)


# The config helpers that fill in the schema's defaults or read it: the CLI applies the
# defaults once (validation) and hands a stage its spec, so a stage never calls these.
DEFAULT_FILLERS = {"section", "defaults", "check_section", "load_schema", "validate"}


def _fillers_used(module: str, path: Path) -> set[str]:
    used = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and any(t.endswith("core.infra.config") for t in _resolve(module, path, node)):
            used |= {a.name for a in node.names} & DEFAULT_FILLERS
    return used


def test_stages_read_their_spec_not_the_config_defaults():
    readers = {m for m, p in _modules().items() if _layer(m) in STAGES and _fillers_used(m, p)}
    assert not readers, f"stages filling in config defaults themselves: {sorted(readers)}"


# A stage reads the config only in its spec module(s) (``<stage>/spec.py``: ``LoadSpec.of`` ...);
# everything else is handed the spec. Seen from the source: a name ``cfg``/``config`` (argument,
# variable, attribute) or a config key read by its section and name (``x["load"]["time_limit_s"]``,
# ``x.get("load").get(...)``), the pairs taken from the schema.
CONFIG_NAMES = {"cfg", "config"}


def _key(node: ast.AST) -> str | None:
    """The string key of ``x["k"]`` or ``x.get("k", ...)``, and None for anything else."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return node.slice.value if isinstance(node.slice.value, str) else None
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return node.args[0].value
    return None


def _inner(node: ast.AST) -> ast.AST:
    return node.value if isinstance(node, ast.Subscript) else node.func.value


def config_reads(source: str, schema: dict) -> list[str]:
    """Where ``source`` takes, holds or reads the config dict: ``line: what``."""
    keys = {s: set((v or {}).get("properties") or ()) for s, v in schema.items()}
    found = []
    for node in ast.walk(ast.parse(source)):
        name = (node.arg if isinstance(node, ast.arg) else node.id if isinstance(node, ast.Name)
                else node.attr if isinstance(node, ast.Attribute) else None)
        if name in CONFIG_NAMES:
            found.append(f"{node.lineno}: {name}")
        key = _key(node)
        if key is not None:
            section = _key(_inner(node))
            if section in keys and key in keys[section]:
                found.append(f"{node.lineno}: {section}.{key}")
    return sorted(set(found), key=lambda f: int(f.split(":")[0]))


# The jobs' requests and the run's plan read the run's sizes (core/infra/jobs/sizing.py
# ``RunSizes.of``): core imports no stage, so the sizing model keeps its own view.
SIZED = {"catbench.core.infra.jobs.requests", "catbench.core.infra.jobs.plan"}


def test_stages_read_the_config_only_in_their_spec():
    schema = _schema()
    assert SIZED <= set(_modules())
    reads = {f"{p.relative_to(PKG)}:{r}" for m, p in _modules().items()
             if (_layer(m) in STAGES and p.name != "spec.py") or m in SIZED
             for r in config_reads(p.read_text(), schema)}
    assert not reads, ("stage modules reading the config dict (hand them their spec: <stage>/spec.py):\n"
                       + "\n".join(sorted(reads)))


def test_the_config_check_sees_what_it_forbids():
    schema = {"load": {"properties": {"time_limit_s": {}}}, "server": {"properties": {"settings": {}}}}
    src = ("def f(cfg, spec, summary):\n    a = spec['load']['time_limit_s']\n"
           "    b = spec.get('server', {}).get('settings')\n    c = summary['server']['timings']\n"
           "    return run.config, spec.time_limit_s\n")
    assert config_reads(src, schema) == ["1: cfg", "2: load.time_limit_s", "3: server.settings", "5: config"]


# core's layers, bottom up: each imports only its own and the ones below it.
CORE_LAYERS = ("sky", "infra", "server", "index")


def test_core_layers_import_only_downwards():
    bad = []
    for m, deps in import_graph().items():
        parts = m.split(".")
        if len(parts) < 4 or parts[1] != "core":
            continue
        mine = CORE_LAYERS.index(parts[2])
        for d in deps:
            theirs = d.split(".")
            if theirs[1] == "core" and len(theirs) > 2 and CORE_LAYERS.index(theirs[2]) > mine:
                bad.append(f"{m} imports {d}")
    assert not bad, f"core imports only downwards ({' < '.join(CORE_LAYERS)}):\n" + "\n".join(sorted(bad))


def test_core_holds_only_its_layers():
    core = PKG / "core"
    assert {p.name for p in core.iterdir() if p.suffix == ".py" and p.name != "__init__.py"} == set()
    assert {p.name for p in core.iterdir() if (p / "__init__.py").exists()} == set(CORE_LAYERS)


def _schema() -> dict:
    from catbench.core.infra.config import load_schema
    return load_schema()["properties"]


def test_the_cluster_kinds_the_schema_spells_out_are_the_stages():
    # not a registry (the schema lists them itself), so the two can drift apart; the registries'
    # lists are the schema's by construction: tests/test_config_registries.py checks that mechanism
    from catbench.restart.cluster.options import KINDS
    kinds = _schema()["cluster"]["properties"]["kinds"]
    assert kinds["items"]["enum"] == list(KINDS) == kinds["default"]


def test_each_strategy_module_declares_its_entry():
    import importlib

    from catbench.load.strategies import REGISTRY
    folder = PKG / "load" / "strategies"
    modules = [importlib.import_module(f"catbench.load.strategies.{p.stem}") for p in sorted(folder.glob("*.py"))
               if p.stem not in ("__init__", "base")]
    orders = [m.ORDER for m in modules]
    assert len(set(orders)) == len(orders), f"two strategies share an ORDER: {sorted(orders)}"
    assert {m.STRATEGY.name: m.STRATEGY for m in modules} == REGISTRY
    assert list(REGISTRY) == [m.STRATEGY.name for m in sorted(modules, key=lambda m: m.ORDER)]


def test_tables_and_plots_have_their_sql_and_captions():
    from catbench.report.plots import PLOTS
    from catbench.report.tables import TABLES
    res = PKG.parent.parent / "resources"
    assert {p.stem for p in (res / "sql").glob("*.sql") if not p.stem.startswith("udf_")} == set(TABLES)
    assert {p.stem for p in (res / "report").glob("plot_*.rst")} == {f"plot_{p}" for p in PLOTS}
    assert all((res / "report" / f"{t}.rst").exists() for t in TABLES)


def test_the_rules_take_their_lists_from_the_registries():
    from catbench.cli.workflow.dag import Dag
    from catbench.report.plots import ALWAYS
    from catbench.report.tables import TABLES
    assert Dag.table_names is TABLES and Dag.plot_names is ALWAYS
    text = (PKG.parent / "rules" / "report.smk").read_text()
    assert "TABLE_NAMES, PLOT_NAMES = RUN.table_names, RUN.plot_names" in text
    assert "TABLE_NAMES = [" not in text and "PLOT_NAMES = [" not in text


def test_the_rule_files_only_declare():
    """One call into the package (common.smk's Dag.of); the rule files import nothing else and
    define no function; common.smk stays short."""
    rules = sorted((PKG.parent / "rules").glob("*.smk")) + [PKG.parent.parent / "Snakefile"]
    imports = [f"{p.name}: {ln}" for p in rules if p.suffix == ".smk" for ln in p.read_text().splitlines()
               if ln.startswith(("from ", "import "))]
    assert imports == ["common.smk: from catbench.cli.workflow.dag import Dag"]
    defs = [f"{p.name}: {ln}" for p in rules for ln in p.read_text().splitlines() if ln.startswith("def ")]
    assert defs == []
    assert len((PKG.parent / "rules" / "common.smk").read_text().splitlines()) <= 100


def test_every_cli_family_lists_the_commands_it_adds():
    import argparse
    import importlib

    from catbench.cli.main import NOT_FAMILIES, families
    assert set(families()) == {p.stem for p in (PKG / "cli").glob("*.py")} - {"__init__", *NOT_FAMILIES}
    seen = []
    for family, commands in families().items():
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(f"catbench.cli.{family}").add_subcommands(sub)
        assert set(sub.choices) == set(commands), family
        assert all(p.get_default("func") is not None for p in sub.choices.values()), family
        seen += commands
    assert len(seen) == len(set(seen)), "a command in two families"


# ---- the test suite's own shape: test modules share builders through tests/support/ and
# fixtures through conftest.py, never by importing one another or editing sys.path

def _test_sources() -> list[Path]:
    return sorted(TESTS.rglob("*.py"))


def imported_test_modules(source: str) -> list[str]:
    """The test modules (test_*) a source imports."""
    out = []
    for node in ast.walk(ast.parse(source)):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
        out += [n for n in names if n.split(".")[-1].startswith("test_") or n.startswith("test_")]
    return out


def sys_path_edits(source: str) -> list[int]:
    """Lines that change sys.path (a call on it, an assignment to it or to an item of it)."""
    def is_sys_path(n):
        return isinstance(n, ast.Attribute) and n.attr == "path" and isinstance(n.value, ast.Name) \
            and n.value.id == "sys"
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and is_sys_path(node.func.value):
            lines.append(node.lineno)
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(is_sys_path(t) or (isinstance(t, ast.Subscript) and is_sys_path(t.value)) for t in targets):
                lines.append(node.lineno)
    return sorted(lines)


def test_no_test_module_imports_another_or_edits_sys_path():
    bad = []
    for path in _test_sources():
        text = path.read_text()
        bad += [f"{path.relative_to(TESTS)} imports {m}" for m in imported_test_modules(text)]
        bad += [f"{path.relative_to(TESTS)}:{n} edits sys.path" for n in sys_path_edits(text)]
    assert not bad, "shared test code goes to tests/support/ or conftest.py:\n" + "\n".join(bad)


def test_each_fixture_is_defined_once():
    where: dict[str, list[str]] = {}
    for path in _test_sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and any(
                    "fixture" in ast.unparse(d) for d in node.decorator_list):
                where.setdefault(node.name, []).append(str(path.relative_to(TESTS)))
    twice = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert not twice, f"fixtures defined more than once (one definition, in conftest.py if shared): {twice}"


def test_small_test_modules():
    big = [f"{p.relative_to(TESTS)} ({n} lines)" for p in _test_sources()
           if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES]
    assert not big, f"test modules over {MAX_MODULE_LINES} lines: {big}"


def test_the_test_checks_see_what_they_forbid():
    src = ("import sys\nfrom test_tables import make_run\nimport test_stats as s\n"
           "def f():\n    from test_x import y\n    sys.path.insert(0, 'x')\n"
           "sys.path = []\nsys.path[:0] = ['y']\nfrom support.runs import make_run\n")
    assert sorted(imported_test_modules(src)) == ["test_stats", "test_tables", "test_x"]
    assert sys_path_edits(src) == [6, 7, 8]
