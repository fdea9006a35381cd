"""The sky's chunking as the partition made it (``partition.num_stripes``,
``num_sub_stripes_per_stripe``, ``overlap_deg``): the prepare stage cuts the chunks with it,
the query stage dispatches to them and sizes SHV1's radius with it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Geometry:
    num_stripes: int
    num_sub_stripes_per_stripe: int
    overlap_deg: float
