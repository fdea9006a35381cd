"""The lsdb query engine: HATS catalogs from the chunk files, the suite with LSDB on a real Dask
cluster, every answer equal to DuckDB's over the same chunk files; its semantics against DuckDB's
where LSDB's differ (NaN and NULL fluxes, the cross-match's neighbour cap, margins)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import psutil
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from catbench.core.infra.config import validate
from catbench.core.infra.sizes import parse_size
from catbench.core.infra.resources import split_statements
from catbench.query.check import check_answers
from catbench.query.engines import udf_path
from catbench.query.chunk_tables import read_chunk_list
from catbench.query.lsdb.build import BuildOptions, kept_build, margin_order, order_for
from catbench.query.lsdb.cluster import ClusterOptions, dask_cluster
from catbench.query.lsdb.engine import alignment_functions, keep_compiled
from catbench.query.lsdb.expressions import ab_mag, filled, greater
from catbench.query.query_engines import QUERY_ENGINES, QueryLocation
from catbench.query.run_queries import QueryPaths, run_queries_duckdb
from catbench.query.spec import QuerySpec
from catbench.query.suite import QueryError
from catbench.report.views import LAYOUTS
from support.paths import REPO
from support.querycat import build, small_config
from support.servers import cgroup_paths, no_memory_cgroup
from support.slurm_cluster import available, leftover_daemons, slurm_cluster

# a few tiles (the margins matter), 16 neighbours first (SHV1's crowded box needs 32), warm runs
# only, one worker (the Slurm test runs two)
LSDB = {"pixel_threshold": 6000, "n_neighbors": 16, "workers": 1}
HELD = "1M"     # the least server.page_cache


def _dask_processes() -> list:
    return [p for p in psutil.process_iter(["cmdline"])
            if any("distributed" in a or "dask" in a for a in (p.info["cmdline"] or []))]


@pytest.fixture(scope="module")
def engines():
    root = Path(tempfile.mkdtemp(prefix="cblsdb-", dir="/tmp"))
    try:
        cfg = small_config()
        build(cfg, root)
        duck = run_queries_duckdb(QuerySpec.of(cfg), QueryPaths(root / "chunks", None, root / "out/parquet/duckdb"),
                                  QueryLocation("parquet"))
        cfg["queries"]["lsdb"] = {**cfg["queries"]["lsdb"], **LSDB}
        cfg["queries"].update(cold=False, concurrency={"streams": 1, "seconds": 0.5, "lv1_interval_s": 0.1})
        (root / "lsdb.json").write_text(json.dumps(cfg))
        # both engines without a server also held as a server is, past their page cache where memory
        # cgroups can be made (the layouts are a few MiB), and each query run again with its layout evicted
        held = {**cfg, "queries": {**cfg["queries"], "evicted": True},
                "server": {**cfg["server"], "page_cache": None if no_memory_cgroup() else HELD}}
        before = {p.pid for p in _dask_processes()}
        (root / "tmp").mkdir()     # the job's temporary folder: nothing of Dask's may be left there
        # numba's cache of its own (the venv's may be filled already): the Slurm run loads from it
        run = _lsdb_cli(root, held, duck["params"], root / "out/t1/lsdb", keep=True,    # the Slurm run reuses it
                        env={**os.environ, "TMPDIR": str(root / "tmp"), "NUMBA_CACHE_DIR": str(root / "numba")})
        assert run.returncode == 0, run.stderr[-3000:]
        duck_held = _lsdb_cli(root, held, duck["params"], root / "out/held/duckdb", engine="duckdb")
        assert duck_held.returncode == 0, duck_held.stderr[-3000:]
        yield {"root": root, "duck": duck, "lsdb": json.loads((root / "out/t1/lsdb/summary.json").read_text()),
               "duck_held": json.loads((root / "out/held/duckdb/summary.json").read_text()),
               "left": [p for p in _dask_processes() if p.pid not in before]}
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
def test_every_answer_equals_duckdbs(engines):
    root = engines["root"]
    check = check_answers([root / "out/parquet/duckdb", root / "out/t1/lsdb", root / "out/held/duckdb"])
    assert check["ok"] and set(check["queries"]) == set(engines["duck"]["answers"])
    assert engines["lsdb"]["answers"]["SHV1"] == engines["duck"]["answers"]["SHV1"] != "n=0"


@pytest.mark.slow
def test_each_query_runs_again_with_the_hats_catalogs_evicted_and_its_answer_unchanged(engines):
    """queries.evicted: each query once more after the HATS files' page cache is dropped, the Dask
    cluster kept (its workers read the tiles again from the device), the answer the warm run's."""
    rows = pq.read_table(engines["root"] / "out/t1/lsdb/results.parquet").to_pylist()
    for q in engines["duck"]["answers"]:
        (evicted,) = [r for r in rows if r["query"] == q and r["cache"] == "evicted"]
        assert evicted["digest"] == next(r["digest"] for r in rows if r["query"] == q and r["cache"] == "warm"), q
    assert "posix_fadvise" in engines["lsdb"]["evicted_method"]


