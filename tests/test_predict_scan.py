"""Queries at the user's scale for the engines that read a layout (predict/queries/scan.py):
rungs whose whole queries follow a known law per class give it back at the user's catalog (a
pass on the rows, a box on the density, a self-match on the density squared, a lookup flat);
LSDB's data part divides over the user's workers and DuckDB stays one process; a layout past a
node's memory is priced cold or refused; a bad figure is named with its file and row; the
registry of drivers covers every engine and class the query stage runs."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from catbench.predict.queries.model import Catalog
from catbench.predict.queries.runs import QueryRunError
from catbench.predict.queries.scan import drivers, form_error, predict_scan, read_scan_rung

D, S = 0.05, 2e-5            # a query's fixed seconds, and seconds a unit of its driver
BOX = {"ra_min": 10.0, "ra_max": 11.0, "dec_min": 0.0, "dec_max": 1.0}
CHUNKS = 4                   # each a 1 x 1 deg square at ra 10..14


def _law(kind: str, rows: float, box: float, cache: str) -> float:
    x = {"rows": rows, "box": box, "pairs": box ** 2 * 0.01, "lookup": 0.0}[kind]
    return D + S * x * {"cold": 4.0, "evicted": 2.0}.get(cache, 1.0)


def _write(root, engine: str, objects: int, workers: int | None = 2, reps: int = 3, caches=("warm", "cold"),
           bad: float | None = None):
    """A rung of ``objects`` Objects spread evenly over CHUNKS chunk squares (a quarter in BOX),
    its ``engine``'s whole queries at ``_law`` with 1 % noise (the data part over ``workers``)."""
    rng = np.random.default_rng(objects)
    chunks = root / "chunks"
    (chunks / "Object").mkdir(parents=True)
    per = objects // CHUNKS
    lines = ["chunkId\tobject_rows\tsource_rows"]
    for c in range(CHUNKS):
        ra = 10.0 + c + rng.uniform(0.0, 1.0, per)
        pq.write_table(pa.table({"objectId": np.arange(per) + c * per, "ra_PS": ra,
                                 "decl_PS": rng.uniform(0.0, 1.0, per)}), chunks / "Object" / f"chunk_{c}.parquet")
        lines.append(f"{c}\t{per}\t{2 * per}")
    (chunks / "chunks.tsv").write_text("\n".join(lines) + "\n")
    d = root / "queries" / "disk" / engine
    d.mkdir(parents=True)
    params = {"LV3": dict(BOX), **{q: {**BOX, "radius_deg": 0.01} for q in ("SHV1", "SHV2")}}
    load = ({"hats": {"tables": {"Object": {"bytes": 100 * objects}, "Source": {"bytes": 100 * objects}}}}
            if engine == "lsdb" else {"parquet": {"bytes": 200 * objects}})
    (d / "summary.json").write_text(json.dumps({"params": params, "load": load,
                                                **({"dask": {"workers": workers}} if engine == "lsdb" else {})}))
    rows = []
    for q, (table, kind) in drivers()[engine].items():
        n = objects * (2 if table == "Source" else 1)
        box = per * (2 if table == "Source" else 1)          # the box is one chunk's square
        for cache in caches:
            for rep in range(reps):
                t = _law(kind, n, box, cache)
                t = D + (t - D) / (workers or 1)
                rows.append({"query": q, "cache": cache, "run": rep, "seconds": t * (1 + 0.01 * rng.standard_normal())})
    if bad is not None:
        rows[-1]["seconds"] = bad
    pq.write_table(pa.Table.from_pylist(rows), d / "results.parquet")
    return read_scan_rung(root, "disk", engine)


def _ladder(tmp_path, engine: str, workers: int | None = 2, **kw):
    return [_write(tmp_path / f"{engine}{n}", engine, n, workers if engine == "lsdb" else None, **kw)
            for n in (4000, 8000, 16000)]


def test_a_rung_is_read_with_its_layout_workers_and_the_objects_in_each_box(tmp_path):
    rung = _write(tmp_path / "r", "lsdb", 4000)
    assert rung.rows == {"Object": 4000.0, "Source": 8000.0} and rung.chunks == CHUNKS
    assert rung.layout_bytes == 800_000 and rung.workers == 2
    assert rung.box["LV3"] == (1000.0, 0.0) and rung.box["SHV1"] == (1000.0, pytest.approx(0.01))
    assert len(rung.query_s[("HV2", "warm")]) == 3
    assert read_scan_rung(tmp_path / "r", "ssd", "lsdb") is None


