"""The query engines, in one table: the CLI's ``--query-engine`` choices and the dispatch read
it. An engine is its entry here and its module: a ``run(spec, paths, where) -> summary``
function (``run_queries.py`` holds the first two, ``lsdb/run.py`` the third); a new one over the Parquet chunk files
can reuse ``run_queries_duckdb`` with an engine class of its own. Named by text
(``module:function``), so reading the table loads no engine."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class QueryEngine:
    name: str
    runner: str         # "<module of this package>:<function>", run(spec, paths, where) -> summary
    on_target: bool     # a private server on each storage target; else once over the Parquet files


@dataclass(frozen=True)
class QueryLocation:
    """Where a query job runs: its storage target's name (for an engine over the Parquet files
    a label, ``parquet``), and for an engine on a target its directory there and whether the
    server's datadir is kept afterwards."""
    target: str
    path: Path | None = None
    keep_data: bool = False


QUERY_ENGINES = {e.name: e for e in (
    QueryEngine("mysql", "run_queries:run_queries", on_target=True),      # Qserv's plan, one query per chunk
    QueryEngine("duckdb", "run_queries:run_queries_duckdb", on_target=False),
    QueryEngine("lsdb", "lsdb.run:run_queries_lsdb", on_target=True),       # HATS on the target, LSDB on Dask
)}


def run_query_engine(name: str, spec, paths, where: QueryLocation) -> dict:
    """The suite with query engine ``name``: its runner's summary."""
    module, _, function = QUERY_ENGINES[name].runner.partition(":")
    return getattr(importlib.import_module(f"{__package__}.{module}"), function)(spec, paths, where)
