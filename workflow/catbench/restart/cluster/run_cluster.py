"""Cluster stage: how long one node of a replicated (Galera) cluster takes to come back
under load, phase by phase, and what the others notice meanwhile.

Per target, a private cluster of ``cluster.nodes`` nodes with every datadir on the target
(session.py) is loaded with the index through node 1 (every node must then hold the
input's checksum); then the kinds of kinds.py run in ``KINDS`` order, each
``cluster.repetitions`` times, restarting the last node under the workload of workload.py.
After every restart all nodes must agree on the table, hold the loaded index and every
insert acknowledged to the client (state.py ``verify``).

Output in ``<out_dir>`` (``results/<run>/cluster/<target>/``), like the restart stage:

* ``<kind>.json``: ``{"rows": [...], "load": [...], "verify": [...], "detail": [...], ...}``;
  ``rows`` are phase rows (rows.ROW_KEYS: per repetition and phase, seconds, clock,
  transfer IST/SST, bytes, MB/s, donor, acknowledged inserts and lost ones, checksums
  equal), ``load`` the workload per window (before / during / transfer / after the
  restart) and node (rows.LOAD_KEYS), ``verify`` the per-node check after each repetition;
* ``summary.json`` (written last: a directory without it is an unfinished run): the setup
  (formation, load), per kind the median over repetitions of the headline figures;
* ``<kind>.error.json`` for a kind that failed (``"interrupted": true`` when a signal
  stopped the job); ``node<i>-error.log``, each node's error log (every phase's evidence).

No node, SST helper or listening port is left behind on any exit path.
"""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

from ...core.index.input import scan_file
from ...core.index.table import get_variant
from ...core.infra.targets import describe_target
from ...core.server.loaddata import LoadError
from ..phases import p50
from ..results import clear_results, write_json
from .kinds import restart_node
from .options import KINDS, ClusterError
from .session import cluster_session
from .spec import ClusterSpec
from .state import ClusterRun

log = logging.getLogger(__name__)

__all__ = ["KINDS", "ClusterError", "run_cluster"]

# headline phases of the summary (median over repetitions)
HEADLINE = ("shutdown", "kill", "wsrep_recover", "process_start_to_primary", "process_start_to_engine_ready",
            "state_transfer", "process_start_to_synced", "process_start_to_first_answer", "down_to_synced",
            "down_to_first_answer")


def _kind_summary(res: dict) -> dict:
    rows, load = res["rows"], res["load"]

    def med(phase, field="seconds"):
        return p50([r[field] for r in rows if r["phase"] == phase and r[field] is not None])

    def load_med(window, role_has, field):
        return p50([r[field] for r in load if r["window"] == window and role_has in r["role"].split("+")
                    and r[field] is not None])

    xfer = [r for r in rows if r["phase"] == "state_transfer"]
    return {"repetitions": len({r["repetition"] for r in rows}),
            "transfer": sorted({r["transfer"] for r in xfer if r["transfer"]}),
            "donors": sorted({r["donor"] for r in xfer if r["donor"]}),
            "phases_s": {p: med(p) for p in HEADLINE if med(p) is not None},
            "transfer_bytes": med("state_transfer", "transfer_bytes"),
            "transfer_MBps": med("state_transfer", "transfer_MBps"),
            "lookups_failed_others_during": sum(r["lookups_failed"] or 0 for r in load if r["window"] == "during"
                                                and "restarted" not in r["role"].split("+")),
            "lookups_failed_restarted_during": sum(r["lookups_failed"] or 0 for r in load if r["window"] == "during"
                                                   and "restarted" in r["role"].split("+")),
            "donor_lookup_p50_ms": {w: load_med(w, "donor", "lookup_p50_ms") for w in ("before", "transfer")},
            "inserts_per_s": {w: load_med(w, "insert", "inserts_per_s") for w in ("before", "during", "after")},
            "insert_max_latency_s_during": load_med("during", "insert", "insert_max_latency_s"),
            "acked_inserts": sum(v["acked_inserts"] for v in res["verify"]),
            "acked_lost": sum(v["acked_lost"] for v in res["verify"]),
            "checksums_equal": all(v["checksums_equal"] for v in res["verify"])}


