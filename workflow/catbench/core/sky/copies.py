"""Where the catalog's copies of the base patch go on the sky, how they are split into
parts, and which parts each partition map job takes: the DAG's shape (cli/workflow/dag.py,
partition.smk), the config check and the catalog stage all need it, so it lives in core
(see prepare/catalog.md for the duplication itself), with the density the copies are
thinned or thickened to (``catalog.density``, density.md)."""

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


LAYER_STEP = (0.7548776662466927, 0.5698402909980532)  # R2 sequence: layers spread evenly


def _bands(cat: dict):
    """(dec centre, slot, places) of each band of the sky that holds a place: a band whose
    stretched slot is wider than the ra range holds none."""
    p, sky = cat["patch"], cat["sky"]
    width, height = float(p["ra_width_deg"]), float(p["dec_height_deg"])
    ra_range = sky["ra_max_deg"] - sky["ra_min_deg"]
    n_bands = int(math.floor((sky["dec_max_deg"] - sky["dec_min_deg"]) / height + 1e-9))
    for b in range(n_bands):
        centre = sky["dec_min_deg"] + (b + 0.5) * height
        edge = min(max(abs(centre - height / 2), abs(centre + height / 2)), 90.0)
        cos_edge = math.cos(math.radians(edge))
        if cos_edge <= 1e-12:
            continue
        slot = width / cos_edge        # widest stretched extent of a copy in this band
        yield centre, slot, int(math.floor(ra_range / slot + 1e-9))


def n_places(cat: dict, stop: int | None = None) -> int:
    """Places :func:`placements` gives, counted without building them (the config check
    refuses a patch so small that they would not fit in memory); past ``stop``, the count so
    far (a patch of 10^-6 deg has ~10^8 bands: counting them all would take minutes)."""
    total = 0
    for _, _, n in _bands(cat):
        total += n
        if stop is not None and total > stop:
            break
    return total


def placements(cat: dict) -> np.ndarray:
    """Where the patch goes, one row per place: dec centre, ra start. Places are ordered
    band by band from dec_min."""
    ra_min = cat["sky"]["ra_min_deg"]
    rows = [(centre, ra_min + k * slot) for centre, slot, n in _bands(cat) for k in range(n)]
    return np.array(rows, dtype=[("dec_centre", "f8"), ("ra_start", "f8")])


COPY = [("dec_centre", "f8"), ("ra_start", "f8"), ("ra_shift", "f8"), ("dec_shift", "f8"),
        ("keep", "i8"), ("width", "f8"), ("height", "f8")]   # the last two: the patch's


