"""Each query class's time on N nodes holding the user's catalog: its chunk queries and the czar's part.

A chunk query costs a fixed dispatch plus a slope times what drives it (CLASSES: the chunk
table's bytes for a scan, its rows squared for a self-join, nothing for an index lookup), fitted
per class and cache state over every chunk query of every rung. The user's catalog is the
rungs' sky at the user's density: each chunk's share of the rows kept (the skew of the sky),
cycled over the user's chunk count, its bytes at the rungs' bytes a row (an Object row's: the
user's where given). Chunks go round-robin
over the nodes in chunkId order (core/sky/placement.py, Qserv's spread); a node runs its
chunk queries ``connections`` at a time, so a class takes its slowest node's sum ÷ that, and
never less than its largest single chunk at one stream (the tail). A node whose data outgrows
its RAM reads from the device: priced from the rungs' cold repetitions (caches dropped), or
refused naming the rung it needs. To that the czar's part is added (czar.py: the rungs' whole
queries less their chunk part, fitted on the index's depth or the chunk queries sent). Intervals:
the chunk queries and the whole-query repetitions resampled and both fits redone."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.sky.placement import node_sums
from . import czar
from .czar import CzarLaw, RungCzar
from .runs import CLASSES, QueryRung

BOOTSTRAP, CONFIDENCE, SEED = 200, 0.95, 11


@dataclass(frozen=True)
class Catalog:
    """The user's catalog and cluster."""
    objects: float
    sources_per_object: float | None     # None: the rungs'
    nodes: int
    chunks: int | None                   # None: the rungs' chunk count
    ram_bytes: float | None              # a node's memory for the server and its page cache; None: the rungs' pool
    device_ratio: float = 1.0            # the user's device's seconds a byte ÷ the rungs' (sequential)
    object_bytes: float | None = None    # an Object row's bytes on disk; None: the rungs'
    read_s_per_byte: float | None = None  # the user's device's sequential read (s a byte); None: not floored
    sky: dict | None = None              # the user's own chunks ({"Object": {chunkId: rows}, ...}); None: the rungs' shares