@pytest.mark.slow
def test_the_build_is_counted_timed_kept_as_asked_and_leaves_no_dask_process(engines):
    s = engines["lsdb"]
    hats = s["load"]["hats"]["tables"]
    assert f"n={hats['Object']['rows']}" == engines["duck"]["answers"]["HV1"]
    assert hats["Source"]["rows"] > hats["Object"]["rows"]
    for t in hats.values():
        assert t["tiles"] > 1 and t["seconds"] > 0 and t["bytes"] > 0 and t["largest_tile_rows"] <= LSDB["pixel_threshold"]
    layout = LAYOUTS["lsdb"](s["load"])      # the report's row: both collections, margins and indexes
    assert layout["rows"] == sum(t["rows"] for t in hats.values()) and layout["bytes"] == sum(t["bytes"] for t in hats.values())
    assert (engines["root"] / "target" / "catbench-lsdb" / "hats").is_dir() and "reused" not in s["load"]["hats"]
    assert engines["left"] == [], f"Dask processes left: {engines['left']}"
    assert not list((engines["root"] / "tmp").iterdir())      # its scheduler's scratch folder kept under the target


@pytest.mark.slow
@pytest.mark.skipif(bool(no_memory_cgroup()), reason=no_memory_cgroup() or "-")
def test_both_engines_without_a_server_are_held_as_a_server_is_and_leave_no_cgroup(engines):
    # LSDB's build of its catalogs (its writes) apart from its queries; DuckDB reads the chunks as they are
    for s, phases in ((engines["lsdb"], ["build", "queries"]), (engines["duck_held"], ["queries"])):
        held = s["page_cache"]
        assert held["held_bytes"] == parse_size(HELD) and held["cache_peak_bytes"] > 0, held
        by = held["cache_peak_bytes_by_phase"]
        assert list(by) == phases and min(by.values()) > 0 and max(by.values()) == held["cache_peak_bytes"], held
    assert engines["duck"]["page_cache"] is None
    # left: a cgroup whose job is gone (another run of this module may hold its own meanwhile)
    left = [p for p in cgroup_paths("t1-lsdb") + cgroup_paths("t1-duckdb")
            if not Path(f"/proc/{p.name.rsplit('-', 1)[1]}").exists()]
    assert not left, [(p, (p / "cgroup.procs").read_text().split()) for p in left]


@pytest.mark.slow
def test_a_kept_build_is_reused_only_as_cut_and_while_its_rows_tally(engines, tmp_path):
    root = engines["root"]
    chunks = read_chunk_list(root / "chunks")
    hats = tmp_path / "hats"
    shutil.copytree(root / "target" / "catbench-lsdb" / "hats", hats)
    built = engines["lsdb"]["load"]["hats"]
    opts = BuildOptions(built["pixel_threshold"], built["highest_order"], small_config()["partition"]["overlap_deg"])
    assert kept_build(hats, root / "chunks", chunks, opts) == {**built, "reused": True}
    assert kept_build(hats, root / "chunks", chunks, BuildOptions(opts.pixel_threshold + 1, opts.highest_order,
                                                                  opts.overlap_deg)) is None
    next((hats / "Source" / "Source" / "dataset").rglob("Npix=*.parquet")).unlink()    # a tile lost
    assert kept_build(hats, root / "chunks", chunks, opts) is None


@pytest.mark.slow
def test_the_cross_match_asked_again_while_a_point_filled_its_neighbours(engines):
    # 16 neighbours cannot find every pair of the box's crowded part: asked again with more
    assert engines["lsdb"]["dask"]["n_neighbors"] > LSDB["n_neighbors"]


