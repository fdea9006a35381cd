"""Queries at the user's scale (predict/queries): the chunk-query fit recovers a known law, the
chunks spread round-robin over the nodes with the slowest node and the largest chunk bounding a
class, a node past its memory is priced from cold repetitions or refused, and `catbench predict
--nodes` answers from a real run's query results; the czar's part (whole query less its chunk
part) is recovered, carried past the rungs, and in the interval."""

from __future__ import annotations

import dataclasses
import json
import subprocess

import numpy as np
import pytest
from catbench.predict.queries.model import Catalog, predict_class, predict_queries
from catbench.predict.queries.runs import ChunkObs, QueryRung
from support.paths import VENV_BIN
from support.shared_run import shared_tiny_run

D, S = 0.002, 1e-8          # a chunk query's dispatch (s) and seconds a byte


def _rung(chunks: int = 12, caches=("warm",), skew: float = 1.0, bpr: float = 100.0, scale: float = 1.0) -> QueryRung:
    """Chunks of 1,000 to 1,000 × (1 + skew) Objects (× scale) whose HV2 follows D + S × bytes (cold: 5×)."""
    rng = np.random.default_rng(3)
    rows = scale * 1000 * (1 + skew * np.arange(chunks) / chunks)
    r = QueryRung(f"r{scale:g}x{chunks}", "disk", pool_bytes=64 * 2**20, connections=2)
    r.chunk_rows = {"Object": {c: float(n) for c, n in enumerate(rows)},
                    "Source": {c: float(3 * n) for c, n in enumerate(rows)}}
    r.chunk_bytes = {t: {c: n * bpr for c, n in v.items()} for t, v in r.chunk_rows.items()}
    for cache in caches:
        slow = 1.0 if cache == "warm" else 5.0
        for rep in (1, 2):
            for c, n in enumerate(rows):
                for q in ("HV2", "LV1"):
                    b = r.chunk_bytes["Object"][c]
                    t = D + (S * slow * b if q == "HV2" else 0.0)
                    r.obs.append(ChunkObs(r.run, q, cache, rep, c, t * (1 + 0.01 * rng.standard_normal()), n, b))
    return r


def test_the_fit_recovers_the_law_and_the_nodes_share_the_chunks():
    rung = _rung()
    cat = Catalog(objects=1.2e6, sources_per_object=None, nodes=1, chunks=48, ram_bytes=2**40)
    p = predict_class([rung], "HV2", cat, "warm")
    # one node: its 48 chunk queries 2 at a time, each D + S × its bytes (1.2e6 Objects × 100 bytes in all)
    assert p["seconds"] == pytest.approx((48 * D + S * 1.2e8) / 2, rel=0.05)
    assert p["ci_low"] <= p["seconds"] <= p["ci_high"] and p["n"] == 24 and p["slope_told"]
    assert p["dispatch_s"] == pytest.approx(D, rel=0.2) and p["slope"] == pytest.approx(S, rel=0.05)
    # four nodes: a quarter, the slowest node a little over it (the sky's skew)
    four = predict_class([rung], "HV2", dataclasses.replace(cat, nodes=4), "warm")["seconds"]
    assert p["seconds"] / 4 <= four <= 1.1 * p["seconds"] / 4


def test_the_users_object_row_bytes_price_the_scan_and_not_the_lookup():
    """--object-bytes: a catalog of wider rows (the published tests' ~1.1–1.3 KB against the rungs')
    is priced on the bytes a scan reads; a lookup by id reads one row either way."""
    rung, cat = _rung(), Catalog(objects=1.2e6, sources_per_object=None, nodes=1, chunks=48, ram_bytes=2**40)
    wide = dataclasses.replace(cat, object_bytes=300.0)          # 3× the rung's 100 bytes a row
    assert predict_class([rung], "HV2", wide, "warm")["seconds"] == pytest.approx((48 * D + S * 3.6e8) / 2, rel=0.05)
    assert predict_class([rung], "LV1", wide, "warm")["seconds"] == \
        pytest.approx(predict_class([rung], "LV1", cat, "warm")["seconds"], rel=0.01)
    answer = predict_queries([rung], dataclasses.replace(wide, ram_bytes=None))
    assert answer["object_bytes"] == 300.0 and "object_bytes" not in predict_queries([rung], cat)


