"""Query stage on a small real catalog spanning several chunks: the mysql engine (private
server, chunk tables, secondary index, per-chunk queries) and the duckdb engine agree on
every query, SHV1 equals a brute-force pair count, every query returns data, and the
cross-check names a query whose answer was altered."""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy.spatial import cKDTree
from catbench.cli.main import main as cli_main
from catbench.core.infra.config import validate
from catbench.prepare.chunker import Chunker
from catbench.prepare.spec import PrepareSpec
from catbench.query import run_queries as query_run
from catbench.query.check import check_answers
from support.text import line_with
from catbench.query.chunk_tables import ChunkInfo
from catbench.query.engines import DuckdbEngine
from catbench.query.query_engines import QueryLocation
from catbench.query.run_queries import QueryPaths, run_queries, run_queries_duckdb
from catbench.query.spec import Concurrency, QuerySpec
from catbench.report.tables import make_tables, read_tables
from catbench.query.suite import (
    QUERY_NAMES,
    Answer,
    QueryError,
    bind,
    compare,
    load_suite,
)
from support.querycat import SHV1_BOX, build, small_config
from support.runs import REPORT
from support.servers import servers_under

@pytest.fixture(scope="module")
def queried():
    root = Path(tempfile.mkdtemp(prefix="cbqt-", dir="/tmp"))
    try:
        cfg = small_config()
        objects = build(cfg, root)
        duck = run_queries_duckdb(QuerySpec.of(cfg, {"evicted": True}),
                                  QueryPaths(root / "chunks", None, root / "out/parquet/duckdb"), QueryLocation("parquet"))
        my = run_queries(QuerySpec.of(cfg, {"settings": cfg["server"]["settings"]}),
                         QueryPaths(root / "chunks", root / "index/input", root / "out/t1/mysql"),
                         QueryLocation("t1", root / "target"))
        yield {"cfg": cfg, "root": root, "objects": objects, "duck": duck, "mysql": my}
    finally:
        leftover = servers_under(root)
        shutil.rmtree(root, ignore_errors=True)
        assert not leftover, f"servers left running: {leftover}"


def haversine_deg(ra1, d1, ra2, d2):
    ra1, d1, ra2, d2 = map(np.radians, (ra1, d1, ra2, d2))
    a = np.sin((d2 - d1) / 2) ** 2 + np.cos(d1) * np.cos(d2) * np.sin((ra2 - ra1) / 2) ** 2
    return np.degrees(2 * np.arcsin(np.minimum(1.0, np.sqrt(a))))


@pytest.mark.server
def test_several_chunks_and_both_engines_agree(queried):
    assert queried["duck"]["chunks"] >= 6
    res = check_answers([queried["root"] / "out/parquet/duckdb", queried["root"] / "out/t1/mysql"],
                        queried["root"] / "out/check.json")
    assert res["ok"] and set(res["queries"]) == set(QUERY_NAMES)
    assert all(v["agree"] for v in res["queries"].values())
    # same digests, not only within tolerance
    assert queried["duck"]["digests"] == queried["mysql"]["digests"]
    assert json.loads((queried["root"] / "out/check.json").read_text())["ok"]


def test_duckdb_runs_each_query_again_with_its_files_evicted_and_its_answer_unchanged(queried, tmp_path):
    """queries.evicted: a run of each query after its Parquet files' page cache is dropped (the
    engine kept); the drop is the kernel's, read back with fincore."""
    rows = pq.read_table(queried["root"] / "out/parquet/duckdb/results.parquet").to_pylist()
    for q in QUERY_NAMES:
        (evicted,) = [r for r in rows if r["query"] == q and r["cache"] == "evicted"]
        assert evicted["digest"] == next(r["digest"] for r in rows if r["query"] == q and r["cache"] == "warm")
    assert "posix_fadvise" in queried["duck"]["evicted_method"]
    f = Path(tempfile.mkdtemp(dir="/var/tmp")) / "layout.bin"     # a disk, not tmpfs: its pages can be dropped
    try:
        f.write_bytes(os.urandom(8 * 2**20))
        f.read_bytes()

        def resident() -> int:
            out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", str(f)],
                                 capture_output=True, text=True, check=True).stdout
            return int(out.split()[0])
        assert resident() > 0
        assert query_run.evict([f.parent]) == 8 * 2**20 and resident() == 0
    finally:
        shutil.rmtree(f.parent)


