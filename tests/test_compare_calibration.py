"""`catbench compare` of two runs, checked by simulation with the project's own functions.
Runs of one config whose figures share a per-run offset and each move a little more between
runs: the between-run variance is measured the way `catbench noise-floor` measures it (a twin:
runs 1 and 2, `noise.estimate`), and run 3 is compared with run 1 the way `catbench compare`
judges it (`compare.judge`; its arithmetic on arrays here, so that 300 triples take a second,
and `test_the_simulation_judges_as_compare_does` holds the two to the same verdicts).
Lognormal figures; spreads as coefficients of variation. docs/noise.md quotes these figures."""

import numpy as np
import pytest
from catbench.report import noise
from catbench.report.compare import diffs, judge, rule_of
from catbench.report.stats import RunSpread, Figure, kind_of, log_diff, t_test
from catbench.cli.report import report_spec
from support.runs import REPORT

N = 3                      # repetitions per figure per run
CV = 0.10                  # within a run, between runs per figure, and of the run's common offset
# figure families of about a default run's sizes; storage: higher is better
FAMILIES = {("queries", "p50_s"): 64, ("storage", "MBps"): 12, ("storage", "iops"): 12,
            ("load_time", "seconds"): 15, ("restart", "seconds"): 15}
COLS = [tc for tc, k in FAMILIES.items() for _ in range(k)]
K = len(COLS)
SIGN = np.array([-1.0 if t == "storage" else 1.0 for t, _c in COLS])     # log value per log slowness
TRIPLES = 300


def _sd(cv):
    return float(np.sqrt(np.log1p(cv * cv)))


def _triples(seed: int, moved, triples: int = TRIPLES, between: float = CV) -> np.ndarray:
    """Log values (triple, run, figure, repetition): a shared offset per run, a move per figure
    and run (``between``), the within-run spread; ``moved`` (log slowness per figure) added to
    run 3."""
    rng = np.random.default_rng(seed)
    slow = (rng.normal(0, _sd(CV), (triples, 3, 1, 1)) + rng.normal(0, _sd(between), (triples, 3, K, 1))
            + rng.normal(0, _sd(CV), (triples, 3, K, N)))
    slow[:, 2] += np.asarray(moved, dtype=float)[:, None]
    return rng.normal(0, 2, (triples, 1, K, 1)) + SIGN[:, None] * slow


def _pairs(logs, a: int, b: int):
    figs = [[Figure(N, float(np.median(v)), float(v.min()), float(v.max()), None, None, tuple(v))
             for v in np.exp(logs[r])] for r in (a, b)]
    return [(t, c, str(i), fa, fb) for i, ((t, c), fa, fb) in enumerate(zip(COLS, *figs))]


def _floor(logs) -> dict:
    """The twin's floor as `catbench noise-floor` writes it and `catbench compare` reads it."""
    fams = noise.estimate(diffs(_pairs(logs, 0, 1)), ("aa1", "aa2"))["families"]
    return {f: (v["between_var"], v["df"]) for f, v in fams.items()}


def _kinds(logs, floor: dict, rule: dict) -> np.ndarray:
    """compare.judge's verdicts of run 3 against run 1 on arrays (triple, figure): 'better' =
    run 3 faster."""
    s1, s3 = SIGN[:, None] * logs[:, 0], SIGN[:, None] * logs[:, 2]           # log slowness
    d, w, df_w, _ = log_diff(s3, s1)
    c, _lo, _hi, c_var = noise.offset_of(d)
    pick = [floor.get(noise.family(t, col), floor.get(noise.ALL, rule["fallback"])) for t, col in COLS]
    var, df = (np.array([p[i] for p in pick]) for i in (0, 1))
    p, _df, _se = t_test(d, w, df_w, RunSpread(var, df, c[:, None], c_var[:, None]))
    return kind_of(p, -(d - c[:, None]), rule["threshold"], rule["alpha"])


def _simulate(seed: int, moved, report: dict | None = None) -> np.ndarray:
    logs = _triples(seed, moved)
    rule = rule_of(report_spec(report), None)
    return np.stack([_kinds(tr[None], _floor(tr), rule)[0] for tr in logs])


def _moved() -> np.ndarray:
    m = np.zeros(K)
    m[::4] = np.log(1.5) * np.resize([1, -1], len(m[::4]))     # a quarter moved 1.5x, either way
    return m


