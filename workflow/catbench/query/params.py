"""Every query's parameters.

Parameters (object id, boxes, radii, cuts) come from ``queries.parameters.<Q>`` in the
config or are drawn with the run seed from the data, checked with DuckDB so every query
returns data; the same data, seed and config give the same parameters on every target
and engine. A query file's header says what is drawn for it (``-- draw:``, ``suite.py``) and
its parameters' defaults (``-- defaults:``: DMTR-21's box sizes and cuts, overridable per
query through ``queries.parameters``); a drawn box and SHV1's radius shrink from them to the
patch's density (``sizing.py``), within the draw's time budget.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pyarrow.parquet as pq

from ..core.sky.geometry import Geometry
from .chunk_tables import ChunkInfo, chunk_file
from .engines import DuckdbEngine
from .sizing import Sizer, tests_per_object
from .spec import Draw, QuerySpec
from .suite import QUERY_NAMES, Query, QueryError, load_suite

log = logging.getLogger(__name__)

BOX_KEYS = ("ra_min", "ra_max", "dec_min", "dec_max")
_SEED_STREAM = 3_2013  # the parameter draw's own random stream of the run seed


def clamp_box(ra: float, dec: float, size: float) -> dict:
    """A ``size`` x ``size`` deg box centred on (ra, dec), moved inside the sky if needed."""
    half = size / 2.0
    ra = min(max(ra, half), 360.0 - half)
    dec = min(max(dec, -90.0 + half), 90.0 - half)
    return {"ra_min": ra - half, "ra_max": ra + half, "dec_min": dec - half, "dec_max": dec + half}


class _Draw:
    """The random choices of one parameter draw (chunks weighted by their rows)."""

    def __init__(self, draw: Draw, chunks_dir, chunks: list[ChunkInfo], engine: DuckdbEngine, geometry: Geometry):
        self.rng = np.random.default_rng([draw.seed, _SEED_STREAM])
        self.chunks_dir, self.chunks, self.engine, self.tries = chunks_dir, chunks, engine, draw.max_tries
        self.weights_src = np.array([c.source_rows for c in chunks], float)
        self.weights_obj = np.array([c.object_rows for c in chunks], float)
        self.sizer, self.geometry, self.target_tests = Sizer(engine, draw), geometry, draw.target_tests

    def _chunk(self, weights: np.ndarray) -> ChunkInfo:
        return self.chunks[self.rng.choice(len(self.chunks), p=weights / weights.sum())]

    def object_with_sources(self) -> int:
        c = self._chunk(self.weights_src)
        ids = pq.read_table(chunk_file(self.chunks_dir, "Source", c.chunk_id, "parquet"),
                            columns=["objectId"])["objectId"].to_numpy()
        return int(ids[self.rng.integers(len(ids))])

    def box(self, query, p: dict, size: float, sized: tuple[bool, bool]) -> dict:
        """``p`` with a box of ``size`` deg around a random Object where ``query`` returns data;
        ``sized``: (the box, SHV1's radius) shrink to the density around that Object."""
        for attempt in range(self.tries):
            c = self._chunk(self.weights_obj)
            t = pq.read_table(chunk_file(self.chunks_dir, "Object", c.chunk_id, "parquet"),
                              columns=["ra_PS", "decl_PS"])
            k = int(self.rng.integers(t.num_rows))
            ra, dec = float(t["ra_PS"][k].as_py()), float(t["decl_PS"][k].as_py())
            cand, found = self._sized(query, p, (ra, dec, size), sized)
            if found is None:   # no pair in the sample: the query itself says whether it returns data
                ans = self.sizer.run(query, cand)
                found = ans.rows[0][0] if ans.columns == ["n"] else len(ans.rows)
            if found and found > 0:
                log.info("%s: drew box ra %.4f..%.4f dec %.4f..%.4f (%d tries)", query.name, cand["ra_min"],
                         cand["ra_max"], cand["dec_min"], cand["dec_max"], attempt + 1)
                return cand
        raise QueryError(f"query {query.name}: no box of {size} deg in {self.tries} draws returns data; set "
                         f"queries.parameters.{query.name} (a box, or looser cuts) in the config")

    def _sized(self, query: Query, p: dict, at: tuple[float, float, float], sized: tuple[bool, bool]):
        """The candidate parameters around ``at`` (ra, dec, box size), and what says it returns
        data without running the query: SHV1's sampled pairs when any (None: run the query)."""
        ra, dec, size = at
        name = query.name

        def box_of(s):
            return clamp_box(ra, dec, s)
        if sized[0]:
            box, rows, size = self.sizer.box(name, box_of, size)
        else:
            box, rows = box_of(size), None
        cand = {**p, **box}
        if "radius" not in query.draw:
            return cand, None
        if rows is None:
            rows = self.sizer.count(name, box)
        radius = float(cand["radius_deg"])
        if sized[1]:
            radius, sampled, est = self.sizer.radius(box, rows, radius)
        else:
            sampled, est = self.sizer.pairs(box, rows, radius)
        cand["radius_deg"] = radius
        if sized[0] and est > 0:     # MySQL's sub-chunk join at the density around the Objects
            per = tests_per_object(self.geometry, 2.0 * est / rows / (math.pi * radius ** 2))
            if rows * per > self.target_tests:
                box, rows, size = self.sizer.box(name, box_of, size, max(1, int(self.target_tests / per)))
                cand.update(box)
                sampled, est = self.sizer.pairs(box, rows, radius)
        density = _density(rows, size, dec)
        log.info("%s: %d Objects in a %.4g deg box (~%.0f /deg²), radius %.4g deg: ~%.0f pairs "
                 "(from %d sampled)", name, rows, size, density, radius, est, sampled)
        return cand, (1 if est > 0 else None)


def _density(rows: int, size: float, dec: float) -> float:
    """Objects per deg² of a ``size`` deg box at ``dec`` holding ``rows``."""
    return rows / max(size * size * math.cos(math.radians(dec)), 1e-12)


def _box_parameters(query: Query, given: dict, overlap: float) -> tuple[dict, float]:
    """A box query's parameters over its file's defaults, and the box size to draw (the most it
    may have: a size not given shrinks to the density, sizing.py)."""
    name = query.name
    p = {**query.defaults, **given}
    if "radius" in query.draw:      # a pair radius: at most the overlap, which it defaults to
        p.setdefault("radius_deg", overlap)
        if float(p["radius_deg"]) > overlap:
            raise QueryError(f"config key 'queries.parameters.{name}.radius_deg': {p['radius_deg']} is "
                             f"larger than partition.overlap_deg ({overlap}); pairs across sub-chunks "
                             f"would be missed")
    size = float(p.pop("box_deg"))
    if any(k in p for k in BOX_KEYS) and not all(k in p for k in BOX_KEYS):
        raise QueryError(f"config key 'queries.parameters.{name}': give all of {', '.join(BOX_KEYS)} "
                         f"or none (then a box of box_deg is drawn)")
    return p, size


def _query(suite: dict, name: str) -> Query:
    return suite[name] if name in suite else load_suite((name,))[name]


def _draw_all(spec: QuerySpec, suite: dict, draw: _Draw) -> dict[str, dict]:
    """The parameters of the queries ``spec`` runs, and no others: a query not asked for may
    need columns the patch lacks (LV3's fluxes). What each draws is its file's ``-- draw:``. The
    draws keep one stream in one order (the objects, then the boxes, each in the suite's order:
    LV1 and LV2's object, then LV3, SHV1, SHV2), so the whole suite draws what it always drew."""
    given = spec.draw.given
    bad = set(given) - set(QUERY_NAMES)
    if bad:
        raise QueryError(f"config key 'queries.parameters': unknown queries {sorted(bad)}")
    asked = [_query(suite, n) for n in QUERY_NAMES if n in set(spec.names)]
    objects: dict[str, dict] = {}
    shared_id = None  # one object with Sources for every object query (unless given)
    for q in (q for q in asked if "object" in q.draw):
        p = given.get(q.name, {})
        if "object_id" not in p:
            shared_id = draw.object_with_sources() if shared_id is None else shared_id
            p = {**p, "object_id": shared_id}
        objects[q.name] = {"object_id": int(p["object_id"])}
    # a query that draws nothing but has defaults (HV2's cut): those under its given ones
    fixed = {q.name: {**q.defaults, **given.get(q.name, {})} for q in asked if not q.draw and q.defaults}
    boxes: dict[str, dict] = {}
    overlap = spec.geometry.overlap_deg
    for q in (q for q in asked if "box" in q.draw):
        mine = given.get(q.name, {})
        p, size = _box_parameters(q, mine, overlap)
        # only a "sized" box (LV3's, SHV1's) and a "radius" shrink to the density (sizing.py)
        sized = ("sized" in q.draw and "box_deg" not in mine, "radius" in q.draw and "radius_deg" not in mine)
        boxes[q.name] = p if all(k in p for k in BOX_KEYS) else draw.box(q, p, size, sized)
    out = objects | fixed | boxes
    # the rest draw nothing (HV1, HV3, a new query file): their given parameters, if any
    return out | {name: dict(given.get(name, {})) for name in spec.names if name not in out}


def draw_parameters(spec: QuerySpec, chunks_dir, chunks: list[ChunkInfo], suite=None,
                    engine: DuckdbEngine | None = None) -> dict:
    """The parameters of every query ``spec`` runs: the config's ``queries.parameters.<Q>``
    where given, else drawn with the run seed from the data so that the query returns data (checked with DuckDB).
    Deterministic: same data + seed + config = same parameters."""
    suite = suite or load_suite()
    own = engine is None
    engine = engine or DuckdbEngine(chunks_dir, chunks)
    try:
        out = _draw_all(spec, suite, _Draw(spec.draw, chunks_dir, chunks, engine, spec.geometry))
    finally:
        if own:
            engine.close()
    return {k: {kk: (float(v) if isinstance(v, (float, np.floating)) else v) for kk, v in d.items()}
            for k, d in out.items()}