@pytest.mark.server
def test_every_query_returns_data(queried):
    for s in (queried["duck"], queried["mysql"]):
        answers = json.loads((Path(queried["root"]) / "out" / ("parquet/duckdb" if s["query_engine"] == "duckdb"
                                                          else "t1/mysql") / "answers.json").read_text())
        for q in QUERY_NAMES:
            a = Answer.from_json(answers[q])
            assert a.rows, f"{q} returned no rows"
            if a.columns == ["n"]:
                assert a.rows[0][0] > 0, f"{q} counted 0"


@pytest.mark.server
def test_shv1_equals_every_pair_within_the_radius(queried):
    o = queried["objects"]
    ra, dec = o["ra_PS"].to_numpy(), o["decl_PS"].to_numpy()
    b = SHV1_BOX
    m = (ra >= b["ra_min"]) & (ra <= b["ra_max"]) & (dec >= b["dec_min"]) & (dec <= b["dec_max"])
    ra, dec = ra[m], dec[m]
    r = queried["cfg"]["partition"]["overlap_deg"]
    # the pairs whose chord is within the radius's, widened a little (a superset), each then measured
    # by haversine: the pairs all ~3.5 x 10^7 pairs measured would give, at a KD-tree's cost
    xyz = np.column_stack([np.cos(np.radians(dec)) * np.cos(np.radians(ra)),
                           np.cos(np.radians(dec)) * np.sin(np.radians(ra)), np.sin(np.radians(dec))])
    pairs = cKDTree(xyz).query_pairs(2 * np.sin(np.radians(r) / 2) * (1 + 1e-6), output_type="ndarray")
    i, j = pairs[:, 0], pairs[:, 1]
    sep = haversine_deg(ra[i], dec[i], ra[j], dec[j])
    close = sep < r
    expected = int(close.sum())
    assert queried["mysql"]["answers"]["SHV1"] == f"n={expected}"
    assert queried["duck"]["answers"]["SHV1"] == f"n={expected}"
    # the overlap path is exercised: some pairs straddle sub-chunks and chunks
    ch = Chunker.of(PrepareSpec.of(queried["cfg"]).partition.geometry)
    c, s = ch.locate(ra, dec)
    cross_sub = ((c[i] != c[j]) | (s[i] != s[j]))[close]
    cross_chunk = (c[i] != c[j])[close]
    assert cross_sub.sum() > 0 and cross_chunk.sum() > 0, (cross_sub.sum(), cross_chunk.sum())


@pytest.mark.server
def test_results_layout_and_figures(queried):
    out = queried["root"] / "out/t1/mysql"
    t = pq.read_table(out / "results.parquet").to_pylist()
    caches = {r["cache"] for r in t}
    assert {"cold", "warm", "concurrent-alone", "concurrent-load"} <= caches
    assert {r["query"] for r in t if r["cache"] == "cold"} == set(QUERY_NAMES)
    assert all(r["seconds"] > 0 and r["digest"] for r in t)
    s = queried["mysql"]
    assert s["cold_method"] in ("server-restart+drop_caches", "server-restart-only")
    load = s["load"]["chunk_tables"]
    assert load["seconds"] > 0 and load["rows_by_table"]["Object"] == queried["objects"].num_rows
    assert s["load"]["secondary_index"]["rows"] == queried["objects"].num_rows
    # what the layout keeps on the target: the tablespaces (each at least a few pages)
    assert load["stored_bytes"] > 16384 * load["files"] and s["load"]["secondary_index"]["stored_bytes"] > 0
    assert s["concurrency"]["lv1_load"]["n"] > 0 and s["concurrency"]["hv2"]["n"] > 0
    assert s["stats"]["HV2"]["warm"]["p50_s"] > 0
    # the server's data are gone (core.server.session removes a finished job's server directory)
    assert not (queried["root"] / "target/catbench-queries/data").exists()


