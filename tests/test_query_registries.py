"""The query suite and the query engines are registries: a new query is its SQL file alone,
a new query engine its table entry and its module. Each is added to a copy of the repository
and run end to end over a small patch of Parquet chunk files (DuckDB, no server)."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from catbench.core.infra.config import load_schema
from catbench.core.infra.config import registries
from catbench.query.query_engines import QUERY_ENGINES
from catbench.query.suite import QUERY_NAMES
from support.paths import REPO

TOY_QUERY = """-- TOY: Objects north of the equator (a toy query).
-- place: 99
-- params: dec_min
-- dispatch: all
-- order: n
-- @query
SELECT COUNT(*) AS n FROM Object WHERE decl_PS > :dec_min
-- @chunk
SELECT COUNT(*) AS n FROM {Object} WHERE decl_PS > :dec_min
-- @merge
SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) AS n FROM partials
"""
TOY_ENGINE = '''"""A toy query engine: DuckDB's over the Parquet chunk files, under its own name."""

from .engines import DuckdbEngine
from .run_queries import run_queries_duckdb


class ToyEngine(DuckdbEngine):
    name = "toy"


def run(spec, paths, where):
    return run_queries_duckdb(spec, paths, where, ToyEngine)
'''
N = 500


def test_the_schema_lists_the_query_files_in_their_place_order(tmp_path):
    props = load_schema()["properties"]["queries"]["properties"]
    assert props["queries"]["items"]["enum"] == props["queries"]["default"] == list(QUERY_NAMES)
    assert props["parameters"]["propertyNames"]["enum"] == list(QUERY_NAMES)
    assert QUERY_NAMES == tuple(p.stem for p in sorted((REPO / "resources" / "queries").glob("*.sql"),
                                                       key=lambda p: QUERY_NAMES.index(p.stem)))
    (tmp_path / "B.sql").write_text("-- B\n-- place: 1\n")
    (tmp_path / "A.sql").write_text("-- A\n-- place: 7\n")
    assert registries.placed(tmp_path, "place") == ["B", "A"]
    (tmp_path / "C.sql").write_text("-- C\n-- place: 7\n")
    with pytest.raises(registries.RegistryError, match="two files share a place"):
        registries.placed(tmp_path, "place")
    (tmp_path / "C.sql").write_text("-- C\n")
    with pytest.raises(registries.RegistryError, match="C.sql: no '-- place: <integer>' line"):
        registries.placed(tmp_path, "place")


def test_the_cli_offers_the_table_s_query_engines():
    import argparse

    from catbench.cli.queries import add_subcommands
    sub = argparse.ArgumentParser().add_subparsers()
    add_subcommands(sub)
    action = next(a for a in sub.choices["queries"]._actions if a.dest == "query_engine")
    assert tuple(action.choices) == tuple(QUERY_ENGINES)


@pytest.fixture(scope="module")
def toy_repo(tmp_path_factory):
    """A copy of the repository with a toy query and a toy query engine, and a patch of N
    Objects (half north of the equator) in one chunk."""
    root = tmp_path_factory.mktemp("toy")
    repo = root / "repo"
    shutil.copytree(REPO / "workflow", repo / "workflow", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for entry in (REPO / "resources").iterdir():
        if entry.name != "queries":
            (repo / "resources").mkdir(exist_ok=True)
            (repo / "resources" / entry.name).symlink_to(entry)
    shutil.copytree(REPO / "resources" / "queries", repo / "resources" / "queries")
    (repo / "resources" / "queries" / "TOY.sql").write_text(TOY_QUERY)
    query = repo / "workflow" / "catbench" / "query"
    (query / "toy_engine.py").write_text(TOY_ENGINE)
    table = (query / "query_engines.py").read_text()
    assert table.count("\n)}\n") == 1
    (query / "query_engines.py").write_text(table.replace(
        "\n)}\n", '\n    QueryEngine("toy", "toy_engine:run", on_target=False),\n)}\n'))
    chunks = root / "results" / "chunks"
    for kind in ("Object", "Source"):
        (chunks / kind).mkdir(parents=True)
    rng = np.random.default_rng(3)
    dec = np.where(np.arange(N) % 2 == 0, 0.5, -0.5) + rng.random(N) * 0.1 - 0.05
    objects = {"objectId": np.arange(N), "chunkId": np.full(N, 7), "ra_PS": 10 + rng.random(N) * 0.1, "decl_PS": dec}
    pq.write_table(pa.table(objects), chunks / "Object" / "chunk_7.parquet")
    sources = {"sourceId": np.arange(N), "objectId": np.arange(N)}
    pq.write_table(pa.table(sources), chunks / "Source" / "chunk_7.parquet")
    (chunks / "chunks.tsv").write_text(f"chunkId\tobject_rows\tsource_rows\toverlap_rows\n7\t{N}\t{N}\t0\n")
    return root


def _catbench(root, *args):
    env = {**os.environ, "PYTHONPATH": str(root / "repo" / "workflow")}
    env.pop("CATBENCH_RESOURCES", None)
    r = subprocess.run([sys.executable, "-m", "catbench", *map(str, args)], env=env, cwd=root,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def _queries(root, engine: str, *names):
    out = root / "out" / engine
    _catbench(root, "queries", "--query-engine", engine, "--results", root / "results", "--config",
              '{"queries": {"parameters": {"TOY": {"dec_min": 0}}}}', "--out", out, "--queries", *names,
              "--no-cold", "--repetitions", "1", "--concurrency-streams", "0")
    return out


def test_a_toy_query_is_its_sql_file_alone(toy_repo):
    """The schema's enum and the CLI's --queries take the new file's name; the duckdb engine
    runs it with its parameter from the config and records its answer."""
    out = _queries(toy_repo, "duckdb", "TOY", "HV1")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["queries"] == ["TOY", "HV1"] and summary["params"]["TOY"] == {"dec_min": 0}
    answers = json.loads((out / "answers.json").read_text())
    assert answers["TOY"]["rows"] == [[N // 2]] and answers["HV1"]["rows"] == [[N]]


def test_a_toy_query_engine_is_its_table_entry_and_its_module(toy_repo):
    """--query-engine takes the new entry, the dispatch runs its module, and queries-check
    finds its answers equal to DuckDB's."""
    toy = _queries(toy_repo, "toy", "HV1", "HV3", "TOY")
    assert json.loads((toy / "summary.json").read_text())["query_engine"] == "toy"
    duck = _queries(toy_repo, "duckdb", "HV1", "HV3", "TOY")
    _catbench(toy_repo, "queries-check", "--inputs", duck, toy, "--out", toy_repo / "check.json")
    check = json.loads((toy_repo / "check.json").read_text())
    assert check["ok"] and set(check["queries"]) == {"HV1", "HV3", "TOY"}, check
