"""Synthetic Object/Source catalog: a seeded base patch, duplicated over the sky.

The base patch sits at dec 0 (ra in [0, width), dec in [-height/2, height/2)) and
wraps periodically, so copies tile without seams in density. Each copy is shifted in
dec and stretched in ra by cos(dec_old)/cos(dec_new), which keeps the density per unit
area (the DMTR-21 150-node duplication). See catalog.md.
"""

from __future__ import annotations

import contextlib
import json
import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..core.infra.files import PARQUET_OPTIONS, atomic_path
from ..core.sky.copies import (  # noqa: F401
    COPY_STRIDE,
    PART_TEXT,
    copy_layout,
    n_copies,
    part_copies,
)
from .arrays import arrow, numpy
from .ids import IdLayout
from .rowtext import COPY_ROWS, TextWriter, text_of
from .spec import CatalogSpec

BANDS = "ugrizy"
# Single-visit 5-sigma depths (AB mag), LSST-like; flux sigma = depth flux / 5.
_DEPTH = np.array([23.9, 25.0, 24.7, 24.0, 23.3, 22.1])
_RED_FRACTION = 0.002          # i-z > 4 "dropouts", so HV2's colour cut selects a few


def mag_to_flux(mag):
    """AB magnitude -> flux in erg/s/cm^2/Hz, the inverse of fluxToAbMag."""
    return np.power(10.0, -(np.asarray(mag) + 48.6) / 2.5)


def object_schema(filler_columns: int) -> pa.Schema:
    fields = [("objectId", pa.int64()), ("ra_PS", pa.float64()), ("decl_PS", pa.float64())]
    # Types as in LSST's PT1.2 baseline schema (the seeds' data): positions DOUBLE,
    # Object fluxes FLOAT, and filler FLOAT as most columns of a real Object table are.
    for b in BANDS:
        fields += [(f"{b}Flux_PS", pa.float32()), (f"{b}Flux_PS_Sigma", pa.float32())]
    fields += [(f"filler_{k:02d}", pa.float32()) for k in range(filler_columns)]
    return _required(fields)


def _required(fields) -> pa.Schema:
    """The catalog has no NULLs, and its schema says so: Parquet then writes and reads no
    definition levels (writing a chunk file took 0.7x the CPU)."""
    return pa.schema([pa.field(name, type, nullable=False) for name, type in fields])


SOURCE_SCHEMA = _required([
    ("sourceId", pa.int64()), ("objectId", pa.int64()), ("ra", pa.float64()),
    ("decl", pa.float64()), ("taiMidPoint", pa.float64()), ("filterId", pa.int8()),
    ("psfFlux", pa.float64()), ("psfFluxSigma", pa.float32()),   # as in PT1.2
])


@dataclass
class Patch:
    """The base patch: local ids 0..n-1 plus columns; sources sorted by object."""
    objects: pa.Table   # objectId holds the permuted local id (1..n)
    sources: pa.Table   # sourceId permuted local id; objectId as in objects