def copy_layout(cat: dict) -> np.ndarray:
    """One row per copy: dec centre, ra start, the shift of its patch (a layer), and the
    patch objects it keeps (the first ``keep``). A place gets round(factor x patch
    objects) objects of ``catalog.density`` (core/sky/density.md): full layers, the first
    unshifted, then the rest as a last, thinned layer; none when that is 0. ``uniform``:
    one unshifted, whole copy per place."""
    places, n = placements(cat), int(cat["patch"]["objects"])
    model = cat["density"]
    out = np.zeros(len(places), COPY)
    width, height = float(cat["patch"]["ra_width_deg"]), float(cat["patch"]["dec_height_deg"])
    out["dec_centre"], out["ra_start"], out["keep"] = places["dec_centre"], places["ra_start"], n
    out["width"], out["height"] = width, height
    if model["model"] == "uniform" or not len(places):
        return out
    dec = places["dec_centre"]
    ra = places["ra_start"] + width / 2 / np.cos(np.radians(dec))
    total = _rounded(factors(np.mod(ra, 360.0), dec, model) * n)
    layers = -(-total // n)                                   # ceil
    rows = np.repeat(np.arange(len(places)), layers)
    layer = np.arange(len(rows)) - np.repeat(np.cumsum(layers) - layers, layers)
    out = np.zeros(len(rows), COPY)
    out["dec_centre"], out["ra_start"] = places["dec_centre"][rows], places["ra_start"][rows]
    out["ra_shift"] = np.mod(layer * LAYER_STEP[0], 1.0) * width
    out["dec_shift"] = np.mod(layer * LAYER_STEP[1], 1.0) * height
    out["keep"] = np.minimum(n, total[rows] - layer * n)
    out["width"], out["height"] = width, height
    return out


def _rounded(objects: np.ndarray) -> np.ndarray:
    """Whole objects per place summing to the rounded total (largest remainders first, the
    earlier place on a tie): uncapped, the region holds exactly uniform's objects."""
    out = np.floor(objects).astype(np.int64)
    short = int(round(float(objects.sum()))) - int(out.sum())
    if short > 0:
        out[np.argsort(out - objects, kind="stable")[:short]] += 1
    return out


def n_copies(cat: dict) -> int:
    return len(copy_layout(cat))


def catalog_objects(cat: dict) -> int:
    """Objects of the whole catalog (every copy's kept objects)."""
    return int(copy_layout(cat)["keep"].sum())


def part_copies(cat: dict) -> list[range]:
    """Copies of each catalog part: runs of whole copies holding at most
    ``max_objects_per_part`` objects (at least one copy), which bounds a part's memory."""
    keep, limit = copy_layout(cat)["keep"], int(cat["max_objects_per_part"])
    n = int(cat["patch"]["objects"])
    if (keep == n).all():   # every copy whole: equal runs
        per = max(1, limit // n)
        return [range(s, min(s + per, len(keep))) for s in range(0, len(keep), per)]
    parts, start, held = [], 0, 0
    for c, k in enumerate(keep.tolist()):
        if c > start and held + k > limit:
            parts.append(range(start, c))
            start, held = c, 0
        held += k
    return parts + ([range(start, len(keep))] if len(keep) else [])


def map_batches(cfg: dict) -> list[range]:
    """Catalog parts of each partition map job: runs of consecutive parts holding at most
    ``partition.max_rows_per_map`` (estimated) rows, at least one part, balanced by rows
    (a galactic sky's parts are uneven: balancing by count would add a job). A map job
    holds one part at a time, so this bounds its run time, not its memory; fewer jobs pay
    fewer process start-ups (~0.5 CPU-s each, as much as mapping a 2 M-row part)."""
    cat = cfg["catalog"]
    keep = copy_layout(cat)["keep"]
    rows = np.array([int(keep[c.start:c.stop].sum()) for c in part_copies(cat)], dtype=np.float64) \
        * (1 + float(cat["sources_per_object"]))
    if not len(rows):
        return []
    limit = float(cfg["partition"]["max_rows_per_map"])
    greedy, start, held = [], 0, 0.0  # the fewest jobs: fill each up to the limit
    for p, r in enumerate(rows):
        if p > start and held + r > limit:
            greedy.append(range(start, p))
            start, held = p, 0.0
        held += r
    greedy.append(range(start, len(rows)))
    # as many jobs, balanced: job k ends where the running total reaches k/jobs of it
    ends, jobs = np.cumsum(rows), len(greedy)
    cuts = [0] + [int(np.searchsorted(ends, ends[-1] * k / jobs - 0.5)) + 1 for k in range(1, jobs)] \
        + [len(rows)]
    balanced = [range(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]
    fits = all(len(b) == 1 or rows[b.start:b.stop].sum() <= limit for b in balanced)
    return balanced if fits and len(balanced) == jobs else greedy


# -- the density model (catalog.density) ------------------------------------------------
# How crowded the duplicated sky is: ``uniform``, or ``galactic``, a star-count model in
# galactic coordinates (l, b) that each copy of the base patch is thinned or thickened to
# (copy_layout). density.md beside this file gives the model, its figures and sources.
#
# ``galactic`` relative density, in units of the halo at the galactic poles:
#
#     rho(l, b) = 1                                                         halo
#               + thick_peak exp(-|b| / thick_scale_deg)                    thick disc
#               + disc_peak exp(-(|l| / disc_half_length_deg)^4 - b^2 / (2 disc_sigma_b_deg^2))
#               + bulge_peak exp(-l^2 / (2 bulge_sigma_l_deg^2) - b^2 / (2 bulge_sigma_b_deg^2))
#               + sum over clouds: peak exp(-d^2 / (2 sigma_deg^2))         d: angle to its centre
#
# with l in (-180, 180]. A copy's factor is rho at its centre over the mean of rho at every
# copy centre of the run's sky region (so the region holds, on average, the patch's density:
# as many rows as ``uniform``), at most ``max_factor``.

# ICRS (equatorial J2000) -> galactic: the Hipparcos definition (ESA 1997, vol. 1, eq.
# 1.5.11), the IAU 1958 system rotated to ICRS: x_gal = A_G @ x_icrs.
A_G = np.array([
    [-0.0548755604162154, -0.8734370902348850, -0.4838350155487132],
    [+0.4941094278755837, -0.4448296299600112, +0.7469822444972189],
    [-0.8676661490190047, -0.1980763734312015, +0.4559837761750669],
])


def _unit(lon_deg, lat_deg) -> np.ndarray:
    lon, lat = np.radians(lon_deg), np.radians(lat_deg)
    return np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)])


