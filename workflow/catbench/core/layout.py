"""Where the catalog's copies of the base patch go on the sky, how they are split into
parts, and which parts each partition map job takes: the DAG's shape (common.smk,
partition.smk), the config check and the catalog stage all need it, so it lives in core
(see prepare/catalog.md for the duplication itself)."""

from __future__ import annotations

import math

import numpy as np

COPY_STRIDE = 1 << 20          # ids: permuted local id * COPY_STRIDE + copy
MAX_COPIES = COPY_STRIDE
# Tables whose catalog parts get a text file of their varying columns (prepare/rowtext.py,
# when partition.formats has tsv); the others' varying columns would be formatted by the
# partition reduce, which measured slower for Sources too (prepare/partition.md). Outputs
# of the catalog stage, so part of the DAG's shape.
PART_TEXT = ("Object", "Source")


def copy_layout(cat: dict) -> np.ndarray:
    """One row per copy: dec centre, ra start. Copies are ordered band by band from
    dec_min; a band whose stretched slot is wider than the ra range gets none."""
    p, sky = cat["patch"], cat["sky"]
    width, height = float(p["ra_width_deg"]), float(p["dec_height_deg"])
    ra_range = sky["ra_max_deg"] - sky["ra_min_deg"]
    n_bands = int(math.floor((sky["dec_max_deg"] - sky["dec_min_deg"]) / height + 1e-9))
    rows = []
    for b in range(n_bands):
        centre = sky["dec_min_deg"] + (b + 0.5) * height
        edge = min(max(abs(centre - height / 2), abs(centre + height / 2)), 90.0)
        cos_edge = math.cos(math.radians(edge))
        if cos_edge <= 1e-12:
            continue
        slot = width / cos_edge        # widest stretched extent of a copy in this band
        for k in range(int(math.floor(ra_range / slot + 1e-9))):
            rows.append((centre, sky["ra_min_deg"] + k * slot))
    return np.array(rows, dtype=[("dec_centre", "f8"), ("ra_start", "f8")])


def n_copies(cat: dict) -> int:
    return len(copy_layout(cat))


def part_copies(cat: dict) -> list[range]:
    """Copies of each catalog part: ``max_objects_per_part`` bounds a part's memory."""
    per = max(1, int(cat["max_objects_per_part"]) // int(cat["patch"]["objects"]))
    n = n_copies(cat)
    return [range(s, min(s + per, n)) for s in range(0, n, per)]


def map_batches(cfg: dict) -> list[range]:
    """Catalog parts of each partition map job: runs of consecutive parts holding at most
    ``partition.max_rows_per_map`` (estimated) rows, at least one part, balanced. A map job
    holds one part at a time, so this bounds its run time, not its memory; fewer jobs pay
    fewer process start-ups (~0.5 CPU-s each, as much as mapping a 2 M-row part)."""
    cat = cfg["catalog"]
    parts = part_copies(cat)
    per_copy = int(cat["patch"]["objects"]) * (1 + float(cat["sources_per_object"]))
    part_rows = max((len(c) for c in parts), default=1) * per_copy
    per_job = max(1, int(cfg["partition"]["max_rows_per_map"] // max(part_rows, 1)))
    jobs = math.ceil(len(parts) / per_job)
    return [range(len(parts) * k // jobs, len(parts) * (k + 1) // jobs) for k in range(jobs)]
