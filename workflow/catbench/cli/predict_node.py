"""``catbench predict``'s answers for the user's nodes, beside the loads'.

The restart half: each restart kind's phases and total at the user's node (--data, --pool,
--redo, --checkpoint-age, --write-rate, --downtime, --gcache, --device) from the rungs' restart
and cluster results (predict/restarts/model.md), and the rungs' own prediction held against a
measured run (--measured).

The query half: each query class on --nodes worker nodes holding --objects (predict/queries/model.md)
from the rungs' mysql chunk queries, at a few node counts besides (``by_nodes``: the report's plot),
and, where the model refuses for want of cold repetitions, the run that would give them."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from ..core.infra.config import ConfigError
from ..core.infra.sizes import duration, human, parse_size
from ..predict.coverage import widen_restart
from ..predict.restarts import model
from ..predict.ladder import check_one_ladder
from ..predict.restarts.age import max_checkpoint_age
from ..predict.restarts.runs import PAGE, read_restarts
from ..predict.spec import RestartTarget


def _at(a, target: RestartTarget, sizes: dict, device: dict | None) -> model.UserNode:
    """The user's node: the flags, else the config's target (its rows × the rungs' bytes a row)."""
    data = a.data or model.data_of(target.rows, [(s.rows, s.data_bytes) for s in sizes.values()
                                                 if s.data_bytes and s.rows])
    pool, redo = a.pool or target.pool, a.redo or target.redo_log
    missing = [flag for flag, v in (("--data", data), ("--pool", pool), ("--redo", redo)) if not v]
    if missing:
        raise ConfigError(f"restart prediction: give {', '.join(missing)} (the config sets no "
                          f"innodb_buffer_pool_size or innodb_log_file_size, or no rung recorded its data)")
    page = max((s.page_bytes for s in sizes.values()), default=PAGE)
    most = max_checkpoint_age(float(redo), page)
    if most <= 0:
        raise ConfigError(f"restart prediction: a {human(redo)} redo log leaves no room for a checkpoint age (the "
                          f"server keeps back a tenth of it twice and 48 pages of {human(page)}): give --redo 1M "
                          f"or more")
    if a.checkpoint_age is not None and a.checkpoint_age > most:
        raise ConfigError(f"restart prediction: --checkpoint-age {human(a.checkpoint_age)} is past what a "
                          f"{human(redo)} redo log lets stand before the server checkpoints ({human(most)}, ~0.81 of "
                          f"the log): give at most that, or a larger --redo")
    # --data is a user's node at rest; the config's target is the benchmark's own node, mid-load
    return model.UserNode(float(data), float(pool), float(redo), a.checkpoint_age, a.write_rate,
                          a.downtime if a.downtime is not None else target.downtime_s,
                          float(a.gcache or target.gcache), device, at_rest=a.data is not None)


def _one_ladder(sizes: dict) -> None:
    """Restart rungs of one ladder scale their pool and redo log with their rows (predict/spec.py
    ``_rung_restart``): rungs of two configs fitted together would read a setting's effect as the
    scale's. Per target, each a row within ``ONE_LADDER`` across the rungs, or ConfigError naming them."""
    for target in sorted({t for _, t in sizes}):
        rungs = [s for (_, t), s in sizes.items() if t == target and s.rows]
        for what, attr in (("pool", "pool_bytes"), ("redo log", "redo_log_bytes")):
            check_one_ladder({s.run: getattr(s, attr) / s.rows for s in rungs if getattr(s, attr)},
                             f"the restart rungs on {target}", f"{what} bytes")


def line(p: dict) -> str:
    name = "/".join(p["key"].values())
    if "refused" in p:
        far = "; ".join(f"{ph['phase']} {human(ph['quantity_bytes']) if ph['quantity_in_bytes'] else ph['driver']} "
                        f"{ph['past_rungs']:,.0f}x the largest rung's" for ph in p.get("phases") or [] if ph.get("past_rungs"))
        return f"{name}: no prediction: {p['refused']}" + (f" ({far})" if far else "")
    dom = next(x for x in p["phases"] if x["phase"] == p["dominant"])
    plan = f", plan for {duration(p['plan_s'])}" if p.get("plan_s") else ""
    return (f"{name}: {duration(p['total_s'])} [{duration(p['total_ci_low'])}, {duration(p['total_ci_high'])}] "
            f"({p['confidence']:.0%}){plan}; dominant {p['dominant']} {duration(dom['seconds'])}, bound by {dom['bound']}"
            + (f", {dom['driver']}" + (f" {human(dom['quantity_bytes'])}" if dom["quantity_in_bytes"] else "")
               + f" {dom['past_rungs']:,.1f}x the largest rung's" if dom["driver"] and dom["past_rungs"] else "")
            + ("; " + "; ".join(p["regime"]) if p.get("regime") else ""))


def predict_restarts(a, cfg: dict, fitting, device: dict | None, required: bool = True) -> dict | None:
    """The restart answer of ``catbench predict`` (None: no restart results in --results, or,
    unless ``required`` (no loads to predict either), no node size to answer for: said)."""
    obs, sizes = read_restarts(a.results)
    if not obs:
        return None
    _one_ladder(sizes)
    try:
        at = _at(a, RestartTarget.of(cfg), sizes, device)
    except ConfigError as exc:
        if required:
            raise
        print(f"restarts not predicted: {exc}")
        return None
    preds = model.predict_all(obs, sizes, at, fitting.confidence, fitting.run_noise)
    for p in preds:   # the rungs' spread alone held 37 of 44 figures on record: the record's error added
        widen_restart(p, fitting.confidence)
    out = {"at": {"data_bytes": at.data, "pool_bytes": at.pool, "redo_log_bytes": at.redo_log,
                  "checkpoint_age_bytes": at.checkpoint_age, "write_rate_bytes_per_s": at.write_rate,
                  "downtime_s": at.downtime_s, "gcache_bytes": at.gcache},
           "predictions": preds, "measured": []}
    print(f"restarts predicted for a node of {human(at.data)} data, a {human(at.pool)} pool and a "
          f"{human(at.redo_log)} redo log from {len({o.run for o in obs})} run(s):")
    for p in preds:
        print("  " + line(p))
    if a.measured:
        mobs, _ = read_restarts(a.measured)
        out["measured"] = model.score(preds, model.measured(mobs))
        print("against the measured run(s):")
        for m in out["measured"]:
            print(f"  {'/'.join(m['key'].values())}: total {m['total_ratio']:.2f} predicted ÷ measured "
                  f"({'inside' if m['total_inside'] else 'outside'} its interval, n = {m['n']}); dominant "
                  f"{m['dominant']} {m['dominant_ratio'] or float('nan'):.2f} "
                  f"({'inside' if m['dominant_inside'] else 'outside'})"
                  + ("" if m["dominant_agrees"] else
                     f"; MISS: the measured dominant phase is {m['measured_dominant']} "
                     f"({m['measured_dominant_measured_s']:.3g} s), predicted "
                     + (f"{m['measured_dominant_predicted_s']:.3g} s, {m['measured_dominant_ratio']:.2f} "
                        f"({'inside' if m['measured_dominant_inside'] else 'outside'})"
                        if m["measured_dominant_predicted_s"] is not None else "nothing")))
    return out


def size_type(example: str, lo: float, hi: float, what: str, cast=float):
    """An argparse type: a size (600G, 512M) in [lo, hi], else one line naming ``what`` it must be."""
    def parse(text: str):
        try:
            v = parse_size(text)
        except (ValueError, TypeError):
            raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. {example})") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{text!r}: {what}")
        return cast(v)
    return parse