def test_chunks_of_one_size_carry_the_whole_cost_as_growth():
    """Equal chunks cannot tell dispatch from scan: the answer for 100× larger chunks is planned
    on the slope through the origin, never on a dispatch that would stay fixed."""
    p = predict_class([_rung(skew=0.0)], "HV2", Catalog(1.2e6, None, 12, None, 2**40), "warm")
    assert not p["slope_told"] and p["dispatch_s"] == 0.0
    assert p["seconds"] == pytest.approx((D + S * 1e5) * 100, rel=0.05)    # one chunk a node, 100× its bytes


def test_a_skewed_sky_puts_its_densest_chunks_on_the_slowest_node_and_one_chunk_can_bound_it():
    rung = _rung(skew=3.0)
    even = predict_class([_rung(skew=0.2)], "HV2", Catalog(1.2e6, None, 3, None, 2**40), "warm")
    skewed = predict_class([rung], "HV2", Catalog(1.2e6, None, 3, None, 2**40), "warm")
    assert skewed["seconds"] > even["seconds"]
    # as many nodes as chunks: each node one chunk; the densest chunk is the whole time
    one = predict_class([rung], "HV2", Catalog(1.2e6, None, 12, None, 2**40), "warm")
    assert one["bound"] == "tail chunk" and one["seconds"] == pytest.approx(one["tail_chunk_s"])


def test_a_node_past_its_memory_is_priced_from_the_cold_repetitions_or_refused():
    big = Catalog(objects=1e9, sources_per_object=None, nodes=2, chunks=None, ram_bytes=2**30)
    refused = predict_queries([_rung()], big)
    assert refused["cache"] == "cold" and "queries.cold: true" in refused["classes"]["HV2"]["refused"]
    cold = predict_queries([_rung(caches=("warm", "cold"))], big)
    warm_rate = predict_queries([_rung()], Catalog(1e9, None, 2, None, 2**50))["classes"]["HV2"]
    assert cold["classes"]["HV2"]["cache"] == "cold"
    assert cold["classes"]["HV2"]["seconds"] == pytest.approx(5 * warm_rate["seconds"], rel=0.1)
    # a device twice as slow a byte (--device): what the cold repetitions added to the warm slope (4 S
    # of the cold 5 S a byte: the rungs' reads) doubles, the CPU a byte (S) and the dispatch do not
    slower = predict_queries([_rung(caches=("warm", "cold"))], dataclasses.replace(big, device_ratio=2.0))
    assert slower["classes"]["HV2"]["seconds"] / cold["classes"]["HV2"]["seconds"] == pytest.approx(9 / 5, rel=0.03)
    # and never faster than the slowest node's bytes read once at the device's rate
    crawl = dataclasses.replace(big, device_ratio=2.0, read_s_per_byte=1e-5)
    floor = predict_queries([_rung(caches=("warm", "cold"))], crawl)["classes"]["HV2"]
    assert floor["bound"] == "device sequential" and floor["seconds"] >= 1e9 * 100 / 2 * 1e-5
    assert floor["seconds"] == pytest.approx(1e9 * 100 / 2 * 1e-5, rel=0.1)
    assert predict_queries([_rung()], Catalog(1e6, None, 13, None, None))["refused"].startswith("--nodes 13 for 12")



def _chunk_part(rung: QueryRung, q: str) -> float:
    """The true chunk part of ``q`` at the rung's own size on one server (LV1: dispatch only)."""
    t = np.array([D + (S * b if q == "HV2" else 0.0) for b in rung.chunk_bytes["Object"].values()])
    return float(max(t.sum() / rung.connections, t.max()))