def _duck_mag(values: list) -> list:
    con = duckdb.connect()
    for stmt in split_statements(udf_path("duckdb").read_text()):
        con.execute(stmt)
    con.register("t", pa.table({"f": pa.array(values, pa.float32())}))
    return [r[0] for r in con.execute("SELECT fluxToAbMag(f) FROM t").fetchall()]


def test_flux_to_ab_mag_follows_duckdb_on_nan_null_and_non_positive_fluxes():
    values = [3.6e-29, 0.0, -1.0, float("nan"), None, float("inf")]
    s = pd.Series(pd.arrays.ArrowExtensionArray(pa.array(values, pa.float32())))     # NaN kept apart from NULL
    mag, nulls = ab_mag(s)
    want = _duck_mag(values)
    for got, null, w in zip(mag, nulls, want):
        assert (w is None) == bool(null)
        if w is not None:
            assert (np.isnan(got) and np.isnan(w)) or got == pytest.approx(w, rel=1e-12)
    # DuckDB orders NaN above every number: a NaN colour passes a lower bound
    assert list(greater(np.array([np.nan, 1.0, 5.0]), np.array([False, False, True]), 4.0)) == [True, False, False]


def test_a_point_that_found_as_many_neighbours_as_asked_is_seen():
    m = pd.DataFrame({"objectId_1": [1, 1, 2], "objectId_2": [1, 2, 2]})
    assert filled(m, 2) and not filled(m, 3) and not filled(m.iloc[:0], 2)


@pytest.mark.slow
def test_the_engines_start_compiles_what_the_first_cross_match_and_join_would(engines):
    # numba compiles HATS' tile alignment at a process's first cross-match or join of a box: inside
    # SHV1's first cold run (~9 CPU-s here) unless the engine's start did it
    assert engines["lsdb"]["dask"]["tile_alignment_compiles"]["at_start"] > 0
    assert engines["lsdb"]["dask"]["tile_alignment_compiles"]["in_queries"] == 0
    # ... and keeps each function in numba's cache, which the next job loads (~9 CPU-s to ~0.5)
    kept = {p.name.split("-")[0] for p in (engines["root"] / "numba").rglob("pixel_alignment.*.nbi")}
    assert kept == {f"pixel_alignment.{f.__name__}" for f in alignment_functions()}, kept


def test_without_a_folder_numba_may_write_the_alignment_is_compiled_uncached(monkeypatch):
    import numba.core.caching
    monkeypatch.setattr(numba.core.caching.CacheImpl, "_locator_classes", [])   # no folder numba may use
    assert keep_compiled(alignment_functions()) == 0


@pytest.mark.slow
def test_a_started_clusters_workers_have_imported_lsdb_before_any_query(tmp_path):
    # a cold run's new workers (restart() is stop() and start()): its time is their reads and work,
    # not Python's imports (~2 s a query here)
    before = {p.pid for p in _dask_processes()}
    with dask_cluster(ClusterOptions(1, 1, 2**30), tmp_path / "dask") as cluster:
        assert set(cluster.client.run(lambda: "lsdb" in sys.modules).values()) == {True}
    assert not [p for p in _dask_processes() if p.pid not in before]


def test_margins_and_orders():
    assert margin_order(60.0, 7) > 7 and margin_order(1.0, 7) == 10      # capped three orders past the tiles
    with pytest.raises(QueryError, match="queries.lsdb.highest_order"):
        margin_order(3600.0 * 10, 7)
    assert order_for(50.0, 100) < order_for(5000.0, 100) <= 19


def _spec(lsdb: dict, threads=2, mem_mb=2000):
    cfg = validate({"run": "x", "queries": {"lsdb": lsdb}})
    return QuerySpec.of(cfg, {"engine": "lsdb", "threads": threads, "mem_mb": mem_mb})


def test_bad_lsdb_settings_are_refused_naming_the_key(tmp_path):
    with pytest.raises(QueryError, match=r"queries\.lsdb\.workers.*jobs\.cpus"):
        _spec({"workers": 4}, threads=2)
    spec = _spec({"workers": 2, "memory": "1M", "pixel_threshold": 100000})
    assert spec.lsdb.cluster.memory_bytes == 1 << 20 and spec.lsdb.cluster.threads == 1
    from catbench.query.lsdb import run as lsdb_run
    cfg = small_config()
    build(cfg, tmp_path)
    chunks = read_chunk_list(tmp_path / "chunks")
    with pytest.raises(QueryError, match=r"queries\.lsdb\.memory.*pixel_threshold"):
        lsdb_run._check_memory(spec, tmp_path / "chunks", chunks, lsdb_run._build_options(spec, chunks))
    with pytest.raises(Exception, match="lsdb"):
        validate({"run": "x", "queries": {"engines": ["mysql", "hive"]}})