_size = size_type("600G, 8G", 1, 1 << 60, "a size over 0 and at most an exbibyte")


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= v < 1e9:
        raise argparse.ArgumentTypeError(f"{text!r}: seconds from 0 to 10^9")
    return v


def add_arguments(p) -> None:
    g = p.add_argument_group("restarts (when --results holds restart or cluster results)")
    g.add_argument("--data", type=_size, help="the table bytes on a node's disk, at rest (e.g. 600G); default "
                   "the config's target, predict.target_rows × the rungs' bytes a row, mid-load as the rungs ran")
    g.add_argument("--redo", type=_size, help="innodb_log_file_size (e.g. 8G; default the config's)")
    g.add_argument("--checkpoint-age", type=_size, help="redo since the last checkpoint at a crash (default the "
                   "rungs' share of the redo log, which the page cleaners' pace sets)")
    g.add_argument("--write-rate", type=_size, help="write-set bytes a second a down Galera node misses (e.g. "
                   "2M; default the rungs' insert load)")
    g.add_argument("--downtime", type=_seconds, help="seconds a Galera node is down (default cluster.load.down_s)")
    g.add_argument("--gcache", type=_size, help="the donor's gcache.size (default cluster.gcache_size)")


# ---------------------------------------------------------------- queries
# the node counts every answer is also given at (and the asked one): one server, a small
# cluster, Qserv's 25-node test bed and a production-sized one; none past the chunks
NODE_GRID = (1, 5, 25, 150)
OBJECTS = 1.7e9      # --objects' default: DMTR-21's Objects