def _run_kinds(run: ClusterRun, meta: dict, out_dir: Path, results: dict):
    for kind in run.spec.kinds:
        run.kind = kind
        res = results[kind] = {**meta, "kind": kind, "rows": [], "load": [], "verify": [], "detail": []}
        for rep in range(run.spec.repetitions):
            rows, lrows, det = restart_node(run, kind, rep)
            ver = run.verify()
            for r in rows:
                r.update(acked_inserts=ver["acked_inserts"], acked_lost=ver["acked_lost"],
                         checksums_equal=ver["checksums_equal"])
            res["rows"] += rows
            res["load"] += lrows
            res["verify"].append({"repetition": rep, **ver})
            res["detail"].append(det)
            exposed = [x for x in det["listeners"] if x["address"] != "127.0.0.1"]
            failed = ver["failed"] or (f"wrong lookup answers: {det['wrong_answers'][:3]}"
                                       if det["wrong_answers"] else None) or (
                f"a node or SST helper listened beyond 127.0.0.1: {exposed}" if exposed else None)
            log.info("target %s: %s repetition %d: %s, %d acknowledged inserts, %s", run.cluster.target, kind, rep,
                     ", ".join(f"{r['phase']} {r['seconds']:.2f} s" for r in rows
                               if r["phase"] in ("state_transfer", "down_to_synced") and r["seconds"] is not None),
                     ver["acked_inserts"], "checks passed" if not failed else f"FAILED: {failed}")
            if failed:
                res["failed"] = failed
                write_json(out_dir / f"{kind}.json", res)
                raise ClusterError(f"target {run.cluster.target}: {kind}, repetition {rep}: {failed}; evidence in "
                                   f"{out_dir / (kind + '.json')}")
        res["summary"] = _kind_summary(res)
        write_json(out_dir / f"{kind}.json", res)


def _evidence(run: ClusterRun | None, exc: BaseException, meta: dict, results: dict, out_dir: Path):
    kind = run.kind if run else None
    if kind is None or (out_dir / f"{kind}.json").exists():
        return
    res = results.get(kind, {**meta, "kind": kind, "rows": [], "load": [], "verify": [], "detail": []})
    if isinstance(exc, Exception):
        write_json(out_dir / f"{kind}.error.json", {**res, "error": str(exc)})
    else:
        write_json(out_dir / f"{kind}.error.json", {**res, "interrupted": True, "by": type(exc).__name__})


def _keep_error_logs(cluster, out_dir: Path):
    for node in cluster.nodes:
        if node.srv.error_log.exists():
            try:
                shutil.copyfile(node.srv.error_log, out_dir / f"{node.name}-error.log")
            except OSError as exc:
                log.warning("could not copy %s: %s", node.srv.error_log, exc)


def run_cluster(target: str, path, input_files, out_dir, spec: ClusterSpec) -> dict:
    """Form a cluster on ``target``, load it, restart one node per kind and repetition;
    writes ``<out_dir>/<kind>.json`` and ``summary.json``. Raises ClusterError (node and
    evidence named) when a node does not come back, the nodes disagree or an acknowledged
    insert is lost; the evidence is written first."""
    v = get_variant(spec.variant)
    files = [Path(f).absolute() for f in input_files]
    if not files:
        raise LoadError("no input files given")
    out_dir = Path(out_dir)
    clear_results(out_dir, KINDS, ("node*-error.log",))
    infos = [scan_file(f, v) for f in files]
    input_bytes = sum(i.bytes for i in infos)
    meta = {"target": target, "variant": v.name, "nodes": spec.nodes, "files": len(infos),
            "rows": sum(i.rows for i in infos), "input_bytes": input_bytes, "seed": spec.seed,
            "sst_method": spec.sst_method, "recover_position": spec.recover_position,
            "gcache_size": spec.gcache_size, "repetitions": spec.repetitions, "load_options": spec.load.as_dict()}
    results: dict = {}
    run = None
    with cluster_session(target, path, spec, input_bytes, f"cluster-{v.name}") as c:
        meta["storage"] = describe_target(path)
        try:
            t0 = time.time()
            formation = c.form()
            run = ClusterRun(c, infos, v, spec)
            meta["server"] = {"binary": c.nodes[0].srv.binary, "version": c.nodes[0].srv.version,
                              "settings": dict(c.nodes[0].srv.settings)}
            meta["setup"] = {"formation": formation, "load": run.load(), "setup_s": time.time() - t0}
            _run_kinds(run, meta, out_dir, results)
            summary = {**meta, "kinds": {k: r["summary"] for k, r in results.items()},
                       "rows_lost_total": sum(r["summary"]["acked_lost"] for r in results.values())}
            write_json(out_dir / "summary.json", summary)
        except BaseException as exc:
            if not isinstance(exc, Exception):
                log.warning("target %s: cluster restart interrupted (%s)", target, type(exc).__name__)
            _evidence(run, exc, meta, results, out_dir)
            raise
        finally:
            c.stop_all()
            _keep_error_logs(c, out_dir)
    log.info("target %s: cluster results in %s", target, out_dir)
    return {"summary": summary, **results}
