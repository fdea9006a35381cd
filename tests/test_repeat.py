"""Repetitions that adapt to the noise (core/infra/jobs/repeat.py): a pilot of the minimum, whose
spread alone sets how many runs follow (up to the maximum or the time budget); the figure keeps
the runs after the pilot, so the comparison rule keeps its false-alarm rate (checked by
simulation with the rule itself)."""

import numpy as np
import pytest
from catbench.core.infra.jobs.repeat import Repeats, unbounded
from catbench.report.stats import Figure, verdict


def test_fixed_repetitions_without_a_maximum():
    repeats = Repeats.of({"repetitions": 3})
    assert repeats.more([], 0) and repeats.more([1.0, 2.0], 0) and not repeats.more([1.0, 1.0, 5.0], 0)
    assert repeats.kept([1.0, 1.0, 5.0]) == [1.0, 1.0, 5.0]


def test_a_noisy_pilot_asks_for_more_runs_than_a_steady_one():
    repeats = Repeats.of({"repetitions": 2, "max_repetitions": 10, "precision": 0.05, "budget_s": None})
    steady, noisy = [1.000, 1.001], [1.0, 1.5]
    assert repeats.after(steady) == 2 and repeats.after(noisy) == 8
    assert repeats.more(steady + [1.0], 0.1) and not repeats.more(steady + [1.0, 1.0], 0.1)
    # the runs after the pilot do not change how many there are: only the pilot's spread does
    assert repeats.more(noisy + [1.0, 1.0, 1.0], 0.1) and repeats.more(noisy + [1.0, 9.0, 1.0], 0.1)
    assert not repeats.more(noisy + [1.0] * 8, 0.1)                               # the maximum
    assert repeats.kept(noisy + [1.1, 1.2]) == [1.1, 1.2]                          # the pilot is not kept



def test_a_run_of_several_figures_repeats_for_the_noisiest_and_a_missing_one_for_the_most():
    """A restart gives its first answer with the buffer-pool dump off and on: the pilot's
    noisier column sets the runs; a figure a run did not give (NaN) cannot be bounded by it."""
    repeats = Repeats.of({"repetitions": 2, "max_repetitions": 10, "precision": 0.05, "budget_s": None})
    assert repeats.after([(1.000, 1.0), (1.001, 1.5)]) == repeats.after([1.0, 1.5]) == 8
    assert repeats.after([(1.000, 1.0), (1.001, 1.0)]) == 2
    assert repeats.after([(1.0, 1.0), (1.0, float("nan"))]) == 8
    assert repeats.more([(1.0, 1.0), (1.0, 1.5)] + [(1.0, 1.0)] * 7, 0.0)
    assert not repeats.more([(1.0, 1.0), (1.0, 1.5)] + [(1.0, 1.0)] * 8, 0.0)

def test_the_budget_stops_a_noisy_figure_but_never_inside_its_pilot_and_minimum():
    repeats = Repeats.of({"repetitions": 3, "max_repetitions": 50, "precision": 0.01, "budget_s": 2.0})
    assert repeats.more([1.0, 3.0], 100.0)                    # inside the pilot: the budget does not count
    assert repeats.more([1.0, 3.0, 2.0, 2.0], 100.0)          # the pilot and fewer than the minimum after it
    assert not repeats.more([1.0, 3.0, 2.0, 2.0, 2.0, 2.0], 2.5)
    assert repeats.more([1.0, 3.0, 2.0, 2.0, 2.0, 2.0], 1.0)


def _adaptive_figure(rng, repeats: Repeats, sd: float) -> Figure:
    xs: list = []
    while repeats.more(xs, 0.0):
        xs.append(float(rng.lognormal(0.0, sd)))
    return Figure.of(repeats.kept(xs))


@pytest.mark.slow
def test_adaptive_repetitions_keep_the_rules_false_alarm_rate_at_a_zero_threshold():
    """Two figures from one distribution, each repeated adaptively, judged with
    practical_threshold 0 (nothing hides a false alarm): at most 6 % called different, for
    spreads where the pilot stops early, late or in between."""
    rng = np.random.default_rng(21)
    trials = 600
    for cv, repeats in ((0.03, Repeats(3, 10, 0.05, None)), (0.05, Repeats(2, 10, 0.05, None)),
                     (0.10, Repeats(3, 10, 0.10, None)), (0.02, Repeats(3, 20, 0.02, None))):
        sd = float(np.sqrt(np.log1p(cv * cv)))
        called = sum(verdict(_adaptive_figure(rng, repeats, sd), _adaptive_figure(rng, repeats, sd), threshold=0.0).real
                     for _ in range(trials))
        assert called / trials <= 0.06, (cv, repeats, called / trials)


def test_two_repetitions_print_words_not_a_range():
    from catbench.report.stats import ci_note, median_interval
    from catbench.report.wording import interval_text
    xs = [2.4, 0.0003]      # a restart phase's two runs: t = 12.7 gave [0.0, 1.9e23]
    assert median_interval(xs) == (None, None)
    note = ci_note(xs)
    assert note.startswith("n = 2 cannot bound this") and "no n up to 30" in note
    assert interval_text(Figure.of(xs), "s").endswith(f" s ({note})")
    steady = [1.00, 1.05]
    assert median_interval(steady) == (None, None)
    said = ci_note(steady)
    assert said.startswith("n = 2 ") and "n = 5 would give ±" in said    # the n it has, the n that would do


def test_three_steady_repetitions_print_their_interval_and_a_wide_spread_is_worded():
    from catbench.report.stats import ci_note, median_interval
    from catbench.report.wording import interval_text
    lo, hi = median_interval([1.0, 1.1, 0.95])
    assert lo < 1.0 < hi and ci_note([1.0, 1.1, 0.95]) is None
    assert interval_text(Figure.of([1.0, 1.1, 0.95]), "s").endswith(", n=3]")
    wide = [0.01, 1.0, 5.0]
    assert median_interval(wide) == (None, None)
    assert "spans" in ci_note(wide) and ci_note(wide).startswith("n = 3 cannot bound this")
    assert ci_note([0.5]) is None and ci_note([2.0, 2.0]) is None


def test_the_quantiles_from_scipy_special_are_scipy_stats_own():
    """Every job's command imports them; scipy.stats would add ~0.5 s of import to each."""
    from catbench.core.infra.jobs.repeat import binom_ppf, t_ppf, z_ppf
    from scipy import stats
    for n in range(1, 120):
        for conf in (0.8, 0.9, 0.95, 0.99):
            assert binom_ppf((1 - conf) / 2, n, 0.5) == int(stats.binom.ppf((1 - conf) / 2, n, 0.5))
    for q in (0.6, 0.9, 0.975, 0.995):
        assert abs(z_ppf(q) - stats.norm.ppf(q)) < 1e-12
        for df in (1, 2, 3.5, 10, 1000):
            assert abs(t_ppf(q, df) - stats.t.ppf(q, df)) < 1e-9


def test_a_spread_past_ten_thousand_fold_is_said_by_its_power_of_ten():
    """Two repetitions 0.61 s and 0.00015 s (a flush with nothing to flush): the words give the
    interval's span as a power of ten, not a 37-digit number."""
    note = unbounded([0.610631, 0.000153])
    assert note.startswith("n = 2 ") and "spans over 10^" in note and "," not in note.split("spans")[1].split(")")[0]
    assert "(its interval spans 89x)" in unbounded([1.0, 2.0, 6.0])
