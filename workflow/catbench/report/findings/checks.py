"""The report's Checks section: what failed (checksums, rows lost, queries that disagree,
cluster inserts lost, measuring jobs that did not run alone) and what the reader must know of
the run (buffered fio, stopped loads, loads not run, the user's own files, stages absent)."""

from __future__ import annotations

from ...core.index.table import ENGINES
from ...core.infra.jobs.isolation import ran_alone, what_it_met
from ..spec import ReportSpec
from ..wording import num
from .common import _order
from .stages import acked_lost


def _load_name(r: dict) -> str:
    return f"{r['target']}/{r['variant']}/{r.get('engine') or 'innodb'}/{r['strategy']}"


def _failed_loads(loads: list) -> list:
    failed = []
    for r in loads:
        if r.get("checksum_ok") is False:
            failed.append(f"Load {_load_name(r)}: the checksum of the loaded table does not match "
                          f"the input files ({num(r['rows'])} rows loaded) - rows were lost or changed.")
        if r.get("optimize_stopped") is True:
            failed.append(f"Load {_load_name(r)}: OPTIMIZE TABLE was stopped at its time limit; "
                          f"optimize_seconds ({num(r.get('optimize_seconds'))} s) is a lower bound.")
    for variant in _order(r["variant"] for r in loads):  # a stopped load loaded fewer rows on purpose
        counts = {_load_name(r): r["rows"] for r in loads if r["variant"] == variant and not r.get("stopped")}
        if len(set(counts.values())) > 1:
            failed.append(f"Loads of variant {variant} did not all load the same number of rows: "
                          + ", ".join(f"{k} {num(v)}" for k, v in counts.items()) + ".")
    return failed


def _failed_restarts_and_queries(t) -> list:
    failed = []
    for r in t.restart_runs:
        if (r.get("rows_lost") or 0) > 0:
            failed.append(f"Restart {r['kind']} on {r['target']} (repetition {r['repetition']}, "
                          f"phase {r['phase']}): {num(r['rows_lost'])} rows lost.")
    for q in _order(r["query"] for r in t.queries if r.get("agrees") is False):
        got = sorted({f"{r['target']}/{r['query_engine']}: {r.get('result_rows')} rows, digest "
                      f"{str(r.get('digest'))[:12]}" for r in t.queries if r["query"] == q})
        failed.append(f"Query {q} does not return the same result everywhere ({'; '.join(got)}).")
    return failed


def _failed_cluster(t) -> list:
    failed = []
    for tg, kind in _order((r["target"], r["kind"]) for r in t.cluster):
        rs = [r for r in t.cluster if (r["target"], r["kind"]) == (tg, kind)]
        lost = acked_lost(t.cluster, tg, kind)
        why = [f"{num(lost)} acknowledged inserts lost (missing or changed on a node)"] if lost else []
        if any(r.get("checksums_equal") is False for r in rs):
            why.append("the nodes disagree on the table")
        msg = next((r["failed"] for r in rs if r.get("failed")), None)
        if msg and not why:
            why.append(str(msg))
        if why:
            failed.append(f"Cluster restart {kind} on {tg}: " + "; ".join(why) + ".")
    return failed


def _not_alone(t) -> list:
    """Every measuring job that did not run alone: its figures are not to be trusted."""
    return [f"Measuring job {r['job']} did NOT run alone (met {what_it_met(r)}): do not trust its figures."
            for r in t.isolation if not ran_alone(r)]


def _isolation_text(t) -> tuple | None:
    if t.isolation and not _not_alone(t):
        return ("p", f"All {len(t.isolation)} measuring jobs ran alone (isolation.csv).")
    if not t.isolation and (t.storage or t.loads or t.queries or t.restart or t.cluster):
        return ("p", "No isolation records in this run: whether its measuring jobs ran alone is unknown.")
    return None


def _notes(t) -> list:
    notes = []
    for r in t.storage:
        if r.get("direct") is False:
            notes.append(f"fio {r['test']} on {r['target']} ran buffered (the filesystem refused "
                         "O_DIRECT), so it measures the page cache too.")
    for r in t.loads:
        if r.get("stopped"):
            notes.append(f"Load {_load_name(r)} was STOPPED at load.time_limit_s = {num(r.get('time_limit_s'))} s "
                         f"after {num(r.get('rows'))} rows (table {num(r.get('table_over_pool'))}x "
                         f"{ENGINES[r['engine']].cache_variable if r.get('engine') in ENGINES else 'the cache'}): it "
                         "did not finish; its rows/s and rate curve cover the rows loaded until then.")
    for r in t.not_run:
        notes.append(f"Not run: strategy {r['strategy']} on storage engine {r['engine']} "
                     f"(load.strategies x load.engines): {r['reason']}.")
    if index_only(t):
        own = any(r.get("stage") == "index_read" for r in t.stages)
        notes.append(f"This run is index-only (index.source: {'file' if own else 'generate'}): its index input "
                     f"came {'from your own files' if own else 'straight from the catalog generator'}, so it has "
                     "no catalog, chunk or query results.")
    for kind, what in (("patch", "The catalog came from your own patch (catalog.patch.file), duplicated over "
                                 "catalog.sky"), ("index", "The index input came from your own files (index.file)")):
        doc = t.own.get(kind)
        if doc:
            paths = [f["path"] for f in doc["files"]]
            more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
            notes.append(f"{what}: {num(doc.get('rows'))} rows in {len(paths)} file(s), "
                         f"{', '.join(paths[:3])}{more} (their bytes and CRC-32 in provenance.json).")
    for stage, present in (("storage (fio)", t.storage), ("load", t.loads), ("query", t.queries),
                           ("restart", t.restart)):
        if not present:
            notes.append(f"No {stage} results in this run.")
    return notes


def index_only(t) -> bool:
    """An index study alone: its input was generated (stage index_generate), no chunks."""
    return not t.chunks and any(r.get("stage") in ("index_generate", "index_read") for r in t.stages)


def checks(t, report: ReportSpec) -> list:
    failed = _failed_loads(t.loads) + _failed_restarts_and_queries(t) + _failed_cluster(t) + _not_alone(t)
    notes = _notes(t)
    out = [("h2", "Checks")]
    if failed:
        out += [("p", f"{len(failed)} check(s) FAILED:"), ("ul", failed)]
    else:
        out.append(("p", "All checks passed (load checksums, row counts, OPTIMIZE within its time "
                         "limit, no rows lost on restart, queries agree across targets"
                         + (", no acknowledged insert lost in a cluster node restart" if t.cluster else "")
                         + ")."))
    iso = _isolation_text(t)
    if iso is not None:
        out.append(iso)
    if notes:
        out.append(("ul", notes))
    return out