def generate_patch(cat: CatalogSpec) -> Patch:
    """The seeded base patch the catalog spec describes."""
    p, seed = cat.patch, cat.seed
    rng = np.random.default_rng([seed, 1])
    n = p.objects
    width, height = p.ra_width_deg, p.dec_height_deg

    # Positions: a uniform background plus Gaussian clusters (chunk sizes then vary).
    n_cl = int(round(n * p.cluster_fraction)) if p.cluster_count > 0 else 0
    s_lo, s_hi = math.sin(math.radians(-height / 2)), math.sin(math.radians(height / 2))
    ra = rng.uniform(0.0, width, n)
    dec = np.degrees(np.arcsin(rng.uniform(s_lo, s_hi, n)))
    if n_cl:
        centres = rng.integers(0, p.cluster_count, n_cl)
        c_ra = rng.uniform(0.0, width, p.cluster_count)
        c_dec = rng.uniform(-height / 2, height / 2, p.cluster_count)
        sig = p.cluster_sigma_deg * rng.uniform(0.3, 1.7, p.cluster_count)
        ra[:n_cl] = c_ra[centres] + rng.normal(0.0, 1.0, n_cl) * sig[centres]
        dec[:n_cl] = c_dec[centres] + rng.normal(0.0, 1.0, n_cl) * sig[centres]
    ra = np.mod(ra, width)                                   # periodic patch
    dec = np.mod(dec + height / 2, height) - height / 2
    if cat.density_model != "uniform":
        # Rows in random sky order, so a copy thinned to its first ``keep`` rows keeps a
        # random sample of the patch (copy_layout); uniform keeps its rows (and bytes).
        order = np.random.default_rng([seed, 31]).permutation(n)
        ra, dec = ra[order], dec[order]

    mags = _magnitudes(rng, n)
    flux_true = mag_to_flux(mags)
    sigma = mag_to_flux(_DEPTH) / 5.0
    cols = {"objectId": rng.permutation(n).astype(np.int64) + 1, "ra_PS": ra, "decl_PS": dec}
    for k, b in enumerate(BANDS):
        cols[f"{b}Flux_PS"] = (flux_true[:, k] + rng.normal(0.0, sigma[k], n)).astype(np.float32)
        cols[f"{b}Flux_PS_Sigma"] = (np.full(n, sigma[k]) * rng.uniform(0.9, 1.1, n)).astype(np.float32)
    for k in range(cat.filler_columns):
        cols[f"filler_{k:02d}"] = rng.normal(0.0, 1.0, n).astype(np.float32)
    objects = pa.table(cols, schema=object_schema(cat.filler_columns))

    return Patch(objects, make_sources(rng, cat, cols["objectId"], ra, dec, flux_true))


def make_sources(rng, cat: CatalogSpec, object_ids, ra, dec, flux_true) -> pa.Table:
    """Sources of the patch's Objects (ids, positions, (n, 6) true fluxes): a Poisson count
    per object, scattered around it, random epoch and filter, sorted by object."""
    n = len(object_ids)
    sigma = mag_to_flux(_DEPTH) / 5.0
    counts = rng.poisson(cat.sources_per_object, n)
    owner = np.repeat(np.arange(n), counts)
    m = len(owner)
    scatter = cat.source_scatter_arcsec / 3600.0
    s_dec = dec[owner] + rng.normal(0.0, scatter, m)
    s_ra = ra[owner] + rng.normal(0.0, scatter, m) / np.cos(np.radians(dec[owner]))
    filt = rng.integers(0, 6, m).astype(np.int8)
    s_sigma = sigma[filt] * rng.uniform(0.9, 1.1, m)
    variability = 1.0 + rng.normal(0.0, 0.02, m)
    return pa.table({
        "sourceId": rng.permutation(m).astype(np.int64) + 1,
        "objectId": np.asarray(object_ids)[owner],
        "ra": s_ra, "decl": s_dec,
        "taiMidPoint": rng.uniform(59580.0, 63230.0, m),
        "filterId": filt,
        "psfFlux": flux_true[owner, filt] * variability + rng.normal(0.0, 1.0, m) * s_sigma,
        "psfFluxSigma": s_sigma.astype(np.float32),
    }, schema=SOURCE_SCHEMA)


def true_fluxes(rng, n: int):
    """(n, 6) true fluxes of galaxy-like magnitudes (``_magnitudes``)."""
    return mag_to_flux(_magnitudes(rng, n))


