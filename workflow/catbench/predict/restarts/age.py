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


def age_spread(got: dict, ends: list[dict], ages: tuple[float, float], event: str = "kills left") -> None:
    """A kill's checkpoint age is a draw, not a constant: the redo the load wrote since the
    last checkpoint, which the page cleaners may barely move in a load's minutes. The interval
    spans the recovery at the rungs' least and most age (``ends[:2]``); the server's own limit
    (``ends[2]``) is the most a crash can leave, its upper end stated as ``at_most_s``."""
    lo, hi, cap = ends
    worded = f"the rungs' {event} {ages[0]:.2f}–{ages[1]:.2f} of the redo log since the checkpoint"
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
