"""`catbench compare` of two runs, checked by simulation with the project's own functions:
runs whose figures share a per-run offset and each move a little more between runs, the
between-run variance measured the way `catbench noise-floor` measures it (a twin: runs 1 and
2), and run 3 compared with run 1 the way `catbench compare` judges it. Lognormal figures; the
spreads are coefficients of variation (docs/noise.md quotes these figures)."""

import numpy as np
import pytest
from catbench.report import noise
from catbench.report.compare import diffs, judge, rule_of
from catbench.report.stats import Figure

N = 3                      # repetitions per figure per run
CV = 0.10                  # within a run, between runs per figure, and of the run's common offset
FAMILIES = {("queries", "p50_s"): 16, ("storage", "MBps"): 8}   # lower and higher is better
TRIPLES = 300


def _sd(cv):
    return np.sqrt(np.log1p(cv * cv))


def _run(rng, base, moved, cv_between=CV):
    """One run's figures: ``base`` true log values, ``moved`` log slowness added per figure."""
    slow = rng.normal(0, _sd(CV)) + rng.normal(0, _sd(cv_between), len(base)) + moved
    sign = np.array([-1.0 if higher else 1.0 for higher in _higher()])
    logs = base[:, None] + (sign * slow)[:, None] + rng.normal(0, _sd(CV), (len(base), N))
    return [Figure(N, float(np.median(v)), float(v.min()), float(v.max()), None, None, tuple(v))
            for v in np.exp(logs)]


def _higher():
    return [t == "storage" for (t, _c), k in FAMILIES.items() for _ in range(k)]


def _pairs(run_a, run_b):
    cols = [(t, c) for (t, c), k in FAMILIES.items() for _ in range(k)]
    return [(t, c, str(i), fa, fb) for i, ((t, c), fa, fb) in enumerate(zip(cols, run_a, run_b))]


def _simulate(seed, moved3, report=None, twin=True):
    """(called B slower, called B faster) per figure, summed over TRIPLES A/A/B triples."""
    rng = np.random.default_rng(seed)
    k = sum(FAMILIES.values())
    slower, faster = np.zeros(k), np.zeros(k)
    for _ in range(TRIPLES):
        base = rng.normal(0, 2, k)
        r1, r2, r3 = _run(rng, base, 0), _run(rng, base, 0), _run(rng, base, moved3)
        floor = None
        if twin:
            fams = noise.estimate(diffs(_pairs(r1, r2)), ("aa1", "aa2"))["families"]
            floor = {f: (v["between_var"], v["df"]) for f, v in fams.items()}
        _off, vs = judge(_pairs(r1, r3), rule_of(report, floor))
        worse = np.array([v.kind == "worse" for v in vs])        # B (run 3) slower than A
        better = np.array([v.kind == "better" for v in vs])
        higher = np.array(_higher())
        slower += np.where(higher, better, worse)                 # MB/s: "worse" means more
        faster += np.where(higher, worse, better)
    return slower / TRIPLES, faster / TRIPLES


def test_two_runs_of_one_config_are_called_different_about_alpha_of_the_time():
    slower, faster = _simulate(1, 0.0, report={"practical_threshold": 0.0})
    rate = float((slower + faster).mean())
    assert 0.03 <= rate <= 0.06, rate


def test_a_figure_that_moved_by_1_5x_is_seen_at_least_65_percent_of_the_time():
    k = sum(FAMILIES.values())
    moved = np.zeros(k)
    moved[::4] = np.log(1.5) * np.resize([1, -1], len(moved[::4]))   # a quarter moved, either way
    slower, faster = _simulate(2, moved)
    up, down = moved > 0, moved < 0
    power = float(np.concatenate([slower[up], faster[down]]).mean())
    wrong = float(np.concatenate([faster[up], slower[down]]).mean())
    unmoved = float((slower + faster)[moved == 0].mean())
    assert power >= 0.65 and wrong == 0 and unmoved <= 0.06, (power, wrong, unmoved)