def _timed(rung: QueryRung, czar: dict, spread: float = 0.0) -> QueryRung:
    """Whole queries = the chunk part + czar[q](rung) (× 1 - spread, 1, 1 + spread: three repetitions)."""
    for q, law in czar.items():
        rung.query_s[(q, "warm")] = [_chunk_part(rung, q) + law(rung) * (1 + e) for e in (-spread, 0.0, spread)]
    return rung


def _lv1_law(r):        # seconds = 0.01 + 0.002 × log2(Object rows): the index's depth
    return 0.01 + 0.002 * np.log2(r.data_rows("Object"))


def _hv2_law(r):        # seconds = 0.002 + 0.002 × chunk queries sent
    return 0.002 + 0.002 * len(r.chunk_rows["Object"])


def _ladder(spread: float = 0.0) -> list[QueryRung]:
    return [_timed(_rung(chunks=c, scale=k), {"LV1": _lv1_law, "HV2": _hv2_law}, spread)
            for c, k in ((8, 1), (12, 2), (16, 4))]


def test_the_czar_law_is_recovered_from_the_whole_queries_and_added_at_the_users_catalog():
    cat = Catalog(objects=1e9, sources_per_object=None, nodes=4, chunks=48, ram_bytes=2**40)
    lv1 = predict_class(_ladder(), "LV1", cat, "warm")
    assert lv1["czar_slope_told"] and lv1["czar_unit"] == "log2 index row"
    assert lv1["czar_slope"] == pytest.approx(0.002, rel=0.02) and lv1["czar_intercept_s"] == pytest.approx(0.01, abs=1e-3)
    assert lv1["czar_s"] == pytest.approx(0.01 + 0.002 * np.log2(1e9), rel=0.02)
    # the box's 16 chunk queries of D each, 4 a node, 2 at a time
    assert lv1["chunk_s"] == pytest.approx(2 * D, rel=0.05)
    assert lv1["seconds"] == pytest.approx(lv1["chunk_s"] + lv1["czar_s"])
    assert lv1["bound"] == "czar (index lookup, dispatch and merge)"
    hv2 = predict_class(_ladder(), "HV2", cat, "warm")
    assert hv2["czar_slope_told"] and hv2["czar_unit"] == "chunk query" and hv2["chunks"] == 48
    assert hv2["czar_s"] == pytest.approx(0.002 + 0.002 * 48, rel=0.05)
    bare = predict_class([_rung(chunks=c, scale=k) for c, k in ((8, 1), (12, 2), (16, 4))], "HV2", cat, "warm")
    assert hv2["chunk_s"] == pytest.approx(bare["seconds"]) and bare["czar_s"] == 0.0 and bare["czar_rungs"] == 0


def test_lv1_grows_with_the_users_objects():
    at = {n: predict_class(_ladder(), "LV1", Catalog(n, None, 4, None, 2**40), "warm") for n in (1e8, 1e10)}
    assert at[1e10]["chunk_s"] == pytest.approx(at[1e8]["chunk_s"])
    assert at[1e10]["seconds"] - at[1e8]["seconds"] == pytest.approx(0.002 * np.log2(100), rel=0.05)


def test_rungs_that_cannot_tell_the_czar_slope_carry_the_largest_rungs_cost_a_unit():
    one = _timed(_rung(), {"LV1": lambda r: 0.05, "HV2": lambda r: 0.024})
    rows = one.data_rows("Object")
    cat = Catalog(rows * 2**10, None, 4, 48, 2**40)
    lv1 = predict_class([one], "LV1", cat, "warm")
    assert lv1["czar_slope_told"] is False and lv1["czar_intercept_s"] == 0.0
    assert lv1["czar_s"] == pytest.approx(0.05 * np.log2(rows * 2**10) / np.log2(rows), rel=0.02)
    hv2 = predict_class([one], "HV2", cat, "warm")    # 0.002 s a chunk query, 48 of them
    assert hv2["czar_slope_told"] is False and hv2["czar_s"] == pytest.approx(0.002 * 48, rel=0.05)
    # a czar part falling with size: no slope told, the largest rung's unit carried
    falling = [_timed(_rung(scale=1), {"LV1": lambda r: 0.06}), _timed(_rung(scale=4), {"LV1": lambda r: 0.05})]
    big = falling[1].data_rows("Object")
    p = predict_class(falling, "LV1", dataclasses.replace(cat, objects=big * 2**10), "warm")
    assert p["czar_slope_told"] is False and p["czar_s"] == pytest.approx(0.05 * np.log2(big * 2**10) / np.log2(big), rel=0.02)
    assert p["czar_miss"] > 0 and p["ci_high"] >= p["seconds"] + p["czar_miss"] * p["czar_s"] - 1e-12