def test_the_schemas_engines_are_the_registrys():
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    engines = schema["properties"]["queries"]["properties"]["engines"]["items"]["enum"]
    assert engines == list(QUERY_ENGINES)


def _lsdb_args(root: Path, cfg: dict, params: dict, out: Path, keep=False, engine="lsdb") -> list:
    return [sys.executable, "-m", "catbench", "queries", "--query-engine", engine, "--target", "t1",
            "--path", str(root / "target"), "--results", str(root), "--config", json.dumps(cfg),
            "--params-json", json.dumps(params), "--threads", "2", "--mem-mb", "2000", "--time-limit-min", "20",
            "--out", str(out)] + (["--keep-data"] if keep else [])


def _lsdb_cli(root: Path, cfg: dict, params: dict, out: Path, env=None, keep=False, engine="lsdb"):
    return subprocess.run(_lsdb_args(root, cfg, params, out, keep, engine), capture_output=True, text=True,
                          timeout=600, env=env)


def _worker_jobs(env) -> list[str]:
    jobs = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%j %T"], env=env, capture_output=True, text=True)
    return [ln for ln in jobs.stdout.splitlines() if ln.startswith("catbench-lsdb")]


def _live(env) -> list[str]:
    return [ln for ln in _worker_jobs(env) if "RUNNING" in ln or "PENDING" in ln]


def _until(cond, seconds: float, what: str):
    end = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < end, what
        time.sleep(0.5)


@pytest.mark.slow
@pytest.mark.skipif(available() is not None, reason=str(available()))
def test_a_slurm_cluster_of_two_worker_jobs_answers_as_the_local_one_and_a_sigterm_ends_them(engines):
    root = engines["root"]
    cfg = json.loads((root / "lsdb.json").read_text())
    # the local run asked SHV1 again with more neighbours; here the count it ended at, asked once
    cfg["queries"]["lsdb"].update(cluster="slurm", workers=2, n_neighbors=engines["lsdb"]["dask"]["n_neighbors"])
    cfg["queries"]["concurrency"]["streams"] = 0
    with slurm_cluster(max_time="00:30:00") as env:
        base = env["CBSLURM_BASE"]
        env = {**env, "NUMBA_CACHE_DIR": str(root / "numba")}     # the local run's compiles
        run = _lsdb_cli(root, cfg, engines["duck"]["params"], root / "out/slurm/lsdb", env=env, keep=True)
        assert run.returncode == 0, run.stderr[-3000:]
        summary = json.loads((root / "out/slurm/lsdb/summary.json").read_text())
        assert summary["dask"]["kind"] == "slurm" and summary["dask"]["workers"] == 2
        assert summary["load"]["hats"]["reused"]      # the local run's, tallied again
        assert len(_worker_jobs(env)) >= 2 and not _live(env), _worker_jobs(env)
        # interrupted (a batch system's SIGTERM) while its worker jobs run: none left, no output, and
        # (not kept this time) the catalogs removed
        done = len(_worker_jobs(env))
        p = subprocess.Popen(_lsdb_args(root, cfg, engines["duck"]["params"], root / "out/cut/lsdb"), env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            _until(lambda: sum("RUNNING" in ln for ln in _live(env)) >= 2 or p.poll() is not None, 120,
                   "the worker jobs to run")
            p.send_signal(signal.SIGTERM)
            err = p.communicate(timeout=120)[1]
        finally:
            p.kill()
        assert p.returncode != 0 and len(_worker_jobs(env)) >= done + 2, err[-3000:]
        _until(lambda: not _live(env), 30, f"worker jobs left after a SIGTERM: {_live(env)}")
        assert not (root / "out/cut/lsdb").exists() and not (root / "target" / "catbench-lsdb").exists()
    assert check_answers([root / "out/t1/lsdb", root / "out/slurm/lsdb"])["ok"]
    assert leftover_daemons(base) == []
    # the test's Slurm tracks a job's processes by parent: a nanny's worker child orphaned as its
    # job ends leaves on its own a moment later (a site's cgroup tracking kills it with the job)
    _until(lambda: not _dask_processes(), 20, f"Dask processes left: {_dask_processes()}")