@pytest.mark.parametrize("engine", ["duckdb", "lsdb"])
def test_each_classes_law_is_given_back_at_the_users_catalog(tmp_path, engine):
    rungs = _ladder(tmp_path, engine)
    objects = 1.6e6                                    # 100× the largest rung over the same chunks
    ans = predict_scan(rungs, Catalog(objects, None, 1, None, None))
    assert ans["cache"] == "warm" and ans["nodes"] == 1
    w = 2 if engine == "lsdb" else 1
    for q, (table, kind) in drivers()[engine].items():
        p = ans["classes"][q]
        n = objects * (2 if table == "Source" else 1)
        want = D + (_law(kind, n, n / CHUNKS, "warm") - D) / w
        assert p["seconds"] == pytest.approx(want, rel=0.1), (q, p)
        assert p["ci_low"] <= p["seconds"] <= p["ci_high"] and p["n"] == 9 and p["driver"] == kind, (q, p)
        assert p["form_error"] is not None and p["form_error"] < 0.1, (q, p)
    # what bounds it: a flat lookup its fixed cost, a pass at 100× its data
    assert ans["classes"]["HV2"]["bound"] == "CPU (scan from memory)"
    if engine == "lsdb":
        assert ans["classes"]["LV1"]["bound"].startswith("fixed cost")


def test_lsdb_divides_its_data_part_over_the_users_workers_and_duckdb_stays_one_process(tmp_path):
    lsdb = _ladder(tmp_path, "lsdb")
    cat = Catalog(1.6e6, None, 4, None, None)
    base = predict_scan(lsdb, cat)                     # 4 nodes × the rungs' 2 workers
    more = predict_scan(lsdb, cat, workers=4)          # 4 nodes × 4
    assert base["workers"] == 8 and more["workers"] == 16 and base["nodes"] == 4
    data = base["classes"]["HV2"]["seconds"] - D
    assert more["classes"]["HV2"]["seconds"] - D == pytest.approx(data / 2, rel=0.05)
    assert more["classes"]["LV1"]["seconds"] == pytest.approx(base["classes"]["LV1"]["seconds"], rel=0.05)
    duck = predict_scan(_ladder(tmp_path / "d", "duckdb"), cat, workers=4)
    assert duck["nodes"] == 1 and duck["workers"] is None and "one process" in duck["priced"]


def test_a_layout_past_a_nodes_memory_is_priced_evicted_or_cold_or_refused(tmp_path):
    rungs = _ladder(tmp_path, "duckdb")
    # 1.6e6 Objects × 200 bytes = 320 MB of Parquet against 100 MB of memory
    ans = predict_scan(rungs, Catalog(1.6e6, None, 1, None, 100e6))
    assert ans["cache"] == "cold" and ans["node_data_bytes"] == pytest.approx(3.2e8)
    hv2 = ans["classes"]["HV2"]
    assert hv2["seconds"] == pytest.approx(_law("rows", 1.6e6, 0, "cold"), rel=0.1)
    assert hv2["bound"] == "reading the layout (cold)"
    # rungs that also ran with the layout evicted and the engine kept: those runs price it
    evicted = predict_scan(_ladder(tmp_path / "e", "duckdb", caches=("warm", "cold", "evicted")),
                           Catalog(1.6e6, None, 1, None, 100e6))
    assert evicted["cache"] == "evicted" and evicted["classes"]["HV2"]["bound"] == "reading the layout (evicted)"
    assert evicted["classes"]["HV2"]["seconds"] == pytest.approx(_law("rows", 1.6e6, 0, "evicted"), rel=0.1)
    warm_only = _ladder(tmp_path / "w", "duckdb", caches=("warm",))
    refused = predict_scan(warm_only, Catalog(1.6e6, None, 1, None, 100e6))["classes"]["HV2"]
    assert "0 whole queries measured cold" in refused["refused"] and "queries.cold" in refused["refused"]


def test_two_rungs_have_no_form_error_and_a_bad_time_is_named_with_its_file_and_row(tmp_path):
    rungs = _ladder(tmp_path, "lsdb")[:2]
    assert form_error(rungs, "HV2", "warm") is None
    with pytest.raises(QueryRunError, match=r"results\.parquet row 48: nan\b"):
        _write(tmp_path / "bad", "lsdb", 4000, bad=float("nan"))


def test_the_drivers_cover_every_engine_and_class_the_query_stage_runs():
    from catbench.query.query_engines import QUERY_ENGINES
    from catbench.query.suite import load_suite
    classes = set(load_suite())
    assert set(drivers()) == set(QUERY_ENGINES) - {"mysql"}
    for engine, by in drivers().items():
        assert set(by) == classes, engine
        assert all(kind in ("rows", "box", "pairs", "lookup") and table in ("Object", "Source")
                   for table, kind in by.values()), engine
