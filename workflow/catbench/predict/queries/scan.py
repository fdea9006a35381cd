"""Each query class at the user's catalog for the engines that read a layout rather than send
chunk queries: DuckDB over the Parquet chunk files (one process on one node) and LSDB over the
HATS catalogs (a Dask cluster's workers). There is no chunk query to fit, so a class's whole
queries at each rung are fitted on what drives them there (``resources/predict/scan_drivers.yaml``:
the table's rows for a pass over it, the box's rows for a box, the box's candidate pairs for a
self-match, nothing for an index lookup): a fixed part plus a slope, as the chunk model's
(``model.fit``). The rungs differ in density over one sky; the user's catalog is priced at its
Objects (a pass) and its mean Objects a chunk against the largest rung's (a box at the user's
density). LSDB's data part divides over the user's workers (``--workers`` a node × nodes)
against the rungs' own; DuckDB is one process, priced with the rungs' threads. A layout past a
node's memory is priced from the evicted runs (the layout's page cache dropped before each, the
engine kept: ``queries.evicted``) where the rungs ran them, else the cold ones. Intervals: each
rung's repetitions resampled and the fit redone, widened by the form's own error (the largest
rung predicted from the others)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from ...core.infra.config.yamlfile import read, read_json, read_with
from .model import fit, interval, widened
from .runs import KIND, QueryRunError, finite, read_user_chunks

DRIVERS_FILE = Path(__file__).resolve().parents[4] / "resources" / "predict" / "scan_drivers.yaml"
BOX_KEYS = ("ra_min", "ra_max", "dec_min", "dec_max")


@cache
def drivers() -> dict:
    """{engine: {class: (table, driver)}} from the registry file."""
    doc = read(DRIVERS_FILE, "the scan engines' drivers")
    return {e: {q: tuple(v) for q, v in classes.items()} for e, classes in doc.items()}


ENGINES = tuple(drivers())


@dataclass
class ScanRung:
    """One rung's results of one scan engine on one target."""
    run: str
    target: str
    engine: str
    rows: dict                                   # table -> rows
    chunks: int
    layout_bytes: float                          # what the engine reads on the target
    workers: int | None                          # LSDB's Dask workers; None: DuckDB's one process
    box: dict = field(default_factory=dict)      # class -> (box Objects, radius ÷ the box's height)
    query_s: dict = field(default_factory=dict)  # (class, cache) -> [whole query seconds]

    def data_rows(self, table: str = "Object") -> float:
        return float(self.rows.get(table, 0.0))

    def data_bytes(self) -> float:
        return self.layout_bytes


def _layout(summary: dict, engine: str, where: str) -> tuple[float, int | None]:
    """(bytes the engine reads, its workers) from its summary.json."""
    load = summary.get("load") or {}
    if engine == "lsdb":
        tables = (load.get("hats") or {}).get("tables") or {}
        nbytes = sum(finite((t or {}).get("bytes"), f"{where}: load.hats.tables bytes") for t in tables.values())
        return nbytes, int(finite((summary.get("dask") or {}).get("workers"), f"{where}: dask.workers"))
    return finite((load.get("parquet") or {}).get("bytes"), f"{where}: load.parquet.bytes"), None


@cache
def _box_objects(chunks_dir: Path, ids: tuple[int, ...], box: tuple[float, ...]) -> float:
    """Objects of the run's chunk files (overlaps left out) inside ``box`` (BOX_KEYS' values):
    counted once a run, whichever engines drew the same box."""
    files = [f for f in (chunks_dir / "Object" / f"chunk_{c}.parquet" for c in ids) if f.exists()]
    if not files:
        raise QueryRunError(f"{chunks_dir}/Object: no chunk file to count a box's Objects in ({KIND})")
    p = dict(zip(BOX_KEYS, box))
    f = ((ds.field("ra_PS") >= p["ra_min"]) & (ds.field("ra_PS") <= p["ra_max"])
         & (ds.field("decl_PS") >= p["dec_min"]) & (ds.field("decl_PS") <= p["dec_max"]))
    return float(ds.dataset([str(x) for x in files], format="parquet").count_rows(filter=f))


