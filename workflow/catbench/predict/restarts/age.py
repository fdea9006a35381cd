"""The checkpoint age a crash leaves, or a donor's backup copies (model.md, "The quantities at
the user's node"): held between MariaDB's flush-ahead marks where the load fills the log slowly
enough, else a draw on the sawtooth the page cleaners and the writing threads make, the kind's
interval spanning the rungs' least and most; at most what the server lets stand. And whether
recovering that age takes several batches ("Regimes")."""

from __future__ import annotations

import math

from ...core.infra.sizes import duration, human

# ``at`` below is model.UserNode, ``sh`` model.Shares (model imports this module)


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


def checkpoint_age(at, sh, share: float | None = None) -> float:
    """The redo since the checkpoint (a crash's to recover; a donor's that its backup copies): as
    given; a crash's in the middle of the band a load holds it in where the user's log is large
    enough for that (age.held_band); else the rungs' share of the redo log (at most what the
    server lets stand)."""
    if at.checkpoint_age is not None:
        return at.checkpoint_age
    if share is None and (band := held_band(at.redo_log, at.pool, sh.page, sh.redo_rate)):
        return sum(band) / 2 * at.redo_log
    share = sh.checkpoint_age if share is None else share
    return min((1.0 if share is None else share) * at.redo_log, max_checkpoint_age(at.redo_log, sh.page))


def age_told(at, sh) -> str:
    if at.checkpoint_age is not None:
        return "given"
    if band := held_band(at.redo_log, at.pool, sh.page, sh.redo_rate):
        return (f"held at {band[0]:.2f}-{band[1]:.2f} of the redo log: the load writes up to the flush-ahead mark "
                f"in {band[0] * at.redo_log / sh.redo_rate:.1f} s at the rungs' {human(sh.redo_rate)}/s of redo "
                f"(held from {HELD_FROM_S} s)")
    return ("the whole redo log: no rung's kill said" if sh.checkpoint_age is None
            else f"{sh.checkpoint_age:.2f} of the redo log, as in the rungs' kills")


# MariaDB applies a recovery batch once its parsed redo records fill a third of the pool
# (recv_sys_t::is_memory_exhausted)
RECV_POOL_SHARE = 1 / 3


def batch_refusal(kind: str, at, sh) -> str | None:
    """A regime no rung ran: crash recovery in several batches (MariaDB parses the redo into the
    buffer pool and applies a batch once the parsed records fill a third of it). A checkpoint age
    ÷ pool under a third, or within what a rung recovered in one batch, is one batch (parsed
    records take less memory than their redo: rungs recovered 0.36 of their pool, and the first
    restart check's every rung more than a third, in one batch); one at or past what a rung
    needed several for is several; between, no answer."""
    if kind != "crash-during-load":
        return None
    age = checkpoint_age(at, sh)
    ratio = age / at.pool
    one = max(sh.single_batch_up_to, RECV_POOL_SHARE)
    if ratio <= one or ratio >= sh.multi_batch_from:
        return None
    return (f"recovering {human(age)} of redo with a {human(at.pool)} pool (checkpoint age {ratio:.2f} of the pool) "
            f"may take several batches: MariaDB starts one past a third of the pool, the rungs recovered in one "
            f"batch up to {sh.single_batch_up_to:.2f} of their pool"
            f"{'' if math.isinf(sh.multi_batch_from) else f' and needed several from {sh.multi_batch_from:.2f}'}; "
            f"run a rung whose checkpoint age is {ratio:.2f} of its innodb_buffer_pool_size or more "
            f"(restart.settings), or give a --pool over {human(age / one)}")


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