def _magnitudes(rng, n):
    """(n, 6) true AB magnitudes: galaxy-like counts and colours, plus red dropouts."""
    u01 = rng.uniform(0.0, 1.0, n)
    lo, hi, slope = 16.0, 25.5, 0.35 * math.log(10.0)       # N(<m) ~ 10^(0.35 m)
    r = np.log(np.exp(slope * lo) + u01 * (np.exp(slope * hi) - np.exp(slope * lo))) / slope
    g = r + rng.normal(0.6, 0.3, n)
    u = g + rng.normal(1.2, 0.4, n)
    i = r - rng.normal(0.3, 0.2, n)
    z = i - rng.normal(0.15, 0.15, n)
    y = z - rng.normal(0.1, 0.1, n)
    red = rng.uniform(0.0, 1.0, n) < _RED_FRACTION
    k = int(red.sum())
    z[red] = rng.uniform(17.0, 19.5, k)
    i[red] = z[red] + rng.uniform(4.2, 5.5, k)
    r[red], g[red], u[red] = i[red] + 1.0, i[red] + 2.0, i[red] + 3.0
    y[red] = z[red] - 0.3
    return np.stack([u, g, r, i, z, y], axis=1)


# -- duplication ----------------------------------------------------------------------

# A copy changes only its leading columns (ids, position; see duplicate()): every later
# column of a copy's row k is the patch's row k (a thinned copy holds the patch's first rows,
# core/sky/density.md). So the TSV text of those
# columns is made once per patch row (write_shared_text) and only the leading columns'
# text per row; the partition stage glues them (rowtext.py).
VARYING = {"Object": 3, "Source": 4}


def write_shared_text(patch: Patch, object_path, source_path):
    """The text of every patch row's shared (copy-independent) columns."""
    for table, kind, path in ((patch.objects, "Object", object_path),
                              (patch.sources, "Source", source_path)):
        with TextWriter(path, VARYING[kind], table.num_rows) as w:
            w.write(text_of(table, range(VARYING[kind], table.num_columns)))

def layer(ra, dec, ra_shift, dec_shift, width, height):
    """Patch-local positions of a layer: shifted by (ra_shift, dec_shift), wrapped in the
    periodic patch; the positions themselves when unshifted (every copy of ``uniform``)."""
    if ra_shift:
        ra = np.mod(ra + ra_shift, width)
    if dec_shift:
        dec = np.mod(dec + height / 2 + dec_shift, height) - height / 2
    return ra, dec


def _band(dec, dec_centre):
    """Declinations of a copy centred at ``dec_centre`` and the stretch of its ra: the same
    for every copy of a band (the index-only path keeps them)."""
    dec_new = dec + dec_centre
    stretch = np.cos(np.radians(dec)) / np.cos(np.radians(np.clip(dec_new, -90.0, 90.0)))
    return np.clip(dec_new, -90.0, 90.0), stretch


def _move(ra, dec, dec_centre, ra_start):
    dec_new, stretch = _band(dec, dec_centre)
    return np.mod(ra_start + ra * stretch, 360.0), dec_new


def duplicate(patch: Patch, layout: np.ndarray, copy: int, ids: IdLayout) -> tuple[pa.Table, pa.Table]:
    """Copy number ``copy`` of the patch: its first ``keep`` objects (and their Sources),
    shifted as its layer and moved, with ids unique across copies (``ids``: the catalog's
    id layout, ids.py); each Source keeps its Object's id and moves with it."""
    row = layout[copy]
    keep, dc, rs = int(row["keep"]), row["dec_centre"], row["ra_start"]
    o, s = patch.objects, patch.sources
    # numpy/Arrow through buffers (arrays.py): to_numpy/pa.array would import pandas.
    local = numpy(o["objectId"])
    by_local = np.empty(len(local) + 1, np.int64)   # patch-local ids are 1..n
    by_local[local] = np.arange(len(local))
    owner = by_local[numpy(s["objectId"])]           # the patch row of each Source's Object
    n_src = int(np.searchsorted(owner, keep)) if keep < len(local) else len(owner)
    if keep < len(local):
        o, s, local, owner = o.slice(0, keep), s.slice(0, n_src), local[:keep], owner[:n_src]
    o_ra, o_dec = numpy(o["ra_PS"]), numpy(o["decl_PS"])
    s_ra, s_dec = numpy(s["ra"]), numpy(s["decl"])
    if row["ra_shift"] or row["dec_shift"]:
        l_ra, l_dec = layer(o_ra, o_dec, row["ra_shift"], row["dec_shift"], row["width"], row["height"])
        s_ra, s_dec = s_ra + (l_ra - o_ra)[owner], s_dec + (l_dec - o_dec)[owner]
        o_ra, o_dec = l_ra, l_dec
    ra, dec = _move(o_ra, o_dec, dc, rs)
    oid = ids.ids(local, copy, *ids.locate(ra, dec, f"copy {copy}"))
    obj = _replaced(o, arrow(oid), arrow(ra), arrow(dec))
    sra, sdec = _move(s_ra, s_dec, dc, rs)
    src = _replaced(s, arrow(numpy(s["sourceId"]) * COPY_STRIDE + copy),
                    arrow(oid[owner]), arrow(sra), arrow(sdec))
    return obj, src