def read_scan_rung(results: Path, target: str, engine: str) -> ScanRung | None:
    """``engine``'s query results of ``target`` in ``results`` (results/<run>); None without them."""
    d = Path(results) / "queries" / target / engine
    if not (d / "results.parquet").exists():
        return None
    summary = read_json(d / "summary.json", "a query rung", KIND)
    sky = read_user_chunks(Path(results) / "chunks" / "chunks.tsv")
    rows = {t: float(sum(v.values())) for t, v in sky.items()}
    nbytes, workers = _layout(summary, engine, str(d / "summary.json"))
    rung = ScanRung(Path(results).name, target, engine, rows, len(sky["Object"]), nbytes, workers)
    ids = tuple(sorted(sky["Object"]))
    for q, (_, kind) in drivers()[engine].items():
        p = (summary.get("params") or {}).get(q) or {}
        if kind in ("box", "pairs") and all(k in p for k in BOX_KEYS):
            height = max(float(p["dec_max"]) - float(p["dec_min"]), 1e-12)
            box = tuple(float(p[k]) for k in BOX_KEYS)
            rung.box[q] = (_box_objects(Path(results).resolve() / "chunks", ids, box),
                           float(p.get("radius_deg", 0.0)) / height)
    for i, r in enumerate(read_with(pq.read_table, d / "results.parquet", "a query rung", KIND).to_pylist(), 1):
        if r["query"] in drivers()[engine] and r.get("seconds") is not None:
            rung.query_s.setdefault((r["query"], r["cache"]), []).append(
                finite(r["seconds"], f"{d / 'results.parquet'} row {i}"))
    return rung


@dataclass(frozen=True)
class At:
    """Where a class is priced: the user's rows of each table, mean Objects a chunk, workers."""
    rows: dict
    per_chunk: float
    workers: int | None


def driver(rung: ScanRung, query: str, at: At | None = None) -> float:
    """What drives ``query`` at ``rung`` (``at``: at the user's catalog, the rung's box scaled to
    the user's density)."""
    table, kind = drivers()[rung.engine][query]
    if kind == "lookup":
        return 0.0
    if kind == "rows":
        return (at.rows if at else rung.rows).get(table, 0.0)
    if query not in rung.box:
        raise QueryRunError(f"{rung.run}: {query} has no box in its summary.json params ({KIND})")
    objects, r_over_h = rung.box[query]
    if at is not None:
        objects *= at.per_chunk / (rung.data_rows("Object") / rung.chunks)
    rows = at.rows if at else rung.rows
    per = rows.get(table, 0.0) / max(rows.get("Object", 0.0), 1.0) if table != "Object" else 1.0
    return objects * per if kind == "box" else objects ** 2 * r_over_h


def _points(rungs: list[ScanRung], query: str, cache: str) -> list[tuple[float, np.ndarray]]:
    """Per rung that timed ``query`` in ``cache``: (its driver a worker, its repetitions)."""
    return [(driver(r, query) / (r.workers or 1), np.array(r.query_s[(query, cache)], float))
            for r in rungs if r.query_s.get((query, cache))]


def _fit(points) -> tuple[float, float, bool]:
    x = np.concatenate([np.full(len(t), xr) for xr, t in points])
    return fit(x, np.concatenate([t for _, t in points]))


def form_error(rungs: list[ScanRung], query: str, cache: str) -> float | None:
    """|ln(predicted ÷ measured)| of the largest rung's median from the other rungs alone at its
    own size; None with under three rungs timing the class."""
    have = [r for r in rungs if r.query_s.get((query, cache))]
    if len(have) < 3:
        return None
    big = max(have, key=lambda r: r.data_rows())
    d, s, _ = _fit(_points([r for r in have if r is not big], query, cache))
    med = float(np.median(big.query_s[(query, cache)]))
    p = d + s * driver(big, query) / (big.workers or 1)
    return abs(math.log(p / med)) if p > 0 and med > 0 else None


