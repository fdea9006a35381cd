"""The headline findings: the study's questions answered in one sentence each, with the
figure and its interval, from the final tables. Every "faster / better than" here is the
verdict of ``stats.verdict`` (the product's one comparison rule): a difference its test cannot
tell from noise is "within noise", a single run is "not a finding"; the findings end by saying
how many comparisons they tested (and so how many false findings to expect at ``report.alpha``)
and mark the findings that hold under Holm's correction for them all. "X is fastest" only when
the rule says X beats the runner-up; otherwise "X has the lowest median", then the runner-up.

``findings(t, report)`` returns summary blocks (see ``summary``): an ``h3`` per question
followed by a ``ul`` of sentences.
"""

from __future__ import annotations

from ..row_costs import row_costs
from ..spec import ReportSpec
from ..stats import holm, holm_cutoff, tally
from ..wording import fmt
from ...core.infra.metrics import PREDICTION_BAND
from .common import ONE_FILE_AT_A_TIME
from .loads import collapse, engines, loading, table_size
from .stages import acked_lost, cluster, fio, queries, restarts, skew

__all__ = ["ONE_FILE_AT_A_TIME", "PREDICTION_BAND", "acked_lost", "findings"]

def findings(t, report: ReportSpec) -> list:
    """Blocks of the findings: one h3 per question, then its sentences. Made twice: the first
    pass collects the verdicts for Holm's correction, the second marks the findings it keeps."""
    thr = {"threshold": report.practical_threshold, "alpha": report.alpha}
    with tally() as judged:
        _parts(t, thr)
    with holm(holm_cutoff(judged, thr["alpha"])):
        parts = _parts(t, thr)
    out = []
    for title, sentences in parts:
        if sentences:
            out += [("h3", title), ("ul", sentences)]
    if not out:
        out.append(("p", "No measurements in this run."))
    elif any(v.tested for v in judged):
        out.append(("p", _multiplicity(judged, thr["alpha"])))
    return out


def _multiplicity(judged: list, alpha: float) -> str:
    """How many comparisons the findings tested, and what that means for false findings."""
    tested = [v for v in judged if v.tested]
    n, real = len(tested), sum(v.real for v in tested)
    cut = holm_cutoff(tested, alpha)
    held = sum(v.real and v.p <= cut for v in tested)
    return (f"These findings tested {n} differences with the comparison rule (t-test on log values at "
            f"α = {alpha:g} and the practical threshold) and called {real} of them real. Were nothing "
            f"different, about {fmt(alpha * n)} of {n} would still be called real by chance; {held} of the "
            f"{real} hold under Holm's correction for the {n} tests (marked so).")


def _parts(t, thr: dict) -> tuple:
    return (
        ("Fastest way to load the index, and its speed-up over the one-file-at-a-time protocol",
         loading(t.loads, thr)),
        ("Where the one-file-at-a-time protocol collapses (load rate against table size / buffer pool)",
         collapse(t.collapse, t.loads)),
        ("Other engines against InnoDB's B-tree (MyRocks' LSM tree, MyISAM): the same strategy on each engine",
         engines(t.loads, t.collapse, thr)),
        ("Why: what a row cost on the device and the server's CPU (load_io.csv)",
         row_costs(t, ONE_FILE_AT_A_TIME)),
        ("Table bytes per strategy", table_size(t.loads)),
        ("Best target and query engine per query class (whole class per run: cold = after a restart)",
         queries(t.query_runs, thr)),
        ("Crash recovery and restart", restarts(t.restart, thr)),
        ("A Galera cluster node restarted under load (IST, SST, crash)", cluster(t.cluster, t.cluster_load, thr)),
        ("Storage (fio)", fio(t.storage, thr)),
        ("What the density skew costs (chunk sizes, chunk-table loads, per-chunk queries)",
         skew(t.chunks, t.chunk_load_chunks, t.query_chunks)),
    )


