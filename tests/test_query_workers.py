"""The mysql engine over several worker servers (queries.workers): three private servers on
127.0.0.1, each holding a third of the chunks, answer every query as one server and DuckDB do,
and every worker stops on every way out."""

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from catbench.core.infra.config import section
from catbench.query import run_queries as query_run
from catbench.query.check import check_answers
from catbench.query.placement import place
from catbench.query.query_engines import QueryLocation
from catbench.query.run_queries import QueryPaths, run_queries, run_queries_duckdb
from catbench.query.spec import QuerySpec
from catbench.query.suite import QUERY_NAMES, QueryError
from support.servers import servers_under
from support.querycat import build, small_config

pytestmark = pytest.mark.server


def _config(workers: int) -> dict:
    cfg = small_config()
    cfg["queries"] = section("queries", {**cfg["queries"], "workers": workers, "cold": False,
                                         "concurrency": {"streams": 0}})
    cfg["server"] = {**cfg["server"], "tcp": True}
    return cfg


@pytest.fixture(scope="module")
def workers_catalog():
    root = Path(tempfile.mkdtemp(prefix="cbqw-", dir="/tmp"))
    try:
        build(small_config(), root)
        yield root
    finally:
        leftover = servers_under(root)
        shutil.rmtree(root, ignore_errors=True)
        assert not leftover, f"servers left running: {leftover}"


def test_three_workers_answer_as_one_server_and_duckdb(workers_catalog):
    root = workers_catalog
    paths = lambda out: QueryPaths(root / "chunks", root / "index/input", root / out)  # noqa: E731
    one = run_queries(QuerySpec.of(_config(1)), paths("out/one/mysql"), QueryLocation("one", root / "t-one"))
    cfg = _config(3)
    three = run_queries(QuerySpec.of(cfg, {"params": one["params"]}), paths("out/three/mysql"),
                        QueryLocation("three", root / "t-three"))
    duck = run_queries_duckdb(QuerySpec.of(cfg, {"params": one["params"]}), QueryPaths(root / "chunks", None,
                              root / "out/parquet/duckdb"), QueryLocation("parquet"))
    res = check_answers([root / "out/parquet/duckdb", root / "out/one/mysql", root / "out/three/mysql"])
    assert res["ok"] and set(res["queries"]) == set(QUERY_NAMES)
    assert three["digests"] == one["digests"] == duck["digests"]
    # each worker held its share of the chunks and loaded it
    shares = three["load"]["workers"]
    assert len(shares) == 3 and sum(w["chunks"] for w in shares) == three["chunks"]
    assert max(w["chunks"] for w in shares) - min(w["chunks"] for w in shares) <= 1
    assert sum(w["rows"] for w in shares) == one["load"]["chunk_tables"]["rows"]
    assert three["workers"] == 3 and json.loads((root / "out/three/mysql/summary.json").read_text())["workers"] == 3
    assert not servers_under(root)


def test_every_worker_stops_when_the_stage_fails_after_they_started(workers_catalog, monkeypatch):
    def fail(*a, **kw):
        assert len(servers_under(workers_catalog / "t-fail")) == 3    # all three were running
        raise RuntimeError("stopped in the middle")
    monkeypatch.setattr(query_run, "_measure_on_server", fail)
    with pytest.raises(RuntimeError, match="stopped in the middle"):
        run_queries(QuerySpec.of(_config(3)), QueryPaths(workers_catalog / "chunks", workers_catalog / "index/input",
                    workers_catalog / "out/fail"), QueryLocation("fail", workers_catalog / "t-fail"))
    assert not servers_under(workers_catalog / "t-fail") and not (workers_catalog / "out/fail").exists()


def test_more_workers_than_chunks_is_refused_naming_the_key():
    with pytest.raises(QueryError, match="'queries.workers': 4 workers for 3 chunks"):
        place([5, 1, 9], 4)
    assert place([9, 1, 5, 7], 2) == {1: 0, 5: 1, 7: 0, 9: 1}
