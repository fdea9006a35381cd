"""The checkpoint age a crash leaves, or a donor's backup copies (model.md, "The quantities at
the user's node"): a draw on the sawtooth the page cleaners and MariaDB's checkpoint margins make
during a load, at most what the server lets stand; the kind's interval spans the rungs' least
and most."""

from __future__ import annotations

from ...core.infra.sizes import duration


def max_checkpoint_age(redo_log: float, page: int) -> float:
    """The most redo MariaDB lets stand since its checkpoint before it flushes synchronously
    (log_t::set_capacity: a tenth kept back twice, 48 pages beside): ~0.81 of the log."""
    capacity = 0.9 * (redo_log - 12288)
    return 0.9 * (capacity - 48 * page)


# A load holds its checkpoint age at the flush-ahead marks where it takes this long or more to
# write up to the first: measured, not derived (the page cleaner's loop is a second; logs filled to
# the mark in 0.81-1.55 s were held, in 0.08-0.57 s not: docs/results/2026-12-06-checkpoint-age-regime.md)
HELD_FROM_S = 0.7


def held_band(redo_log: float, pool: float, page: int, redo_rate: float | None) -> tuple[float, float] | None:
    """Where a load holds its checkpoint age: between the flush-ahead mark (7/8 of the limit,
    ~0.71 of the log) and the limit (~0.81), as shares of the log, where the load takes
    ``HELD_FROM_S`` or more to write up to the mark: the page cleaners then flush ahead from the
    oldest page on while the load goes on writing, and the age stays at the marks. A log the
    load fills faster is flushed by the writing threads themselves, which drop the age far
    down: a sawtooth whose draw the rungs' kills tell. So does a pool smaller than the limit's
    redo, which writes its dirty pages to make room before the log fills (a 40 MiB pool under an
    80 MiB log left 0.22-0.42 of it, the log filled to the mark in 1.9 s). None: not held, or the
    rungs recorded no redo rate."""
    limit = max_checkpoint_age(redo_log, page)
    if not redo_rate or 7 / 8 * limit / redo_rate < HELD_FROM_S or pool < limit:
        return None
    return 7 / 8 * limit / redo_log, limit / redo_log


def age_spread(got: dict, ends: list[dict], ages: tuple[float, float], event: str = "the rungs' kills left") -> None:
    """A kill's checkpoint age is a draw, not a constant: the redo the load wrote since the
    last checkpoint, which the page cleaners may barely move in a load's minutes. The interval
    spans the recovery at the rungs' least and most age (``ends[:2]``); the server's own limit
    (``ends[2]``) is the most a crash can leave, its upper end stated as ``at_most_s``."""
    lo, hi, cap = ends
    worded = f"{event} {ages[0]:.2f}–{ages[1]:.2f} of the redo log since the checkpoint"
    for end, side, which in ((lo, "ci_low", 0), (hi, "ci_high", 1)):
        if "refused" in end:
            got["regime"] = [*got["regime"], f"at the rungs' {('least', 'most')[which]} age "
                                             f"({ages[which]:.2f} of the log): {end['refused']}"]
            continue
        pick = min if side == "ci_low" else max
        got[f"total_{side}"] = pick(got[f"total_{side}"], end[f"total_{side}"])
        for ph, e in zip(got["phases"], end["phases"]):
            ph[side] = pick(ph[side], e[side])
    got["age_range"] = list(ages)
    if "refused" not in cap:
        got["at_most_s"] = cap["total_ci_high"]
    most = (f"would take up to {duration(got['at_most_s'])}" if "at_most_s" in got
            else "is past what the rungs tell (no answer there)")
    got["regime"] = [*got["regime"], f"{worded} (the interval spans both); the most the server lets stand "
                                     f"(~0.81 of it) {most}"]