def test_the_simulation_judges_as_compare_does():
    rule = rule_of(REPORT, None)
    for tr in _triples(5, _moved(), triples=3):
        floor = _floor(tr)
        _off, vs = judge(_pairs(tr, 0, 2), {**rule, "floor": floor})
        assert [v.kind for v in vs] == list(_kinds(tr[None], floor, rule)[0])


@pytest.mark.slow
def test_two_runs_of_one_config_are_called_different_3_to_6_percent_of_the_time():
    """practical_threshold 0: nothing but the test keeps false alarms down."""
    kinds = _simulate(1, np.zeros(K), {"practical_threshold": 0.0})
    rate = float(np.isin(kinds, ["better", "worse"]).mean())
    assert 0.03 <= rate <= 0.06, rate


@pytest.mark.slow
def test_a_figure_that_moved_by_1_5x_is_seen_at_least_65_percent_of_the_time():
    moved = _moved()
    kinds = _simulate(2, moved)
    power = float(np.concatenate([(kinds[:, moved > 0] == "worse").ravel(),
                                  (kinds[:, moved < 0] == "better").ravel()]).mean())
    wrong = float(np.concatenate([(kinds[:, moved > 0] == "better").ravel(),
                                  (kinds[:, moved < 0] == "worse").ravel()]).mean())
    unmoved = float(np.isin(kinds[:, moved == 0], ["better", "worse"]).mean())
    assert power >= 0.65 and wrong == 0 and unmoved <= 0.06, (power, wrong, unmoved)


@pytest.mark.parametrize("between_cv", [0.0, 0.02])
def test_a_steady_machine_gets_the_power_its_steadiness_allows(between_cv):
    """The measured floor is used as measured, never raised to report.between_run_cv: on a
    machine whose figures barely move between runs, a 1.3x change is seen most of the time
    (a constant 10 % floor let it be seen about 13 % of the time)."""
    moved = np.zeros(K)
    moved[::4] = np.log(1.3)
    rule = rule_of(REPORT, None)
    kinds = np.stack([_kinds(tr[None], _floor(tr), rule)[0]
                      for tr in _triples(3, moved, triples=100, between=between_cv)])
    assert float((kinds[:, moved > 0] == "worse").mean()) >= 0.5


def _called(kinds) -> float:
    return float(np.isin(kinds, ["better", "worse"]).mean())


def figures() -> list:
    """The figures docs/noise.md quotes: python tests/test_compare_calibration.py"""
    aa = _simulate(1, np.zeros(K), {"practical_threshold": 0.0})
    share = np.isin(aa, ["better", "worse"]).mean(axis=1)
    m = _moved()
    ab = _simulate(2, m)
    guess = rule_of(REPORT, None)
    right = np.concatenate([(ab[:, m > 0] == "worse").ravel(), (ab[:, m < 0] == "better").ravel()])
    out = [("A/A called different", _called(aa)),
           ("A/A share in one comparison: median, 90th, 95th percentile", np.quantile(share, [0.5, 0.9, 0.95])),
           ("1.5x seen", float(right.mean())),
           ("1.5x seen the wrong way", float(np.concatenate([(ab[:, m > 0] == "better").ravel(),
                                                           (ab[:, m < 0] == "worse").ravel()]).mean())),
           ("unmoved figures called different", _called(ab[:, m == 0])),
           ("no floor: A/A called different",
            _called(_kinds(_triples(1, np.zeros(K)), {}, rule_of(report_spec({"practical_threshold": 0.0}), None)))),
           ("no floor: 1.5x seen", float((_kinds(_triples(2, m), {}, guess)[:, m > 0] == "worse").mean()))]
    for b in (0.0, 0.02):
        up = np.where(np.arange(K) % 4 == 0, np.log(1.3), 0.0)
        k = np.stack([_kinds(tr[None], _floor(tr), guess)[0] for tr in _triples(3, up, triples=100, between=b)])
        out.append((f"steady machine (between-run moves {b:.0%}): 1.3x seen", float((k[:, up > 0] == "worse").mean())))
    return out


if __name__ == "__main__":
    for what, value in figures():
        print(f"{what}: {np.round(value, 3)}")
