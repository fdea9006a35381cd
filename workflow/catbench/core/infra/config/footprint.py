"""The catalog's footprint on the sky, checked before any job: the patch's copies fit the ids
(a copy index under COPY_STRIDE, rows in int64), the sky holds at least one, and the overlap
fits a sub-stripe; ``partition.num_stripes: auto`` resolved from the copies' density."""

from __future__ import annotations

import math

from ...sky.chunking import resolve_auto
from ...sky.copies import COPY_STRIDE, MAX_COPIES, copy_layout, n_places
from .errors import ConfigError


def check_footprint(cfg: dict) -> None:
    """The patch laid out on the sky once, its count and objects checked (the config's own check)."""
    cat, part = cfg["catalog"], cfg["partition"]
    check_sizes(cat)
    copies = copy_layout(cat)      # laid out once: the count and the objects below
    n = len(copies)
    if n == 0:
        raise ConfigError("config key 'catalog.sky': the patch does not fit in the sky region "
                          "(it is wider than the ra range at these declinations)")
    if n > MAX_COPIES:
        raise ConfigError(f"{_footprint_keys(cat)}: {n} copies exceed the id scheme's {MAX_COPIES}; "
                          f"make the patch larger")
    objects = int(copies["keep"].sum())     # keep < 2^43 in each of < 2^20 copies: no wrap
    resolve_auto(cfg)      # partition.num_stripes auto: from the density of the copies just checked
    sub_height = 180.0 / (part["num_stripes"] * part["num_sub_stripes_per_stripe"])
    if part["overlap_deg"] > sub_height:
        raise ConfigError(f"config key 'partition.overlap_deg': {part['overlap_deg']} is larger "
                          f"than a sub-stripe ({sub_height:.6f} deg for "
                          f"{part['num_stripes']} x {part['num_sub_stripes_per_stripe']})")
    if objects * (1 + math.ceil(cat["sources_per_object"])) > INT63_MAX:
        raise ConfigError(f"config key 'catalog.patch.objects': the catalog's {objects:,} objects "
                          f"with {cat['sources_per_object']} sources each are over int64's {INT63_MAX:,} rows")


INT63_MAX = 2**63 - 1
# ids are local id × COPY_STRIDE + copy in int64: a patch may hold fewer than this many
MAX_PATCH_OBJECTS = INT63_MAX // COPY_STRIDE - 1


def check_sizes(cat: dict):
    """Sizes in Python integers, refused before any int64 arithmetic could wrap them and
    before the copies are laid out in memory."""
    objects = cat["patch"]["objects"]
    if objects > MAX_PATCH_OBJECTS:
        raise ConfigError(f"config key 'catalog.patch.objects': {objects} is over the {MAX_PATCH_OBJECTS:,} "
                          f"objects a patch can hold (an objectId is local id × {COPY_STRIDE:,} + copy, in int64)")
    cat["patch"]["objects"] = int(objects)     # 6e3 in YAML is a float the schema takes as an integer
    if n_places(cat, stop=MAX_COPIES) > MAX_COPIES:
        raise ConfigError(f"{_footprint_keys(cat)}: a patch of {cat['patch']['ra_width_deg']} × "
                          f"{cat['patch']['dec_height_deg']} deg has more places on this sky than the ids' "
                          f"{MAX_COPIES:,} copies; make it larger or catalog.sky smaller")


def _footprint_keys(cat: dict) -> str:
    """The keys that set the patch's footprint: a patch file's rows (their extent replaces the
    synthetic patch's width and height), else the synthetic patch's own."""
    if (cat["patch"].get("file") or {}).get("paths"):
        return ("config key 'catalog.patch.file' (its rows' extent is the patch: a file whose rows span more "
                "sky makes fewer copies)")
    return "config keys 'catalog.patch.ra_width_deg' and 'catalog.patch.dec_height_deg'"
