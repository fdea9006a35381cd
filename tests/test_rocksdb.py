"""MyRocks (load.engines: rocksdb) with real private servers: the strategies that cannot run
on it are refused with their reason; the engine is a column of the final tables and the
report (every strategy's load and a repeated key on it: test_engines.py)."""

import csv
import re
from pathlib import Path

import pytest
from catbench.core.index.table import LoadError
from catbench.core.server.process import Launch, Server
from catbench.core.infra.settings import ServerError
from catbench.core.server.binaries import plugin_options
from catbench.load.comparison import write_not_run
from catbench.cli.storage import load_spec
from catbench.core.infra.targets import StorageTarget
from catbench.load.load_index import run_load_index
from catbench.load.spec import LoadCase
from catbench.load.strategies import REGISTRY, STRATEGIES, load_pairs
from catbench.report.html import make_report
from catbench.report.tables import make_tables
from support.indexinput import write_files
from support.runs import REPORT
from support.text import line_with

pytestmark = pytest.mark.server
ROCKSDB = [s for s in STRATEGIES if REGISTRY[s].supports("rocksdb")]
OPTS = dict(connections=3, batch_files=2, chunk_rows=700, sort_memory="64MB", transaction_rows=0, repetitions=1,
            sample_interval_s=0.2, lookup_threads=2, lookup_count=200, optimize_limit_s=0,
            settings={"rocksdb_block_cache_size": "8M", "innodb_buffer_pool_size": "8M"})


def run(root: Path, name: str, files, variant: str, strategy: str, engine: str = "rocksdb", out=None, **kw):
    return run_load_index(load_spec({"load": {**OPTS, **kw}}, checked=False), StorageTarget("tmpdisk", root / "target"), files,
                          out or root / "results" / name, LoadCase(variant, strategy, engine))


def test_every_strategy_declares_its_engines():
    assert set(ROCKSDB) == {"one-file-at-a-time", "parallel", "sorted", "sorted-parallel", "bulk",
                            "trans-partitioned"}
    pairs, skipped = load_pairs(["one-file-at-a-time", "deferred-pk"], ["innodb", "rocksdb"])
    assert pairs == [("innodb", "one-file-at-a-time"), ("innodb", "deferred-pk"), ("rocksdb", "one-file-at-a-time")]
    assert [(x["engine"], x["strategy"]) for x in skipped] == [("rocksdb", "deferred-pk")]
    assert "one transaction" in skipped[0]["reason"]
    with pytest.raises(LoadError, match="load.strategies.*load.engines"):
        load_pairs(["deferred-pk"], ["rocksdb"])
    with pytest.raises(LoadError, match="load.engines"):
        load_pairs(["one-file-at-a-time"], ["aria"])


def test_load_skip_leaves_out_the_pairs_it_names_and_refuses_a_typo():
    pairs, skipped = load_pairs(["sorted", "bulk"], ["innodb", "rocksdb"], ["rocksdb/sorted"])
    assert pairs == [("innodb", "sorted"), ("innodb", "bulk"), ("rocksdb", "bulk")]
    assert skipped == [{"engine": "rocksdb", "strategy": "sorted", "reason": "skipped by config key load.skip"}]
    with pytest.raises(LoadError, match="load.skip names rocksdb/sortd"):
        load_pairs(["sorted"], ["rocksdb"], ["rocksdb/sortd"])
    with pytest.raises(LoadError, match="none of config key load.strategies"):
        load_pairs(["sorted"], ["rocksdb"], ["rocksdb/sorted"])


def test_a_strategy_that_cannot_run_on_the_engine_is_refused(root):
    files = write_files(root / "in" / "refused", "bigint", 1, 10)
    # the strategy, the engine and the config keys that paired them
    with pytest.raises(LoadError, match=r"deferred-pk .*rocksdb.*load\.strategies, load\.engines"):
        run(root, "refused", files, "bigint", "deferred-pk")
    assert not (root / "target").exists() or not list((root / "target").glob("catbench-*rocksdb*"))