def _bound(kind: str, cache: str, fixed: float, data: float) -> str:
    if kind == "lookup":
        return "fixed cost (index lookup, task start)"
    if fixed >= data:
        return "fixed cost a query (planning, task start, files opened)"
    if kind == "pairs":
        return "CPU (pairs compared)"
    return f"reading the layout ({cache})" if cache != "warm" else "CPU (scan from memory)"


def _class(rungs: list[ScanRung], query: str, cache: str, at: At, distance_rows: float) -> dict:
    points = _points(rungs, query, cache)
    n = int(sum(len(t) for _, t in points))
    if n < 2:
        return {"refused": f"{query}: {n} whole queries measured {cache} in the rungs; 2 or more are needed "
                           "(queries.repetitions, queries.cold)"}
    big = max((r for r in rungs if r.query_s.get((query, cache))), key=lambda r: r.data_rows())
    x_user = driver(big, query, at) / (at.workers or 1)
    d, s, told = _fit(points)
    seconds = d + s * x_user

    def draw(rng: np.random.Generator) -> float:
        # each rung's repetitions resampled, the fit redone
        db, sb, _ = _fit([(xr, t[rng.integers(0, len(t), len(t))]) for xr, t in points])
        return db + sb * x_user

    err = form_error(rungs, query, cache)
    x_big = driver(big, query) / (big.workers or 1)
    distance = x_user / x_big if x_big > 0 else distance_rows
    lo, hi = widened(*interval(draw, seconds, 0.0), seconds, err, distance)
    kind = drivers()[big.engine][query][1]
    return {"seconds": seconds, "ci_low": lo, "ci_high": hi, "n": n,
            "cache": cache, "bound": _bound(kind, cache, d, s * x_user), "dispatch_s": d, "slope": s,
            "slope_told": told, "driver": kind, "x_past_rungs": distance if x_big > 0 else None,
            "form_error": err}


def predict_scan(rungs: list[ScanRung], cat, workers: int | None = None) -> dict:
    """Every class of the rungs' engine at ``cat`` (model.Catalog; ``workers``: LSDB's Dask
    workers a node, None the rungs'): warm where a node's layout fits its memory, else from the
    rungs' evicted runs where they ran them, else their cold ones."""
    big = max(rungs, key=lambda r: r.data_rows())
    engine = big.engine
    spo = cat.sources_per_object or big.data_rows("Source") / max(big.data_rows("Object"), 1.0)
    rows = {"Object": cat.objects, "Source": cat.objects * spo}
    nodes = cat.nodes if big.workers else 1          # DuckDB: one process on one node
    w = (workers or big.workers) * nodes if big.workers else None
    at = At(rows, cat.objects / (cat.chunks or big.chunks), w)
    held = big.layout_bytes * cat.objects / max(big.data_rows(), 1.0) / nodes
    # past memory: the runs with the layout evicted and the engine kept where the rungs ran them
    past = "evicted" if any(c == "evicted" for r in rungs for _, c in r.query_s) else "cold"
    cache = "warm" if cat.ram_bytes is None or held <= cat.ram_bytes else past
    out = {"engine": engine, "nodes": nodes, "objects": cat.objects, "chunks": cat.chunks or big.chunks,
           "node_data_bytes": held, "ram_bytes": cat.ram_bytes, "cache": cache, "workers": w,
           "rungs": sorted(r.run for r in rungs), "validated": False,
           "priced": ("whole queries fitted on what drives each class at each rung (resources/predict/"
                      "scan_drivers.yaml); " + ("the data part divided over the workers against the rungs' "
                                                f"{big.workers} (not measured past them)" if w else
                                                "one process on one node with the rungs' threads")),
           "classes": {}}
    for q in drivers()[engine]:
        out["classes"][q] = _class(rungs, q, cache, at, cat.objects / max(big.data_rows(), 1.0))
    return out