def _angles(xyz) -> tuple[np.ndarray, np.ndarray]:
    lon = np.degrees(np.arctan2(xyz[1], xyz[0])) % 360.0
    lat = np.degrees(np.arcsin(np.clip(xyz[2], -1.0, 1.0)))
    return lon, lat


def to_galactic(ra, dec) -> tuple[np.ndarray, np.ndarray]:
    """(l, b) in degrees, l in [0, 360), of equatorial (ra, dec) in degrees."""
    return _angles(np.tensordot(A_G, _unit(np.asarray(ra, float), np.asarray(dec, float)), 1))


def to_equatorial(l, b) -> tuple[np.ndarray, np.ndarray]:
    """(ra, dec) in degrees of galactic (l, b) in degrees (A_G is a rotation: its
    inverse is its transpose)."""
    return _angles(np.tensordot(A_G.T, _unit(np.asarray(l, float), np.asarray(b, float)), 1))


def relative(l, b, model: dict) -> np.ndarray:
    """The galactic model's density at (l, b) (degrees), 1 = the halo at the poles."""
    l = (np.asarray(l, float) + 180.0) % 360.0 - 180.0     # (-180, 180]
    b = np.asarray(b, float)
    m = model
    rho = 1.0 + m["thick_peak"] * np.exp(-np.abs(b) / m["thick_scale_deg"])
    rho = rho + m["disc_peak"] * np.exp(-(np.abs(l) / m["disc_half_length_deg"]) ** 4
                                        - b ** 2 / (2.0 * m["disc_sigma_b_deg"] ** 2))
    rho = rho + m["bulge_peak"] * np.exp(-l ** 2 / (2.0 * m["bulge_sigma_l_deg"] ** 2)
                                         - b ** 2 / (2.0 * m["bulge_sigma_b_deg"] ** 2))
    here = _unit(l, b)
    for c in m["clouds"]:
        cos_d = np.tensordot(_unit(c["l_deg"], c["b_deg"]), here, 1)
        d = np.degrees(np.arccos(np.clip(cos_d, -1.0, 1.0)))
        rho = rho + c["peak"] * np.exp(-d ** 2 / (2.0 * c["sigma_deg"] ** 2))
    return rho


def at_equatorial(ra, dec, model: dict) -> np.ndarray:
    """The model's relative density at equatorial (ra, dec): 1 everywhere for uniform."""
    if model["model"] == "uniform":
        return np.ones(np.shape(ra))
    return relative(*to_galactic(ra, dec), model)


def factors(ra, dec, model: dict) -> np.ndarray:
    """Each copy's density factor (copies centred at ``ra``, ``dec``): the model over its
    mean at those centres, at most ``max_factor``; exactly 1 for uniform."""
    if model["model"] == "uniform" or len(np.atleast_1d(ra)) == 0:
        return np.ones(np.shape(ra))
    rho = at_equatorial(ra, dec, model)
    return np.minimum(rho / rho.mean(), float(model["max_factor"]))


def per_deg2(cells_deg: float, model: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The model on a grid of ~``cells_deg``-wide cells of equal area (cells_deg^2 each,
    in bands of equal height): (l, b, relative density) at the cells' centres."""
    rows = int(round(180.0 / cells_deg))
    ls, bs = [], []
    for k in range(rows):
        b = -90.0 + (k + 0.5) * 180.0 / rows
        n = max(1, int(round(360.0 * np.cos(np.radians(b)) / cells_deg)))
        ls.append((np.arange(n) + 0.5) * 360.0 / n)
        bs.append(np.full(n, b))
    l, b = np.concatenate(ls), np.concatenate(bs)
    return l, b, relative(l, b, model)