def _driver(query: str, rows: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    kind = CLASSES[query][1]
    return {"bytes": nbytes, "pairs": rows ** 2, "lookup": np.zeros_like(rows)}[kind]


def fit(x: np.ndarray, t: np.ndarray) -> tuple[float, float, bool]:
    """(dispatch s, slope s a unit, whether the chunks' spread told the two apart), both ≥ 0.
    Chunks all of one size cannot tell them apart: the whole cost is then carried as slope (the
    figure a larger chunk is planned by), never as a dispatch that would not grow."""
    if len(t) >= 2 and np.ptp(x) > 0.05 * np.max(x):
        slope, d = np.polyfit(x, t, 1)
        if slope > 0 and d >= 0:
            return float(d), float(slope), True
    if np.any(x > 0):
        return 0.0, float((x @ t) / (x @ x)), False
    return float(np.mean(t)), 0.0, True


def _rows_of(rung: QueryRung, table: str, objects: np.ndarray, cat: Catalog) -> np.ndarray:
    if table == "Object":
        return objects
    return objects * (cat.sources_per_object or rung.data_rows("Source") / rung.data_rows("Object"))


def _row_bytes(rung: QueryRung, table: str, cat: Catalog) -> float:
    if table == "Object" and cat.object_bytes:
        return cat.object_bytes
    return rung.data_bytes(table) / max(rung.data_rows(table), 1.0)


def _sky_rows(rung: QueryRung, table: str, cat: Catalog, ids) -> np.ndarray:
    """The user's own rows of ``table`` in chunks ``ids`` (Sources from the Objects where the
    user's chunks do not count them)."""
    if table in cat.sky:
        return np.array([cat.sky[table].get(c, 0.0) for c in ids], float)
    return _rows_of(rung, table, np.array([cat.sky["Object"].get(c, 0.0) for c in ids], float), cat)


def user_chunks(rung: QueryRung, table: str, cat: Catalog) -> tuple[np.ndarray, np.ndarray]:
    """(rows, bytes) of the user's chunks of ``table``: their own where given (``sky``), else the
    rung's shares of the rows cycled."""
    if cat.sky:
        rows = _sky_rows(rung, table, cat, sorted(cat.sky["Object"]))
        return rows, rows * _row_bytes(rung, table, cat)
    ids = sorted(rung.chunk_rows.get("Object", {}))
    rows_o = np.array([rung.chunk_rows["Object"][c] for c in ids], float)
    s = (rows_o / rows_o.sum())[np.arange(cat.chunks or len(ids)) % len(ids)]
    rows = _rows_of(rung, table, cat.objects * s / s.sum(), cat)
    return rows, rows * _row_bytes(rung, table, cat)


def box_chunks(rung: QueryRung, table: str, cat: Catalog, box: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(rows, bytes) of a box's chunks at the user's density: the user's own rows of those chunks
    where given and the box lies in their sky, else the rung's scaled by the mean objects a chunk."""
    if cat.sky and all(c in cat.sky["Object"] for c in box):
        rows = _sky_rows(rung, table, cat, box)
        return rows, rows * _row_bytes(rung, table, cat)
    k = len(rung.chunk_rows["Object"])
    density = (cat.objects / (cat.chunks or k)) / (rung.data_rows("Object") / k)
    rows = _rows_of(rung, table, np.array([rung.chunk_rows["Object"].get(c, 0.0) for c in box]) * density, cat)
    return rows, rows * _row_bytes(rung, table, cat)


def _class_time(t_chunk: np.ndarray, nodes: int, connections: int) -> tuple[float, int]:
    """(seconds, index of the slowest node) over the chunks placed round-robin."""
    per_node = node_sums(t_chunk, nodes)
    slow = int(np.argmax(per_node))
    return float(max(per_node[slow] / connections, t_chunk.max())), slow


def _obs(rungs: list[QueryRung], query: str, cache: str):
    o = [x for r in rungs for x in r.obs if x.query == query and x.cache == cache]
    return (np.array([x.rows for x in o], float), np.array([x.nbytes for x in o], float),
            np.array([x.seconds for x in o], float))


def _class_chunks(rung: QueryRung, query: str, cat: Catalog) -> tuple[np.ndarray, np.ndarray]:
    """(rows, bytes) of the chunks ``query`` reads at ``cat`` on ``rung``'s sky: every chunk for
    a scan that read them all, else the box it read in ``rung``."""
    table = CLASSES[query][0]
    box = sorted({x.chunk for x in rung.obs if x.query == query})
    whole_sky = len(box) >= len(rung.chunk_rows.get("Object", {})) and CLASSES[query][1] == "bytes"
    return user_chunks(rung, table, cat) if whole_sky else box_chunks(rung, table, cat, box)


def box_medians(rung: QueryRung, query: str, cache: str) -> tuple[np.ndarray, np.ndarray] | None:
    """A box class's chunks at ``rung`` in box order: (each one's median seconds in ``cache``, NaN
    where not timed; its own driver); None for a class that read every chunk. The box covers a
    different share of each chunk, so chunks of one size take different times: each is priced on
    its own time, scaled by its driver at the user's density (``_box_scale``)."""
    box = sorted({x.chunk for x in rung.obs if x.query == query})
    if len(box) >= len(rung.chunk_rows.get("Object", {})) and CLASSES[query][1] == "bytes":
        return None
    table = CLASSES[query][0]
    rows = np.array([rung.chunk_rows.get(table, {}).get(c, 0.0) for c in box])
    nbytes = np.array([rung.chunk_bytes.get(table, {}).get(c, 0.0) for c in box])
    med = np.array([np.median(v) if (v := [x.seconds for x in rung.obs if x.query == query and x.cache == cache
                                           and x.chunk == c]) else np.nan for c in box])
    return med, _driver(query, rows, nbytes)


def _box_scale(own, d: float, s: float) -> np.ndarray | float:
    """Each box chunk's slope ÷ the fit's: its own time less the dispatch ÷ (s × its driver) at the
    largest rung; 1 where it was not timed or has no driver (the fit's slope then)."""
    if own is None or s <= 0:
        return 1.0
    med, x = own
    ok = np.isfinite(med) & (x > 0)
    return np.where(ok, np.maximum(np.nan_to_num(med) - d, 0.0) / (s * np.where(ok, x, 1.0)), 1.0)


def _own_size(rung: QueryRung) -> Catalog:
    return Catalog(rung.data_rows("Object"), None, 1, None, None)


def _index_rows(query: str, rung: QueryRung, cat: Catalog) -> float:
    """The rows of the index a lookup descends at ``cat`` (Objects; Sources for a Source lookup)."""
    if CLASSES[query][0] == "Object":
        return cat.objects
    return cat.objects * (cat.sources_per_object or rung.data_rows("Source") / max(rung.data_rows("Object"), 1.0))


def _czar_rungs(rungs: list[QueryRung], query: str, cache: str) -> list[RungCzar]:
    """The rungs that timed whole ``query``s of ``cache``, each at its own size on one server."""
    out = []
    for r in rungs:
        reps = r.query_s.get((query, cache))
        rows, nbytes = _class_chunks(r, query, _own_size(r))
        if reps and len(rows):
            x = czar.quantity(query, _index_rows(query, r, _own_size(r)), len(rows))
            own = box_medians(r, query, cache)
            out.append(RungCzar(x, np.array(reps, float), _driver(query, rows, nbytes), r.connections, r.data_bytes(),
                                None if own is None else own[0]))
    return out


def _czar_at(rungs: list[RungCzar], d: float, s: float, x_user: float,
             rng: np.random.Generator | None = None) -> tuple[float, CzarLaw | None]:
    """(czar seconds at ``x_user``, its law) with the chunk fit (d, s) taken off each rung's whole query."""
    if not rungs:
        return 0.0, None
    # at the rungs' own device: no --device ratio
    # a box class's chunk part at a rung is its own chunks' times (their dispatch at least)
    chunk = np.array([_class_time(d + s * r.driver if r.med is None else
                                  np.where(np.isfinite(r.med), np.maximum(np.nan_to_num(r.med), d), d + s * r.driver),
                                  1, r.connections)[0] for r in rungs])
    x = np.array([r.x for r in rungs])
    law = czar.fit_czar(x, czar.residuals(rungs, chunk, rng), int(np.argmax([r.size for r in rungs])))
    return law.at(x_user), law


def interval(draw, seconds: float, widen: float) -> tuple[float, float]:
    """The bootstrap's quantiles of ``draw(rng)``, holding ``seconds`` ± ``widen``."""
    rng = np.random.default_rng(SEED)
    boot = [draw(rng) for _ in range(BOOTSTRAP)]
    a = (1 - CONFIDENCE) / 2
    lo, hi = np.quantile(boot, [a, 1 - a])
    return float(max(0.0, min(lo, seconds - widen))), float(max(hi, seconds + widen))


def form_error(rungs: list[QueryRung], query: str, cache: str) -> float | None:
    """The form's own error: the largest rung's whole query (median) predicted from the smaller
    rungs alone at its own size, |ln(predicted ÷ measured)|; None with under three rungs or no
    whole query timed there. The interval widens by it (``widened``)."""
    big = max(rungs, key=lambda r: r.data_bytes())
    rest = [r for r in rungs if r is not big]
    reps = big.query_s.get((query, cache))
    if len(rest) < 2 or not reps or float(np.median(reps)) <= 0:
        return None
    p = predict_class(rest, query, _own_size(big), cache, err=None)
    return abs(float(np.log(p["seconds"] / np.median(reps)))) if p.get("seconds") else None


def widened(lo: float, hi: float, seconds: float, err: float | None, distance: float) -> tuple[float, float]:
    """The interval held at least ``seconds`` ×÷ e^(err × the doublings past the largest rung), one
    doubling at least: the form's error at one step past the rungs, grown with the distance."""
    if not err:
        return lo, hi
    f = float(np.exp(err * max(1.0, np.log2(max(distance, 1.0)))))
    return min(lo, seconds / f), max(hi, seconds * f)


def predict_class(rungs: list[QueryRung], query: str, cat: Catalog, cache: str, err: float | None = None) -> dict:
    """One class's answer at ``cat``: its chunk queries of ``cache`` plus the czar's part;
    ``err`` the form's error (form_error) its interval widens by; None: the bootstrap alone."""
    rows, nbytes, t = _obs(rungs, query, cache)
    if len(t) < 2:
        return {"refused": f"{query}: {len(t)} chunk queries measured {cache} in the rungs; "
                           f"2 or more are needed (queries.repetitions, queries.cold)"}
    big = max(rungs, key=lambda r: r.data_bytes())
    u_rows, u_bytes = _class_chunks(big, query, cat)
    x_user = _driver(query, u_rows, u_bytes)
    ratio = cat.device_ratio if cache != "warm" else 1.0
    cpu_s = _warm_slope(rungs, query) if ratio != 1.0 else None
    floor = _device_floor(query, u_bytes, cat) if cache != "warm" else 0.0
    cz = _czar_rungs(rungs, query, cache)
    cx_user = czar.quantity(query, _index_rows(query, big, cat), len(x_user))
    own = box_medians(big, query, cache)

    def at(d: float, s: float) -> tuple[float, np.ndarray]:
        # another device scales what the cold repetitions added to the warm ones' slope (the
        # rungs' reads), never the CPU a byte they share; and it reads a node's bytes at its rate
        tc = d + (s if cpu_s is None else cpu_s + max(s - cpu_s, 0.0) * ratio) * x_user * _box_scale(own, d, s)
        return max(_class_time(tc, cat.nodes, big.connections)[0], floor), tc

    def draw(rng: np.random.Generator) -> float:
        # the chunk queries and each rung's whole-query repetitions resampled, both fits redone
        i = rng.integers(0, len(t), len(t))
        db, sb = fit(_driver(query, rows[i], nbytes[i]), t[i])[:2]
        return at(db, sb)[0] + _czar_at(cz, db, sb, cx_user, rng)[0]

    d, s, told = fit(_driver(query, rows, nbytes), t)
    chunk_s, tc = at(d, s)
    czar_s, law = _czar_at(cz, d, s, cx_user)
    seconds = chunk_s + czar_s
    lo, hi = interval(draw, seconds, law.miss * czar_s if law else 0.0)
    # a node's data past the largest rung's: the doublings the form's error grows over
    distance = cat.objects / max(big.data_rows("Object"), 1.0) / cat.nodes
    lo, hi = widened(lo, hi, seconds, err, distance)
    slowest = _class_time(tc, cat.nodes, big.connections)
    node_s = node_sums(tc, cat.nodes)[slowest[1]] / big.connections
    dispatch = d * len(tc) / cat.nodes / big.connections
    driver = CLASSES[query][1]
    bound = ("czar (index lookup, dispatch and merge)" if czar_s > chunk_s else
             "dispatch" if driver == "lookup" else
             "device sequential" if floor and floor >= max(node_s, tc.max()) else
             "tail chunk" if tc.max() >= node_s else
             "dispatch" if dispatch >= 0.5 * chunk_s else
             {"bytes": ("CPU (scan)" if cpu_s is not None and cpu_s >= max(s - cpu_s, 0.0) * ratio
                        else "device sequential") if cache != "warm" else "CPU (scan from memory)",
              "pairs": "CPU (pairs compared)"}[driver])
    return {"seconds": seconds, "ci_low": lo, "ci_high": hi, "chunk_s": chunk_s, "czar_s": czar_s,
            "n": int(len(t)), "cache": cache, "bound": bound, "dispatch_s": d, "slope": s, "slope_told": told,
            "driver": CLASSES[query][1], "chunks": int(len(tc)), "slowest_node": slowest[1],
            "tail_chunk_s": float(tc.max()), "x_past_rungs": _past(query, rows, nbytes, x_user),
            **_czar_fields(query, law, cx_user, cz)}


def _warm_slope(rungs: list[QueryRung], query: str) -> float | None:
    """The seconds a unit of ``query``'s warm chunk queries (the CPU a byte, nothing read)."""
    rows, nbytes, t = _obs(rungs, query, "warm")
    return fit(_driver(query, rows, nbytes), t)[1] if len(t) >= 2 else None


def _device_floor(query: str, u_bytes: np.ndarray, cat: Catalog) -> float:
    """A cold scan's least time: its slowest node's bytes read once at the device's sequential
    rate, however many chunk queries share the device."""
    if CLASSES[query][1] != "bytes" or not cat.read_s_per_byte:
        return 0.0
    return float(node_sums(u_bytes, cat.nodes).max() * cat.read_s_per_byte)


def _czar_fields(query: str, law: CzarLaw | None, x_user: float, rungs: list[RungCzar]) -> dict:
    out = {"czar_rungs": len(rungs), "czar_unit": czar.unit(query), "czar_x": x_user}
    if law is None:
        return {**out, "czar_slope_told": None,
                "czar_unpriced": "no rung timed the whole query (results.parquet): the czar's part is 0 here"}
    return {**out, "czar_intercept_s": law.intercept, "czar_slope": law.slope, "czar_slope_told": law.told,
            "czar_miss": law.miss, "czar_x_rungs": [r.x for r in rungs]}


def _past(query, rows, nbytes, x_user) -> float | None:
    x = _driver(query, rows, nbytes)
    return None if x.max() <= 0 else float(x_user.max() / x.max())


def node_data(rungs: list[QueryRung], cat: Catalog) -> float:
    """Bytes of Object and Source chunk tables a node holds (the slowest-placed node's)."""
    big = max(rungs, key=lambda r: r.data_bytes())
    held = np.zeros(cat.nodes)
    for table in ("Object", "Source"):
        if big.chunk_bytes.get(table):
            b = user_chunks(big, table, cat)[1]
            held += node_sums(b, cat.nodes)
    return float(held.max())


def predict_queries(rungs: list[QueryRung], cat: Catalog, with_own_check: bool = True,
                    form_errors: dict | None = None) -> dict:
    """Every class at ``cat``: warm where a node's data fits its memory, else from the cold
    repetitions; refused, naming what is missing, where the rungs cannot price it. ``form_errors``:
    {(class, cache): form_error} of these rungs, filled as computed (the same at any ``cat``)."""
    errors = {} if form_errors is None else form_errors
    if not rungs:
        return {"refused": "no query results in --results (results/<run>/queries/<target>/mysql)"}
    big = max(rungs, key=lambda r: r.data_bytes())
    k = cat.chunks or len(big.chunk_rows.get("Object", {}))
    if cat.nodes > k:
        return {"refused": f"--nodes {cat.nodes} for {k} chunks: each node must hold a chunk (--chunks)"}
    ram = cat.ram_bytes or big.pool_bytes
    held = node_data(rungs, cat)
    cache = "warm" if held <= ram else "cold"
    out = {"nodes": cat.nodes, "objects": cat.objects, "chunks": k, "node_data_bytes": held, "ram_bytes": ram,
           "cache": cache, "rungs": sorted(r.run for r in rungs), "validated": False,
           "sky": "the user's chunks (--chunk-rows)" if cat.sky else "the rungs' sky at the user's mean objects a chunk",
           **({"object_bytes": cat.object_bytes} if cat.object_bytes else {}),
           "priced": "the chunk queries (dispatch and what each reads) and the czar's part (its secondary-index "
                     "lookup, dispatch, merge and result transfer: the rungs' whole queries less their chunk part, "
                     "where the rungs timed whole queries); shared scans and concurrency between user queries "
                     "are not", "classes": {}}
    colds = sorted({x.cache for r in rungs for x in r.obs if x.cache != "warm"})
    for q in CLASSES:
        if cache == "cold" and not colds:
            out["classes"][q] = {"refused": f"{q}: a node holds {held / 2**30:.1f} GiB past its "
                                            f"{ram / 2**30:.1f} GiB of memory, and no rung measured a cold "
                                            "query (queries.cold: true; a rung whose chunk tables are ≥ 10× "
                                            "server.ram)"}
            continue
        state = cache if cache == "warm" else colds[0]
        if (q, state) not in errors:
            errors[(q, state)] = form_error(rungs, q, state)
        err = errors[(q, state)]
        out["classes"][q] = predict_class(rungs, q, cat, state, err=err)
        if "seconds" in out["classes"][q]:
            out["classes"][q]["form_error"] = err
    if not with_own_check:     # the same rungs at another node count: their own check is the same
        return out
    out["own_check"], out["own_check_chunk_part"] = own_check(rungs)
    out["own_check_in_sample"] = ("the whole answer (chunk + czar) ÷ the measured median at the largest rung's "
                                  "own size on one server; the czar part is fitted to these same whole queries, "
                                  "so it is in-sample and near 1 by construction: not a validation")
    return out


def own_check(rungs: list[QueryRung]) -> tuple[dict, dict]:
    """The answer at the largest rung's own size on one server ÷ its measured median, warm:
    (the whole answer's, the chunk part's). In-sample: the czar part is fitted to those times."""
    big = max(rungs, key=lambda r: r.data_bytes())
    whole, chunk = {}, {}
    for (q, cache), secs in sorted(big.query_s.items()):
        if cache != "warm" or q not in CLASSES:
            continue
        p = predict_class(rungs, q, _own_size(big), cache)
        if "seconds" in p and np.median(secs) > 0:
            whole[q] = p["seconds"] / float(np.median(secs))
            chunk[q] = p["chunk_s"] / float(np.median(secs))
    return whole, chunk