def _replaced(table: pa.Table, *columns) -> pa.Table:
    """``table`` with its leading columns replaced, its schema kept."""
    for i, column in enumerate(columns):
        table = table.set_column(i, table.schema.field(i), column)
    return table


def write_part(patch: Patch, layout: np.ndarray, copies: range, object_path, source_path,
               ids: IdLayout, progress=None, text_paths=None) -> dict:
    """Write one catalog part (one row group per copy) and, given ``text_paths`` (table
    name -> path: the workflow gives those of PART_TEXT), the text of its rows' varying
    columns; return its row counts."""
    n_obj = n_src = 0
    sizes = _copy_sizes(patch, layout, copies)
    with contextlib.ExitStack() as stack:
        otmp = stack.enter_context(atomic_path(object_path))
        stmp = stack.enter_context(atomic_path(source_path))
        ow = stack.enter_context(pq.ParquetWriter(otmp, patch.objects.schema, **PARQUET_OPTIONS))
        sw = stack.enter_context(pq.ParquetWriter(stmp, patch.sources.schema, **PARQUET_OPTIONS))
        text_paths = text_paths or {}
        texts = {kind: stack.enter_context(TextWriter(path, VARYING[kind], table.num_rows))
                 for kind, table in (("Object", patch.objects), ("Source", patch.sources))
                 if (path := text_paths.get(kind))}
        for k, c in enumerate(copies):
            obj, src = duplicate(patch, layout, c, ids)
            ow.write_table(obj)
            sw.write_table(src)
            for kind, table in (("Object", obj), ("Source", src)):
                if kind in texts:
                    texts[kind].write(text_of(table, range(VARYING[kind])))
            n_obj += obj.num_rows
            n_src += src.num_rows
            if progress:
                progress(k + 1, len(copies), n_obj + n_src)
        if sizes is not None:
            for writer, rows in zip((ow, sw), sizes):
                writer.add_key_value_metadata({COPY_ROWS: json.dumps(rows)})
    return {"copies": len(copies), "objects": n_obj, "sources": n_src}


def _copy_sizes(patch: Patch, layout: np.ndarray, copies: range) -> tuple[list, list] | None:
    """The (Object, Source) rows of each copy of a part when a copy is thinned, None when
    every copy is whole. Written in the part's Parquet metadata (rowtext.COPY_ROWS): the
    partition stage then finds each row's patch row without assuming whole copies."""
    keep = layout["keep"][copies.start:copies.stop]
    n = patch.objects.num_rows
    if (keep == n).all():
        return None
    by_local = np.empty(n + 1, np.int64)
    by_local[numpy(patch.objects["objectId"])] = np.arange(n)
    owner = by_local[numpy(patch.sources["objectId"])]
    return keep.tolist(), np.searchsorted(owner, keep).tolist()