def _rungs(results: list) -> tuple[dict, dict]:
    """({target: [QueryRung]} of every run in ``results`` with mysql query results, {target:
    {engine: [ScanRung]}} of those with duckdb or lsdb results)."""
    from ..predict.queries import scan
    from ..predict.queries.runs import read_rung
    chunked: dict = {}
    scans: dict = {}
    for d in dict.fromkeys(Path(r).resolve() for r in results):     # a run named twice is read once
        for t in sorted(p.name for p in (d / "queries").glob("*") if p.is_dir()):
            rung = read_rung(d, t)
            if rung:
                chunked.setdefault(t, []).append(rung)
            for e in scan.ENGINES:
                if (s := scan.read_scan_rung(d, t, e)):
                    scans.setdefault(t, {}).setdefault(e, []).append(s)
    if not chunked and not scans:
        raise ConfigError(f"--nodes: no query results in {', '.join(results)} (results/<run>/queries/<target>/<engine>)")
    return chunked, scans


def _read_s(fig: dict):
    """A sequential read's seconds a byte: the spill pass less its write."""
    return fig["seq_s_per_byte"] - fig.get("seq_write_s_per_byte", 0.0) if fig.get("seq_s_per_byte") else None


def _by_nodes(rungs: list, cat, chunks: int, form_errors: dict) -> dict:
    """{nodes: {class: seconds or None (refused)}} at NODE_GRID and the asked count, up to one
    chunk a node (the chunk count itself closes the curve when the grid passes it); the rungs'
    ``form_errors`` computed once for every count."""
    from ..predict.queries.model import predict_queries
    counts = {n for n in (*NODE_GRID, cat.nodes) if n <= chunks} | ({chunks} if NODE_GRID[-1] > chunks else set())
    out = {}
    for n in sorted(counts):
        classes = predict_queries(rungs, dataclasses.replace(cat, nodes=n), with_own_check=False,
                                  form_errors=form_errors).get("classes") or {}
        out[str(n)] = {q: p.get("seconds") for q, p in classes.items()}
    return out


def _cold_run(cfg: dict) -> str:
    """What gives the cold repetitions a node past its memory is priced from."""
    ladder = ("`make query-ladder` (config/query-ladder.yaml: rungs whose chunk tables outgrow their pool as a "
              "node's do, measured warm and cold)")
    if not cfg.get("queries", {}).get("cold", True):
        return (f"set `queries.cold: true` in the config of run {cfg.get('run')} and run its queries and predict "
                f"stages again (each cold repetition drops the caches first), or run {ladder}")
    return f"run {ladder}"


def predict_queries_at(a, figures: dict | None, cfg: dict) -> dict:
    """Each query class at --nodes and --objects, per target, from the rungs' chunk queries."""
    from ..predict.queries.model import Catalog, predict_queries
    from ..predict.queries.scan import predict_scan
    from ..predict.runs import device
    answers = {}
    sky = _user_chunks(a)
    chunked, scans = _rungs(a.results)
    for target in sorted({*chunked, *scans}):
        rungs = chunked.get(target)
        # the device scales the chunk model's cold reads; the scan engines' are not scaled
        mine, theirs = _read_s(device(Path(a.results[0]), target)), _read_s(figures or {}) if rungs else None
        if theirs and not mine:
            raise ConfigError(f"--device: the rungs of {target} ran no fio (stage fio): no sequential read "
                              "to set the device's against")
        ratio = theirs / mine if theirs else 1.0
        cat = Catalog(a.objects, a.sources_per_object, a.nodes, a.chunks, getattr(a, "node_ram", None) or a.ram,
                      ratio, getattr(a, "object_bytes", None), theirs or mine, sky)
        answer = {"nodes": a.nodes, "objects": a.objects, "device_ratio": ratio}
        if rungs:
            # the asked cluster is kept where the model refuses it whole (more nodes than chunks)
            errors: dict = {}
            answer.update(predict_queries(rungs, cat, form_errors=errors))
            no_cold = all(x.cache == "warm" for r in rungs for x in r.obs)
            for p in (answer.get("classes") or {}).values():
                if "refused" in p and answer.get("cache") == "cold" and no_cold:
                    p["run"] = _cold_run(cfg)
            if "classes" in answer:
                answer["by_nodes"] = _by_nodes(rungs, cat, answer["chunks"], errors)
        answer["engines"] = {e: predict_scan(rs, cat, getattr(a, "workers", None))
                             for e, rs in sorted(scans.get(target, {}).items())}
        answers[target] = answer
        _print(a, target, answer)
    return answers