def test_the_interval_carries_the_czar_parts_spread_and_the_own_check_is_in_sample():
    cat = Catalog(1e9, None, 4, None, 2**40)
    tight = predict_class(_ladder(), "LV1", cat, "warm")
    loose = predict_class(_ladder(spread=0.3), "LV1", cat, "warm")
    assert loose["ci_low"] <= loose["seconds"] <= loose["ci_high"]
    assert loose["ci_high"] - loose["ci_low"] > 5 * (tight["ci_high"] - tight["ci_low"])
    q = predict_queries(_ladder(), cat)
    assert "in-sample" in q["own_check_in_sample"] and "czar" in q["priced"] and "shared scans" in q["priced"]
    assert q["own_check"]["LV1"] == pytest.approx(1.0, rel=0.02) and q["own_check"]["HV2"] == pytest.approx(1.0, rel=0.02)
    assert q["own_check_chunk_part"]["LV1"] < 0.5 < q["own_check_chunk_part"]["HV2"] < 1.0

@pytest.mark.slow
@pytest.mark.server
def test_predict_nodes_answers_from_a_real_runs_query_results(tmp_path):
    run = shared_tiny_run()
    res = run["wd"] / "results" / "faults"
    out = tmp_path / "p.json"
    base = [str(VENV_BIN / "catbench"), "predict", "--config", str(run["wd"] / "config.yaml"),
            "--results", str(res), "--loads-only", "--nodes", "2"]
    r = subprocess.run([*base, "--objects", "2400", "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    q = json.loads(out.read_text())["queries"]["disk"]
    assert q["cache"] == "warm" and q["validated"] is False and q["nodes"] == 2
    for name in ("HV1", "HV2", "HV3"):
        p = q["classes"][name]
        assert 0 < p["ci_low"] <= p["seconds"] <= p["ci_high"] and p["chunks"] == q["chunks"], (name, p)
        assert p["seconds"] == pytest.approx(p["chunk_s"] + p["czar_s"]) and p["czar_rungs"] == 1, (name, p)
    assert "in-sample" in q["own_check_in_sample"] and set(q["own_check"]) == set(q["own_check_chunk_part"])
    assert "HV2:" in r.stdout and "bound:" in r.stdout
    # DuckDB over the run's Parquet chunk files: one process; one warm repetition a class is not a fit
    duck = json.loads(out.read_text())["queries"]["parquet"]["engines"]["duckdb"]
    assert duck["nodes"] == 1 and duck["workers"] is None and duck["node_data_bytes"] > 0
    assert all("1 whole queries measured warm" in p["refused"] for p in duck["classes"].values()), duck
    assert "duckdb on 1 node(s) (one process), warm" in r.stdout
    # 10^9 objects on two nodes leave their memory: the run measured no cold query
    r = subprocess.run([*base, "--objects", "1e9"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "no rung measured a cold query" in r.stdout, r.stdout + r.stderr


def _rung_files(d, seconds: float):
    import pyarrow as pa
    import pyarrow.parquet as pq
    d.mkdir(parents=True)
    (d / "summary.json").write_text(json.dumps({"connections": 2, "server": {"variables": {
        "innodb_buffer_pool_size": str(2**26)}}}))
    pq.write_table(pa.Table.from_pylist([{"target": "disk", "kind": "Object", "chunkId": c, "rows": 100,
                                          "bytes": 1e4, "seconds": 0.01} for c in (1, 2)]), d / "chunk_loads.parquet")
    pq.write_table(pa.Table.from_pylist([{"target": "disk", "query_engine": "mysql", "query": "HV2", "cache": "warm",
                                          "run": 1, "chunkId": c, "seconds": s, "result_rows": 1}
                                         for c, s in ((1, 0.01), (2, seconds))]), d / "chunk_times.parquet")
    pq.write_table(pa.Table.from_pylist([{"query": "HV2", "cache": "warm", "seconds": 0.03}]), d / "results.parquet")


def test_a_chunk_time_that_is_not_a_figure_is_named_with_its_file_and_row(tmp_path):
    from catbench.predict.queries.runs import QueryRunError, read_rung
    _rung_files(tmp_path / "ok" / "queries" / "disk" / "mysql", 0.02)
    rung = read_rung(tmp_path / "ok", "disk")
    assert rung.pool_bytes == 2**26 and rung.data_bytes() == 2e4 and len(rung.obs) == 2
    assert read_rung(tmp_path / "ok", "ssd") is None
    _rung_files(tmp_path / "bad" / "queries" / "disk" / "mysql", float("nan"))
    with pytest.raises(QueryRunError, match=r"chunk_times\.parquet row 2: nan\b"):
        read_rung(tmp_path / "bad", "disk")


def _measured(rung: QueryRung, seconds: dict) -> QueryRung:
    """``rung`` as a measured run whose whole queries took ``seconds`` ({(query, cache): [s]})."""
    m = dataclasses.replace(rung, run="far", obs=[], query_s=dict(seconds))
    return m


def test_a_sealed_answer_is_scored_against_the_run_that_measured_it():
    from catbench.predict.queries.score import ScoreError, lines, score
    rung = _rung(caches=("warm", "cold"))
    objects = rung.data_rows("Object")
    answer = predict_queries([rung], Catalog(objects, None, 1, None, ram_bytes=1.0), with_own_check=False)
    hv2 = answer["classes"]["HV2"]
    assert hv2["cache"] == "cold"
    hit = score(answer, _measured(rung, {("HV2", "cold"): [hv2["seconds"] * 1.2, hv2["seconds"] * 1.3]}))
    v = hit["classes"]["HV2"]
    assert v["within_band"] and v["predicted_over_measured"] == pytest.approx(1 / 1.25) and v["n_measured"] == 2
    assert hit["headline_within_band"]["HV2"] and hit["headline_within_band"]["HV3"] is None
    assert not hit["classes"]["LV1"]["scored"] and "timed no cold LV1" in hit["classes"]["LV1"]["why"]
    miss = score(answer, _measured(rung, {("HV2", "cold"): [hv2["seconds"] * 3]}))["classes"]["HV2"]
    assert not miss["within_band"] and not miss["inside_interval"]
    assert any("HV2 (cold)" in ln and "MISS" in ln for ln in lines(score(answer, _measured(
        rung, {("HV2", "cold"): [hv2["seconds"] * 3]}))))
    # a run of another size, or an answer for a cluster, is never scored
    with pytest.raises(ScoreError, match="17,500 Objects.* 35,000"):      # measured, predicted
        score({**answer, "objects": 2 * objects}, _measured(rung, {}))
    with pytest.raises(ScoreError, match="the answer is for 4 nodes"):
        score({**answer, "nodes": 4}, _measured(rung, {}))


def test_the_users_own_chunks_price_a_box_at_its_own_rows_and_a_scan_at_theirs(tmp_path):
    """--chunk-rows: a sky whose mean density grew where a box's did not prices the box at its
    own chunks' rows (the rungs' mean would scale its pairs by the mean's square); a scan reads
    every one of the user's chunks; a malformed file is named with its line."""
    from catbench.predict.queries.runs import QueryRunError, read_user_chunks
    rung = _rung(caches=("warm",))
    for c in (0, 1):     # a pair query over the rung's first two chunks
        for rep in (1, 2):
            n = rung.chunk_rows["Object"][c]
            rung.obs.append(ChunkObs(rung.run, "SHV1", "warm", rep, c, D + 1e-9 * n * n, n, n * 100))
    own = {c: n for c, n in rung.chunk_rows["Object"].items()}
    own.update({100 + c: 10 * n for c, n in own.items()})      # ten times denser beside the box
    f = tmp_path / "chunks.tsv"
    f.write_text("chunkId\tobject_rows\tsource_rows\n" + "".join(f"{c}\t{int(n)}\t{3 * int(n)}\n" for c, n in own.items()))
    sky = read_user_chunks(f)
    objects = sum(sky["Object"].values())
    mine = Catalog(objects, None, 1, len(own), 2**40, sky=sky)
    mean = Catalog(objects, None, 1, len(own), 2**40)
    shv1 = predict_class([rung], "SHV1", mine, "warm")
    assert shv1["tail_chunk_s"] == pytest.approx(D + 1e-9 * rung.chunk_rows["Object"][1] ** 2, rel=0.05)
    assert predict_class([rung], "SHV1", mean, "warm")["seconds"] > 5 * shv1["seconds"]   # the mean: 5.5x the rows
    hv2 = predict_class([rung], "HV2", mine, "warm")
    assert hv2["chunks"] == 24 and hv2["seconds"] == pytest.approx((24 * D + S * objects * 100) / 2, rel=0.05)
    f.write_text("chunkId\tobject_rows\n7\t10\n7\t12\n")
    with pytest.raises(QueryRunError, match=r"chunks\.tsv line 3: chunk 7\b.*twice"):
        read_user_chunks(f)
    f.write_text("chunk\trows\n7\t10\n")
    with pytest.raises(QueryRunError, match=r"line 1 lacks chunkId or object_rows"):
        read_user_chunks(f)


def test_the_interval_widens_by_the_forms_error_grown_with_the_distance_past_the_rungs():
    from catbench.predict.queries.model import form_error, widened
    rungs = [_rung(caches=("warm",), scale=k) for k in (1, 2, 4)]
    assert form_error(rungs[:2], "HV2", "warm") is None          # two rungs: nothing left out to check
    for r, whole in zip(rungs, (1.0, 2.0, 8.0)):                  # the largest's whole query twice the law's
        r.query_s[("HV2", "warm")] = [whole, whole]
    err = form_error(rungs, "HV2", "warm")
    assert err > 0.3
    lo, hi = widened(9.0, 11.0, 10.0, err, 16.0)                 # four doublings past the largest rung
    assert hi == pytest.approx(10.0 * np.exp(4 * err)) and lo == pytest.approx(10.0 / np.exp(4 * err))
    assert widened(9.0, 11.0, 10.0, err, 0.5) == pytest.approx((10.0 / np.exp(err), 10.0 * np.exp(err)))
    assert widened(9.0, 11.0, 10.0, None, 16.0) == (9.0, 11.0)


def test_a_box_chunk_is_priced_on_its_own_time_at_the_largest_rung():
    """Two box chunks of one size that the box covers unequally (3 s and 20 s at the rung): at
    twice the density each keeps its own law, the slow one 4x its pairs' time, where one slope
    over both would price them alike; the czar's part is then what the chunks leave."""
    rung = _rung(caches=("warm",))
    for c, t in ((0, 3.0), (1, 20.0)):
        rung.chunk_rows["Object"][c] = 1000.0
        for rep in (1, 2):
            rung.obs.append(ChunkObs(rung.run, "SHV1", "warm", rep, c, t, 1000.0, 1000.0 * 100))
    rung.query_s[("SHV1", "warm")] = [20.0, 20.0]
    sky = {"Object": {c: 2 * n for c, n in rung.chunk_rows["Object"].items()}}
    cat = Catalog(sum(sky["Object"].values()), None, 1, None, 2**40, sky=sky)
    p = predict_class([rung], "SHV1", cat, "warm")
    assert p["tail_chunk_s"] == pytest.approx(80.0, rel=0.01) and p["czar_s"] == pytest.approx(0.0, abs=0.01)
