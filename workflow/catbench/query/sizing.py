"""Boxes and SHV1's radius sized to the patch's density, measured on the data.

DMTR-21's sizes (a 2 deg box, a 1 arcmin radius) were chosen for a patch of a few thousand
objects per deg²; at a survey's ~150,000 a 2 deg box holds 600,000 objects and SHV1 counts
~40 M pairs. So a drawn box shrinks until it holds about ``queries.draw.target_rows``
Objects (counted in the box: one filtered scan), and SHV1's radius until the pairs it
counts are about ``queries.draw.target_pairs``. The pairs are estimated from a sample:
the neighbours within the radius of a fixed sample of the box's objects (chosen by a
hash of their ids with the run seed: same data and seed, same sample), times the box's
objects / 2 — a bounded join, never the full self-join. Neighbours grow as the radius
squared, so the radius is scaled by the square root of target / estimate, a few times.
MySQL's SHV1 does more work than it counts: Qserv's sub-chunk join tests each Object of the
box against every Object of its sub-chunk and of that sub-chunk's overlap (``tests_per_object``),
so SHV1's box shrinks further until those tests are about ``queries.draw.target_tests``.
Every query of the draw shares one deadline (``queries.draw.budget_s``).
"""

from __future__ import annotations

import math
import time

from ..core.infra.resources import read_sql
from ..core.sky.geometry import Geometry
from .engines import Deadline, DuckdbEngine, QueryTimeout
from .spec import Draw
from .suite import QueryError

SAMPLE = 256        # objects whose neighbours estimate the box's pairs
_STEPS = 6          # resizing steps at most (each a bounded query)
_SLACK = 1.25       # within this factor of a target a size is kept
_UNREACHED = 10.0   # still this far past its target after every step: the draw refuses

_COUNT = read_sql("draw", "box_objects.sql")
_NEIGHBOURS = read_sql("draw", "shv1_neighbours.sql")


def tests_per_object(geometry: Geometry, density: float) -> float:
    """MySQL's distance tests for one Object of SHV1's box: the Objects of its sub-chunk and of
    that sub-chunk's overlap, a square of the sub-chunk's side (the stripe height over its
    sub-stripes) plus the overlap on every side, at ``density`` Objects per deg²."""
    side = 180.0 / (geometry.num_stripes * geometry.num_sub_stripes_per_stripe)
    return density * (side + 2.0 * geometry.overlap_deg) ** 2


def significant(x: float, digits: int = 4) -> float:
    """``x`` at ``digits`` significant digits: a sized parameter reads as a plain number."""
    return float(f"{x:.{digits}g}")


class Sizer:
    """The draw's density-sized boxes and radii, every query before ``deadline`` (monotonic s)."""

    def __init__(self, engine: DuckdbEngine, draw: Draw):
        self.engine, self.draw = engine, draw
        self.deadline = Deadline(time.monotonic() + draw.budget_s, lambda what: (
            f"config key 'queries.draw.budget_s': drawing the query parameters took over {draw.budget_s:g} s "
            f"({what}); lower queries.draw.target_rows or queries.draw.target_pairs, raise the budget, or give "
            f"queries.parameters.{what.split()[0]}"))
        self.left, self.over = self.deadline.left, self.deadline.passed

    def sql(self, what: str, sql: str, args: dict) -> list[tuple]:
        try:
            return self.engine.execute(sql, args, timeout_s=self.left(what))[1]
        except QueryTimeout:
            raise self.over(what) from None

    def run(self, query, params: dict):
        """``query`` run once with ``params``, within the budget."""
        try:
            return self.engine.run(query, params, timeout_s=self.left(query.name))
        except QueryTimeout:
            raise self.over(f"{query.name} checked") from None

    def count(self, name: str, box: dict) -> int:
        """The Objects in ``box``."""
        return self.sql(f"{name} box", _COUNT, box)[0][0]

    def box(self, name: str, box_of, size: float, target: int | None = None) -> tuple[dict, int, float]:
        """The box ``box_of(size)`` shrunk until it holds about ``target`` Objects (default
        ``target_rows``): the box, its Objects and its size."""
        target = target or self.draw.target_rows
        box = box_of(size)
        rows = self.count(name, box)
        for _ in range(_STEPS):
            if rows <= _SLACK * target:
                break
            size = significant(size * math.sqrt(target / rows))
            box = box_of(size)
            rows = self.count(name, box)
        if rows > _UNREACHED * target:
            raise self.unreached(name, f"its box of {size:g} deg still holds {rows:,} Objects", "target_rows", target)
        return box, rows, size

    def unreached(self, name: str, what: str, key: str, target: float) -> QueryError:
        """A size the draw cannot bring near its target: the patch is denser at a point than
        any box or radius it tries (e.g. thousands of objects at one position)."""
        return QueryError(f"config key 'queries.draw.{key}': {name}: {what} after {_STEPS} resizings, over "
                          f"{_UNREACHED:g}x the {target:,.0f} asked; the patch is denser than the draw can size "
                          f"for: give queries.parameters.{name} (its box and radius)")

    def pairs(self, box: dict, rows: int, radius: float) -> tuple[int, float]:
        """(objects sampled, SHV1's estimated pairs in ``box`` at ``radius``); exact when the
        sample is the whole box."""
        sampled, found = self.sql("SHV1 radius", _NEIGHBOURS,
                                  {**box, "radius": radius, "salt": self.draw.seed, "sample": SAMPLE})[0]
        if not sampled:
            return 0, 0.0
        return sampled, found / 2.0 * (rows / sampled)

    def radius(self, box: dict, rows: int, radius: float) -> tuple[float, int, float]:
        """SHV1's radius (at most ``radius``) for about ``target_pairs`` pairs: the radius,
        the objects sampled and the estimated pairs."""
        sampled, est = self.pairs(box, rows, radius)
        for _ in range(_STEPS):
            if est <= _SLACK * self.draw.target_pairs or not est:
                break
            radius = significant(radius * math.sqrt(self.draw.target_pairs / est))
            sampled, est = self.pairs(box, rows, radius)
        if est > _UNREACHED * self.draw.target_pairs:
            raise self.unreached("SHV1", f"its radius of {radius:g} deg still pairs ~{est:,.0f}", "target_pairs",
                                 self.draw.target_pairs)
        return radius, sampled, est
