"""How crowded a chunk is: the catalog's density where it is densest, the Object rows a chunk
and a sub-chunk then hold, and the stripes ``partition.num_stripes: auto`` /
``num_sub_stripes_per_stripe: auto`` pick so that they hold at most ``partition.auto_chunk_rows``
and ``auto_sub_chunk_rows``. The config check resolves ``auto`` once (every job reads numbers);
the plan says the rows a chunk holds and suggests ``auto`` when they are over the bound.

A chunk of s stripes is about (180/s)² deg² (Qserv's chunks are as wide as a stripe is high
where the stripe is narrowest), a sub-chunk (180/(s·n))²: the rows are that area × the
density of the densest place of the sky (a place holds the patch once, or several layers of
it under a galactic density: copies.py), at most the catalog's rows."""

from __future__ import annotations

import math

import numpy as np

from .copies import copy_layout

AUTO = "auto"
MAX_STRIPES, MAX_SUB_STRIPES = 10000, 1000     # the schema's maxima


def densest(cat: dict) -> float:
    """Objects per deg² at the densest place of the catalog's sky (the patch's own density
    times the layers of copies stacked there); 0 for a sky that holds no copy."""
    layout = copy_layout(cat)
    if not len(layout):
        return 0.0
    area = float(cat["patch"]["ra_width_deg"]) * float(cat["patch"]["dec_height_deg"])
    _, at = np.unique(np.stack([layout["dec_centre"], layout["ra_start"]], axis=1), axis=0, return_inverse=True)
    per_place = np.bincount(at.ravel(), weights=layout["keep"])
    return float(per_place.max()) / area


def rows_in(density: float, side_deg: float, total: int) -> int:
    """Object rows in a cell ``side_deg`` high and wide at ``density``, at most ``total``."""
    return int(min(total, math.ceil(density * side_deg * side_deg)))


def auto_stripes(density: float, bound: int) -> int:
    """The fewest stripes whose chunks hold at most ``bound`` rows at ``density``."""
    if density <= 0:
        return 1
    return min(MAX_STRIPES, max(1, math.ceil(180.0 / math.sqrt(bound / density))))


def auto_sub_stripes(density: float, stripes: int, bound: int, overlap_deg: float) -> int:
    """The fewest sub-stripes whose sub-chunks hold at most ``bound`` rows, at most as many as
    keep a sub-stripe at least ``overlap_deg`` high (the partition's overlap must fit in one)."""
    height = 180.0 / stripes
    most = MAX_SUB_STRIPES if overlap_deg <= 0 else max(1, min(MAX_SUB_STRIPES, int(height / overlap_deg)))
    want = 1 if density <= 0 else math.ceil(height / math.sqrt(bound / density))
    return max(1, min(most, want))


def resolve_auto(cfg: dict) -> None:
    """``partition.num_stripes`` and ``num_sub_stripes_per_stripe`` given as ``auto`` replaced
    in ``cfg`` by the numbers the catalog's density asks for."""
    part = cfg["partition"]
    if AUTO not in (part["num_stripes"], part["num_sub_stripes_per_stripe"]):
        return
    density = densest(cfg["catalog"])
    if part["num_stripes"] == AUTO:
        part["num_stripes"] = auto_stripes(density, part["auto_chunk_rows"])
    if part["num_sub_stripes_per_stripe"] == AUTO:
        part["num_sub_stripes_per_stripe"] = auto_sub_stripes(
            density, part["num_stripes"], part["auto_sub_chunk_rows"], float(part["overlap_deg"]))


def facts(cfg: dict) -> dict:
    """The catalog as the partition laid it out, for the report's first screen: the patch's
    rows and footprint, its density and the densest place's, copies, objects, stripes."""
    cat, part = cfg["catalog"], cfg["partition"]
    p, layout = cat["patch"], copy_layout(cat)
    area = float(p["ra_width_deg"]) * float(p["dec_height_deg"])
    return {"patch_objects": int(p["objects"]), "ra_width_deg": float(p["ra_width_deg"]),
            "dec_height_deg": float(p["dec_height_deg"]), "density": int(p["objects"]) / area,
            "densest": densest(cat), "copies": len(layout), "objects": int(layout["keep"].sum()),
            "sources_per_object": cat["sources_per_object"], "num_stripes": part["num_stripes"],
            "num_sub_stripes_per_stripe": part["num_sub_stripes_per_stripe"]}
