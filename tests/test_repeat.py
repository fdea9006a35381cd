"""Repetitions that adapt to the noise (core/repeat.py): at least the minimum, then until the
interval is tight enough, the maximum, or the time budget."""

from catbench.core.jobs.repeat import Repeats, interval


def test_fixed_repetitions_without_a_maximum():
    plan = Repeats.of({"repetitions": 3})
    assert plan.more([], 0) and plan.more([1.0, 2.0], 0) and not plan.more([1.0, 1.0, 5.0], 0)


def test_noisy_figures_get_more_runs_steady_ones_stop_early():
    plan = Repeats.of({"repetitions": 2, "max_repetitions": 10, "precision": 0.05, "budget_s": None})
    assert not plan.more([1.000, 1.001], 0.1)              # tight after the minimum: done
    assert plan.more([1.0, 1.5], 0.1)                      # wide: another run
    assert plan.more([1.0, 1.5, 1.2, 1.1], 0.1)
    assert not plan.more([1.0, 1.5] * 5, 0.1)              # the maximum
    lo, hi = interval([1.0, 1.5] * 5)
    assert (hi - lo) / 2 > 0.05                             # stopped by the maximum, not the precision


def test_the_budget_stops_a_noisy_figure_but_never_before_the_minimum():
    plan = Repeats.of({"repetitions": 3, "max_repetitions": 50, "precision": 0.01, "budget_s": 2.0})
    assert plan.more([1.0, 3.0], 100.0)                    # under the minimum: the budget does not count
    assert not plan.more([1.0, 3.0, 2.0], 2.5)
    assert plan.more([1.0, 3.0, 2.0], 1.0)