def test_a_missing_plugin_is_named_with_its_package(tmp_path):
    fake = tmp_path / "mariadbd"   # a server binary whose plugin_dir has no ha_rocksdb.so
    fake.write_text(f"#!/bin/sh\necho 'plugin-dir {tmp_path}/'\n")
    fake.chmod(0o755)
    with pytest.raises(ServerError, match="apt-get install mariadb-plugin-rocksdb.*load.engines"):
        plugin_options(str(fake), ("rocksdb",))
    assert plugin_options(str(fake), ()) == {}


def _csv(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_the_engine_is_a_column_of_the_tables_and_the_report(root):
    run_dir = root / "run"
    files = write_files(root / "in" / "report", "bigint", 4, 500)
    for engine in ("innodb", "rocksdb"):
        run(root, f"report-{engine}", files, "bigint", "one-file-at-a-time", engine=engine, repetitions=2,
            out=run_dir / "load" / "disk" / "bigint" / engine / "one-file-at-a-time")
    write_not_run(load_pairs(["one-file-at-a-time", "deferred-pk"], ["innodb", "rocksdb"])[1],
                  run_dir / "load" / "not_run.json")
    tables = make_tables(run_dir, report=REPORT)
    lt = {r["engine"]: r for r in _csv(tables["load_time"])}
    assert set(lt) == {"innodb", "rocksdb"} and all(r["rows"] == "2000" for r in lt.values())
    assert lt["rocksdb"]["speedup_vs_innodb"] and not lt["innodb"]["speedup_vs_innodb"]
    assert float(lt["rocksdb"]["buffer_pool_bytes"]) == 8 << 20   # its block cache
    assert float(lt["rocksdb"]["speedup_vs_one_file_at_a_time"]) == 1.0   # against itself, same engine
    assert {r["engine"] for r in _csv(tables["load_runs"])} == {"innodb", "rocksdb"}
    assert {r["engine"] for r in _csv(tables["load_curve"])} == {"innodb", "rocksdb"}
    nr = _csv(tables["load_not_run"])
    assert [(r["engine"], r["strategy"]) for r in nr] == [("rocksdb", "deferred-pk")] and nr[0]["reason"]
    md = tables["summary"].read_text()
    assert "one-file-at-a-time (rocksdb)" in md and line_with(md, "Not run", "deferred-pk", "rocksdb",
                                                               "load.strategies x load.engines", nr[0]["reason"])
    assert "Other engines" in md and "disk (bigint table), `one-file-at-a-time`: rocksdb" in md
    html = make_report(run_dir, run_dir / "report", report=REPORT).read_text()   # plots and HTML take the engine too
    drawn = set(re.findall(r'<img src="data:image/png;base64,[^"]+" alt="[^"]*" data-name="([a-z_]+)"', html))
    assert "collapse" in drawn and "Engine x strategy pairs not run" in html


def test_the_plugin_is_loaded_only_when_an_engine_needs_it(tmp_path):
    # a MyRocks option in the settings (load.settings serves both engines' loads) does not
    # stop a server without the plugin: it gets loose- and is ignored there
    with Server("plain", tmp_path / "plain", {"rocksdb_block_cache_size": "8M"}) as srv:
        conn = srv.connect()
        cur = conn.cursor()
        cur.execute("SELECT COUNT(*) FROM information_schema.ENGINES WHERE ENGINE = 'ROCKSDB'")
        assert cur.fetchone()[0] == 0 and "plugin_load_add" not in srv.render_config()
        assert "loose-rocksdb_block_cache_size=8M" in srv.render_config()
        conn.close()
    with Server("rocks", tmp_path / "rocks", launch=Launch(plugins=("rocksdb",))) as srv:
        conn = srv.connect()
        cur = conn.cursor()
        cur.execute("SELECT SUPPORT FROM information_schema.ENGINES WHERE ENGINE = 'ROCKSDB'")
        assert cur.fetchone()[0] in ("YES", "DEFAULT")
        conn.close()
        assert "plugin_load_add=ha_rocksdb" in srv.render_config() and "rocksdb=FORCE" in srv.render_config()
        assert "loose-" not in srv.render_config()
