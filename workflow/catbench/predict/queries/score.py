"""A query answer (sealed before its target ran) held against the run that measured it: each
class's predicted seconds beside the median of that run's whole queries in the answer's cache
state, the ratio, and whether the measured median lies inside the stated interval. The run
must hold the catalog the answer was made for (its Objects within ``SAME_SIZE``) on the answer's
node count: a run of another size would score a prediction nobody made."""

from __future__ import annotations

import statistics

from ...core.infra.metrics import PREDICTION_BAND
from .runs import QueryRung

SAME_SIZE = 0.02        # the measured run's Objects within 2 % of the answer's
HEADLINE = ("LV1", "HV2", "HV3", "SHV1")   # the classes a check must hold


class ScoreError(ValueError):
    pass


def score(answer: dict, measured: QueryRung) -> dict:
    """Each class of ``answer`` (predict_queries' output) against ``measured``; ScoreError when
    the run is not the catalog or the cluster the answer is for."""
    if answer.get("nodes") != 1:
        raise ScoreError(f"the answer is for {answer.get('nodes')} nodes; one run on one server measures 1")
    rows = measured.data_rows("Object")
    if abs(rows - answer["objects"]) > SAME_SIZE * answer["objects"]:
        raise ScoreError(f"--measured {measured.run} holds {rows:,.0f} Objects, the answer is for "
                         f"{answer['objects']:,.0f}: predict at --objects {rows:.0f}")
    out = {"measured_run": measured.run, "measured_objects": rows, "band": list(PREDICTION_BAND), "classes": {}}
    for q, p in (answer.get("classes") or {}).items():
        secs = measured.query_s.get((q, p.get("cache")), [])
        if "seconds" not in p or not secs:
            out["classes"][q] = {"scored": False, "why": p.get("refused") or f"{measured.run} timed no "
                                 f"{p.get('cache')} {q}"}
            continue
        med = statistics.median(secs)
        ratio = p["seconds"] / med if med > 0 else float("inf")
        out["classes"][q] = {"scored": True, "predicted_s": p["seconds"], "ci": [p["ci_low"], p["ci_high"]],
                             "measured_s": med, "n_measured": len(secs), "spread_s": [min(secs), max(secs)],
                             "cache": p["cache"], "predicted_over_measured": ratio,
                             "within_band": PREDICTION_BAND[0] <= ratio <= PREDICTION_BAND[1],
                             "inside_interval": p["ci_low"] <= med <= p["ci_high"], "bound": p.get("bound")}
    scored = [v for v in out["classes"].values() if v["scored"]]
    out["inside_share"] = sum(v["inside_interval"] for v in scored) / len(scored) if scored else None
    out["headline_within_band"] = {q: out["classes"].get(q, {}).get("within_band") for q in HEADLINE}
    return out


def lines(result: dict) -> list[str]:
    """The score for a person: one line a class, misses said."""
    out = [f"against {result['measured_run']} ({result['measured_objects']:,.0f} Objects), "
           f"predicted ÷ measured in [{PREDICTION_BAND[0]}, {PREDICTION_BAND[1]}] a hit:"]
    for q, v in result["classes"].items():
        if not v["scored"]:
            out.append(f"  {q}: not scored: {v['why']}")
            continue
        out.append(f"  {q} ({v['cache']}): predicted {v['predicted_s']:.3g} s [{v['ci'][0]:.3g}, {v['ci'][1]:.3g}], "
                   f"measured {v['measured_s']:.3g} s (n = {v['n_measured']}, {v['spread_s'][0]:.3g}–"
                   f"{v['spread_s'][1]:.3g} s): {v['predicted_over_measured']:.2f} "
                   f"{'HIT' if v['within_band'] else 'MISS'}, {'inside' if v['inside_interval'] else 'outside'} "
                   "its interval")
    if result["inside_share"] is not None:
        out.append(f"  measured inside the interval: {result['inside_share']:.0%} of the scored classes")
    return out