@pytest.mark.server
def test_the_report_sets_each_engines_layout_beside_the_others(queried, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "queries").symlink_to(queried["root"] / "out")        # queries/<target>/<engine>/ as a run has it
    make_tables(run, tmp_path / "tables", report=REPORT)
    got = {r["query_engine"]: r for r in read_tables(tmp_path / "tables")["layouts"]}
    rows = queried["duck"]["load"]["parquet"]["rows"]
    parquet = sum(f.stat().st_size for kind in ("Object", "Source")
                  for f in (queried["root"] / "chunks" / kind).glob("chunk_*.parquet") if "_overlap" not in f.name)
    assert got["duckdb"]["build_s"] is None and got["duckdb"]["MiB"] == round(parquet / 2**20, 1)
    my = queried["mysql"]["load"]
    assert got["mysql"]["rows"] == rows == my["chunk_tables"]["rows_by_table"]["Object"] + my["chunk_tables"]["rows_by_table"]["Source"]
    assert got["mysql"]["build_s"] > 0 and got["mysql"]["index_s"] > 0 and got["mysql"]["MiB"] > got["duckdb"]["MiB"]


@pytest.mark.server
def test_altered_answer_is_named(queried, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(queried["root"] / "out/t1/mysql", bad)
    answers = json.loads((bad / "answers.json").read_text())
    answers["HV1"]["rows"][0][0] += 1
    (bad / "answers.json").write_text(json.dumps(answers))
    s = json.loads((bad / "summary.json").read_text())
    s["digests"]["HV1"] = "0" * 64
    s["target"] = "bad"
    (bad / "summary.json").write_text(json.dumps(s))
    with pytest.raises(QueryError, match=r"query HV1: answers differ"):
        check_answers([queried["root"] / "out/parquet/duckdb", bad], tmp_path / "check.json")
    assert not json.loads((tmp_path / "check.json").read_text())["ok"]
    rc = cli_main(["queries-check", "--inputs", str(queried["root"] / "out/parquet/duckdb"), str(bad),
                   "--out", str(tmp_path / "check2.json")])
    assert rc == 1


@pytest.mark.server
def test_server_section_reaches_the_session(queried, tmp_path, monkeypatch):
    """server.start_timeout_s (and the cold-run settings) reach core.server.session; a failing
    job leaves no output, not even a partial directory."""
    seen = {}

    @contextlib.contextmanager
    def session(target, root, name, settings, **kw):
        seen.update(kw, name=name, settings=settings)
        raise RuntimeError("no server in this test")
        yield

    monkeypatch.setattr(query_run, "private_server", session)
    cfg = {**queried["cfg"], "server": {**queried["cfg"]["server"], "start_timeout_s": 33}}
    root = queried["root"]
    with pytest.raises(RuntimeError, match="no server"):
        run_queries(QuerySpec.of(cfg, {"params": queried["mysql"]["params"]}),
                    QueryPaths(root / "chunks", root / "index/input", tmp_path / "out"),
                    QueryLocation("t1", tmp_path / "target"))
    assert seen["name"] == "queries" and seen["launch"].start_timeout_s == 33 and seen["launch"].binary is None
    assert seen["settings"]["innodb_buffer_pool_load_at_startup"] == 0
    assert seen["settings"]["innodb_buffer_pool_size"] == "64M"
    assert not list(tmp_path.glob("*out*")), list(tmp_path.iterdir())


# ---- unit tests (no server) -------------------------------------------------------------

def test_suite_files_parse_and_bind():
    suite = load_suite()
    assert set(suite) == set(QUERY_NAMES)
    sql, args = bind(suite["LV1"], suite["LV1"].chunk_sql, {"object_id": 5, "extra": 1}, "pyformat")
    assert "%(object_id)s" in sql and args == {"object_id": 5}
    sql, args = bind(suite["SHV1"], suite["SHV1"].sql, {**SHV1_BOX, "radius_deg": 0.01}, "dollar")
    assert "$radius_deg" in sql and ":" not in sql.replace("::", "")
    with pytest.raises(QueryError, match="LV3: no value for parameter"):
        bind(suite["LV3"], suite["LV3"].sql, {}, "dollar")


def test_compare_tolerance_and_float32():
    a = Answer(["chunkId", "avg_ra"], [(2, 1.0), (1, 0.123456789012)]).canonical(("chunkId",))
    b = Answer(["chunkId", "avg_ra"], [(1, 0.123456789012 * (1 + 1e-13)), (2, 1.0)]).canonical(("chunkId",))
    assert compare("HV3", a, b) is None
    c = Answer(["chunkId", "avg_ra"], [(1, 0.1234), (2, 1.0)]).canonical(("chunkId",))
    assert "query HV3: answers differ" in compare("HV3", a, c, "x", "y")
    # a FLOAT column: the server's 6-digit text equals the exact float32 value
    f = float(np.float32(1.4910188))
    assert (Answer(["f"], [(f,)], {"f"}).canonical().digest()
            == Answer(["f"], [(1.49102,)], {"f"}).canonical().digest())


def test_settings_defaults():
    q = QuerySpec.of(validate({"queries": {"concurrency": {"streams": 4}}}, whole=False))
    assert q.concurrency == Concurrency(4, 10.0, 0.1)
    assert q.repetitions == 3 and q.names == tuple(QUERY_NAMES)
    with pytest.raises(QueryError, match="unknown queries"):
        QuerySpec.of(validate({}, whole=False), {"names": ["LV9"]})


def test_duckdb_reads_chunk_paths_with_a_quote(tmp_path):
    chunks_dir = tmp_path / "it's; chunks"
    for kind, col in (("Object", "objectId"), ("Source", "sourceId")):
        (chunks_dir / kind).mkdir(parents=True)
        pq.write_table(pa.table({col: [1, 2, 3]}), chunks_dir / kind / "chunk_7.parquet")
    engine = DuckdbEngine(chunks_dir, [ChunkInfo(7, 3, 3, 0)])
    try:
        assert engine.con.execute("SELECT count(*) FROM Object").fetchone() == (3,)
        cur = engine.cursor()  # a concurrency stream's cursor sees the views too
        assert cur.execute("SELECT sum(sourceId) FROM Source").fetchone() == (6,)
        engine.open()  # a cold 'restart' builds them again
        assert engine.con.execute("SELECT count(*) FROM Source").fetchone() == (3,)
    finally:
        engine.close()


def test_settings_come_from_the_schema_with_overrides():
    from catbench.core.infra.config import defaults
    cfg = validate({}, whole=False)
    q = QuerySpec.of(cfg, {"repetitions": 5, "concurrency": {"seconds": 2.0}, "names": ["LV1"]})
    assert q.repetitions == 5 and q.repeats.min_n == 5 and q.names == ("LV1",)
    assert q.concurrency.seconds == 2.0
    assert q.concurrency.streams == defaults("queries")["concurrency"]["streams"]
    assert QuerySpec.of(cfg).index_variant == defaults("queries")["index_variant"]
    assert QuerySpec.of(cfg).geometry.overlap_deg == defaults("partition")["overlap_deg"]
    assert QuerySpec.of(cfg).draw.seed == cfg["seed"]


def test_parameters_are_drawn_only_for_the_queries_asked_for(tmp_path):
    """A patch without fluxes asked for LV1 and HV1 only: LV3's box (which needs zFlux_PS) is
    not drawn, and LV1's object is the one a run of LV1 and LV2 draws."""
    from catbench.query.params import draw_parameters
    n = 50
    (tmp_path / "Object").mkdir()
    (tmp_path / "Source").mkdir()
    pq.write_table(pa.table({"objectId": np.arange(n), "ra_PS": np.linspace(1, 2, n),
                             "decl_PS": np.linspace(-1, 1, n)}), tmp_path / "Object/chunk_7.parquet")
    pq.write_table(pa.table({"sourceId": np.arange(2 * n), "objectId": np.arange(2 * n) // 2}),
                   tmp_path / "Source/chunk_7.parquet")
    chunks = [ChunkInfo(7, n, 2 * n, 0)]
    cfg = validate({"seed": 11, "queries": {"queries": ["LV1", "HV1"]}}, whole=False)
    got = draw_parameters(QuerySpec.of(cfg), tmp_path, chunks)
    assert sorted(got) == ["HV1", "LV1"] and 0 <= got["LV1"]["object_id"] < n
    both = draw_parameters(QuerySpec.of(cfg, {"names": ["LV1", "LV2"]}), tmp_path, chunks)
    assert both == {"LV1": got["LV1"], "LV2": got["LV1"]}


def test_query_files_declare_what_is_drawn_and_dmtr21s_defaults():
    """What the draw does for each query is its file's header (params.py names no query):
    DMTR-21's box sizes, cuts and SHV2's half-arcsecond radius as the defaults."""
    suite = load_suite()
    assert {n: q.draw for n, q in suite.items() if q.draw} == {
        "LV1": ("object",), "LV2": ("object",), "LV3": ("box", "sized"),
        "SHV1": ("box", "sized", "radius"), "SHV2": ("box",)}
    assert {n: q.defaults for n, q in suite.items() if q.defaults} == {
        "LV3": {"box_deg": 1.0, "z_min": 20.0, "z_max": 23.0, "gr_min": 0.2, "gr_max": 1.0,
                "iz_min": 0.0, "iz_max": 0.4},
        "HV2": {"min_color": 4.0}, "SHV1": {"box_deg": 2.0},
        "SHV2": {"box_deg": 1.0, "radius_deg": 0.5 / 3600.0}}


# ---- a patch at survey density: the draw sized to it, bounded, and stopped by a signal --------

def dense_patch(root: Path, n: int, width_deg: float = 0.1, fluxes: bool = False) -> list[ChunkInfo]:
    """``n`` Objects spread over a ``width_deg`` square (20,000 in 0.1 deg: 2 M/deg², where a
    2 deg box at the overlap radius holds ~15 M pairs), in one chunk, with chunks.tsv."""
    rng = np.random.default_rng(1)
    cols = {"objectId": np.arange(n), "ra_PS": 10 + rng.random(n) * width_deg, "decl_PS": rng.random(n) * width_deg}
    if fluxes:
        cols.update({f"{b}Flux_PS": np.full(n, 1e-29) for b in "griz"})
    for kind in ("Object", "Source"):
        (root / kind).mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(cols), root / "Object/chunk_7.parquet")
    pq.write_table(pa.table({"sourceId": np.arange(n), "objectId": np.arange(n)}), root / "Source/chunk_7.parquet")
    (root / "chunks.tsv").write_text(f"chunkId\tobject_rows\tsource_rows\toverlap_rows\n7\t{n}\t{n}\t0\n")
    return [ChunkInfo(7, n, n, 0)]


def _in_box(root: Path, p: dict) -> int:
    t = pq.read_table(root / "Object/chunk_7.parquet")
    ra, dec = t["ra_PS"].to_numpy(), t["decl_PS"].to_numpy()
    return int(((ra >= p["ra_min"]) & (ra <= p["ra_max"]) & (dec >= p["dec_min"]) & (dec <= p["dec_max"])).sum())


@pytest.mark.slow
def test_a_dense_patchs_boxes_and_radius_are_sized_to_its_density(tmp_path):
    """20,000 Objects in 0.1 deg (2 M/deg²): DMTR-21's 2 deg box and 1 arcmin radius count
    ~15 M pairs (7 s to draw alone); the drawn LV3 and SHV1 boxes hold about
    queries.draw.target_rows Objects and SHV1 counts about queries.draw.target_pairs pairs,
    drawn in well under a second without the full self-join, the same on every draw."""
    from catbench.query.params import draw_parameters
    chunks = dense_patch(tmp_path, 20_000, fluxes=True)
    engine = DuckdbEngine(tmp_path, chunks)
    try:    # the defaults but MySQL's tests: the whole patch in the box, SHV1 about 100,000 pairs
        t0 = time.monotonic()
        untested = {"queries": {"queries": ["SHV1"], "draw": {"target_tests": 10 ** 12}}}
        shv1 = draw_parameters(QuerySpec.of(validate(untested, whole=False)), tmp_path, chunks)["SHV1"]
        assert time.monotonic() - t0 < 3
        assert 100_000 / 3 <= engine.run(load_suite()["SHV1"], shv1).rows[0][0] <= 3 * 100_000
    finally:
        engine.close()
    cuts = {"z_min": 20, "z_max": 30, "gr_min": -1, "gr_max": 1, "iz_min": -1, "iz_max": 1}
    cfg = validate({"seed": 11, "queries": {"queries": ["LV3", "SHV1"], "parameters": {"LV3": cuts},
                                            "draw": {"target_rows": 5000, "target_pairs": 2000,
                                                     "target_tests": 10 ** 12}}}, whole=False)
    spec = QuerySpec.of(cfg)
    t0 = time.monotonic()
    got = draw_parameters(spec, tmp_path, chunks)
    assert time.monotonic() - t0 < 3
    for name in ("LV3", "SHV1"):
        assert 2500 <= _in_box(tmp_path, got[name]) <= 2 * 5000, (name, got[name])
    assert got["SHV1"]["radius_deg"] < spec.geometry.overlap_deg
    engine = DuckdbEngine(tmp_path, chunks)
    try:
        pairs = engine.run(load_suite()["SHV1"], got["SHV1"]).rows[0][0]
    finally:
        engine.close()
    assert 2000 / 3 <= pairs <= 3 * 2000
    assert draw_parameters(spec, tmp_path, chunks) == got
    # a size given in queries.parameters is kept
    cfg["queries"]["parameters"]["SHV1"] = {"radius_deg": 0.001, "box_deg": 0.05}
    mine = draw_parameters(QuerySpec.of(cfg, {"names": ["SHV1"]}), tmp_path, chunks)["SHV1"]
    assert mine["radius_deg"] == 0.001 and mine["ra_max"] - mine["ra_min"] == pytest.approx(0.05)


def test_shv1s_box_shrinks_to_mysqls_distance_tests_in_its_sub_chunks(tmp_path):
    """MySQL's SHV1 tests each Object of the box against its sub-chunk and overlap: at 2 M/deg²
    with 85 x 12 stripes ~88,000 of them an Object, so 2 x 10^7 tests is a box of ~230."""
    from catbench.query.params import draw_parameters
    from catbench.query.sizing import tests_per_object
    chunks = dense_patch(tmp_path, 20_000)
    cfg = validate({"queries": {"queries": ["SHV1"], "draw": {"target_tests": 2 * 10 ** 7}}}, whole=False)
    spec = QuerySpec.of(cfg)
    want = 2e7 / tests_per_object(spec.geometry, 20_000 / 0.1 ** 2)
    assert 180 < want < 280
    got = _in_box(tmp_path, draw_parameters(spec, tmp_path, chunks)["SHV1"])
    assert want / 2.5 <= got <= 2 * want, (got, want)


def test_a_draw_that_cannot_reach_its_target_refuses_naming_the_key(tmp_path):
    """20,000 Objects at one position: no box or radius brings SHV1 near its pairs (it drew
    ~2 x 10^8, 2,000x the target, and ran for minutes); the draw says so and refuses."""
    from catbench.query.params import draw_parameters
    chunks = dense_patch(tmp_path, 20_000, width_deg=0.0)
    cfg = validate({"queries": {"queries": ["SHV1"], "draw": {"target_tests": 10 ** 12}}}, whole=False)
    with pytest.raises(QueryError, match=r"config key 'queries.draw.target_(rows|pairs)': SHV1: its .* after 6 "
                                         r"resizings.*give queries.parameters.SHV1"):
        draw_parameters(QuerySpec.of(cfg), tmp_path, chunks)


def test_the_draw_stops_at_its_time_budget_naming_the_key(tmp_path):
    from catbench.query.params import draw_parameters
    chunks = dense_patch(tmp_path, 2000)
    cfg = validate({"queries": {"queries": ["SHV1"], "draw": {"budget_s": 1e-6}}}, whole=False)
    with pytest.raises(QueryError, match=r"config key 'queries.draw.budget_s'.*queries.parameters.SHV1"):
        draw_parameters(QuerySpec.of(cfg), tmp_path, chunks)


@pytest.mark.slow
def test_a_query_past_the_stages_time_limit_is_stopped_naming_it(tmp_path):
    """The SHV1 that runs for a minute, under a 3 s limit (--time-limit-min, the rule's runtime):
    stopped at it with one line naming the limit and what to change, no output left."""
    dense_patch(tmp_path / "results/chunks", 60_000)
    shv1 = {"SHV1": {"ra_min": 9, "ra_max": 11, "dec_min": -1, "dec_max": 1, "radius_deg": 0.01667}}
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "catbench", "queries", "--query-engine", "duckdb", "--results",
                        str(tmp_path / "results"), "--config", "{}", "--out", str(tmp_path / "out"),
                        "--queries", "SHV1", "--no-cold", "--repetitions", "1", "--concurrency-streams", "0",
                        "--params-json", json.dumps(shv1), "--time-limit-min", "0.05"],
                       cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and time.monotonic() - t0 < 20, r.stderr
    assert line_with(r.stderr, "query SHV1", "time limit", "0.05 min"), r.stderr     # the query, the limit
    assert "Traceback" not in r.stderr and not (tmp_path / "out").exists()


@pytest.mark.server
def test_a_mysql_statement_past_the_stages_time_limit_is_stopped_by_the_server(tmp):
    from catbench.core.index.table import get_variant
    from catbench.core.server.process import Server
    from catbench.query.chunk_tables import DATABASE
    from catbench.query.engines import Deadline, MysqlEngine, QueryTimeout
    with Server("limit", tmp / "srv") as srv:
        with srv.connect() as c:
            c.cursor().execute(f"CREATE DATABASE `{DATABASE}`")
        engine = MysqlEngine(srv, [], small_config_geometry(), 1, get_variant("bigint"))
        try:
            engine.deadline = Deadline.of(1.5 / 60)
            engine._query = "query LV1"
            t0 = time.monotonic()
            with pytest.raises(QueryTimeout, match="query LV1: .*time limit"):
                engine._execute("SELECT SLEEP(20)", ())
            assert time.monotonic() - t0 < 5
            with pytest.raises(QueryTimeout):     # past it, nothing starts
                engine._execute("SELECT 1", ())
        finally:
            engine.close()


def small_config_geometry():
    from catbench.core.sky.geometry import Geometry
    part = small_config()["partition"]
    return Geometry(part["num_stripes"], part["num_sub_stripes_per_stripe"], float(part["overlap_deg"]))


@pytest.mark.slow
@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_a_long_duckdb_query_within_seconds(tmp_path, sig, code):
    """SHV1 at the overlap radius over 60,000 Objects in 0.1 deg runs for a minute, in joins
    that do not look for Python's signals: Ctrl-C (SIGINT to the process group) or SIGTERM
    still ends the job within seconds, with its exit code and no output."""
    dense_patch(tmp_path / "results/chunks", 60_000)
    shv1 = {"SHV1": {"ra_min": 9, "ra_max": 11, "dec_min": -1, "dec_max": 1, "radius_deg": 0.01667}}
    log = tmp_path / "job.log"
    with open(log, "w") as f:
        p = subprocess.Popen([sys.executable, "-m", "catbench", "queries", "--query-engine", "duckdb", "--results",
                              str(tmp_path / "results"), "--config", "{}", "--out", str(tmp_path / "out"),
                              "--queries", "SHV1", "--no-cold", "--repetitions", "1", "--concurrency-streams", "0",
                              "--params-json", json.dumps(shv1)],
                             cwd=Path(__file__).resolve().parent.parent, stdout=f, stderr=f,
                             start_new_session=True)
        try:
            time.sleep(3)       # the CLI started, the query runs
            assert p.poll() is None, log.read_text()
            os.killpg(p.pid, sig)
            t0 = time.monotonic()
            rc = p.wait(10)
        except subprocess.TimeoutExpired:
            rc = None
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    text = log.read_text()
    assert rc == code and time.monotonic() - t0 < 5, text
    assert "Traceback" not in text and not (tmp_path / "out").exists()