def _user_chunks(a) -> dict | None:
    """--chunk-rows: the user's own chunks, which then give --objects and --chunks (refused where
    those were given otherwise)."""
    from ..predict.queries.runs import read_user_chunks
    if not getattr(a, "chunk_rows", None):
        a.objects = a.objects if a.objects is not None else OBJECTS
        return None
    sky = read_user_chunks(a.chunk_rows)
    objects, chunks = sum(sky["Object"].values()), len(sky["Object"])
    for flag, given, theirs in (("--objects", a.objects, objects), ("--chunks", a.chunks, chunks)):
        if given is not None and abs(given - theirs) > 1e-9 * theirs:
            raise ConfigError(f"{flag} {given:g}: --chunk-rows {a.chunk_rows} holds {theirs:g}; give one of the two")
    a.objects, a.chunks = objects, chunks
    return sky


def _print(a, target: str, answer: dict) -> None:
    print(f"queries on {a.nodes} nodes, {a.objects:.3g} objects ({target}; its far checks: predict/queries/model.md):")
    if "refused" in answer:
        print(f"  {answer['refused']}")
    for q, p in (answer.get("classes") or {}).items():
        print(f"  {q}: " + (p["refused"].removeprefix(f"{q}: ") + (f"; {p['run']}" if p.get("run") else "")
                            if "refused" in p else
                            f"{p['seconds']:.3g} s [{p['ci_low']:.3g}, {p['ci_high']:.3g}], n = {p['n']} "
                            f"chunk queries, {p['cache']}; bound: {p['bound']}; largest chunk {p['tail_chunk_s']:.3g} s"
                            + (f"; chunks {p['chunk_s']:.3g} s + czar {p['czar_s']:.3g} s" if "czar_s" in p else "")
                            + ("; the czar's growth not told by the rungs: planned on the largest's cost a "
                               + p["czar_unit"] if p.get("czar_slope_told") is False else "")
                            + (f"; {p['x_past_rungs']:.3g}x past the rungs' largest chunk"
                               if p.get("x_past_rungs") else "")))
    for n, classes in (answer.get("by_nodes") or {}).items():
        if all(v is None for v in classes.values()):
            continue
        print(f"  on {n} nodes: " + ", ".join(f"{q} {s:.3g} s" if s is not None else f"{q} refused"
                                                for q, s in classes.items()))
    for e, ans in (answer.get("engines") or {}).items():
        w = f", {ans['workers']} workers" if ans.get("workers") else " (one process)"
        print(f"  {e} on {ans['nodes']} node(s){w}, {ans['cache']}: " + "; ".join(
            f"{q} {p['refused'].removeprefix(q + ': ')}" if "refused" in p else
            f"{q} {p['seconds']:.3g} s [{p['ci_low']:.3g}, {p['ci_high']:.3g}] n {p['n']} ({p['bound']})"
            for q, p in ans["classes"].items()))


def add_query_arguments(p, rows, positive, at_least_one, size) -> None:
    """The query flags of ``catbench predict`` (``rows``, ``positive``, ``at_least_one``, ``size``:
    the command's argument types)."""
    p.add_argument("--nodes", type=at_least_one, help="the query classes' times on this many worker nodes "
                   "(from the rungs' query results; with --objects), and at 1, 5, 25 and 150 nodes besides")
    p.add_argument("--objects", type=rows, help=f"with --nodes: the catalog's Objects (default {OBJECTS:g}, or "
                   "--chunk-rows' sum)")
    p.add_argument("--sources-per-object", type=positive, help="with --nodes: Sources an Object (default the rungs')")
    p.add_argument("--chunks", type=at_least_one, help="with --nodes: the catalog's chunks (default the rungs', or "
                   "--chunk-rows' count)")
    p.add_argument("--chunk-rows", help="with --nodes: the catalog's own chunks, a partition's chunks.tsv (chunkId, "
                   "object_rows, source_rows; results/<run>/chunks/chunks.tsv): each chunk at its own rows, a box "
                   "at its own chunks' (default: the rungs' chunks at the mean objects a chunk)")
    p.add_argument("--object-bytes", type=positive, help="with --nodes: an Object row's bytes on disk, the table's "
                   "data file ÷ its rows (default the rungs'): a scan reads them")
    p.add_argument("--workers", type=at_least_one, help="with --nodes: LSDB's Dask workers a node (default the "
                   "rungs'); DuckDB is one process on one node")
    p.add_argument("--node-ram", type=size, help="with --nodes: a node's memory for its server and page cache "
                   "(e.g. 16G; default --ram, else the rungs' pool); --ram alone would set the loads' target too")
