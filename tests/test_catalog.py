"""Synthetic catalog: the seeded base patch and its duplication over the sky."""

import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from catbench.core.infra.config import validate
from catbench.prepare import catalog as cat_mod
from catbench.prepare.ids import IdLayout
from catbench.prepare.spec import CatalogSpec, PrepareSpec

BANDS = "ugrizy"


def make_cfg(**catalog):
    """A validated config; ``catalog`` keys override the catalog section (dicts merge)."""
    cat = {"patch": {"objects": 6000}, "sky": {"ra_min_deg": 0, "ra_max_deg": 20,
                                               "dec_min_deg": -3, "dec_max_deg": 3}}
    for k, v in catalog.items():
        if isinstance(v, dict):
            cat.setdefault(k, {}).update(v)
        else:
            cat[k] = v
    return validate({"run": "t", "seed": 5, "catalog": cat, "partition": {}})


@pytest.fixture(scope="module")
def cfg():
    return make_cfg()


@pytest.fixture(scope="module")
def patch(cfg):
    return cat_mod.generate_patch(CatalogSpec.of(cfg))


def flux_to_ab_mag(f):
    """fluxToAbMag: -2.5 log10(f) - 48.6, NULL (NaN here) for f <= 0."""
    f = np.asarray(f, dtype=float)
    out = np.full(f.shape, np.nan)
    pos = f > 0
    out[pos] = -2.5 * np.log10(f[pos]) - 48.6
    return out


# -- the base patch --------------------------------------------------------------------

def test_patch_is_deterministic(cfg, patch):
    again = cat_mod.generate_patch(CatalogSpec.of(cfg))
    assert again.objects.equals(patch.objects)
    assert again.sources.equals(patch.sources)
    other = cat_mod.generate_patch(CatalogSpec.of({**cfg, "seed": cfg["seed"] + 1}))
    assert other.objects.num_rows == patch.objects.num_rows
    assert not np.array_equal(other.objects["ra_PS"].to_numpy(), patch.objects["ra_PS"].to_numpy())
    assert not np.array_equal(other.objects["iFlux_PS"].to_numpy(),
                              patch.objects["iFlux_PS"].to_numpy())
    assert not other.sources.equals(patch.sources)


def test_object_columns_and_types(cfg, patch):
    o = patch.objects
    assert o.num_rows == cfg["catalog"]["patch"]["objects"] == 6000
    names = o.schema.names
    assert names[:3] == ["objectId", "ra_PS", "decl_PS"]
    assert o.schema.field("objectId").type == pa.int64()  # BIGINT
    assert o.schema.field("ra_PS").type == pa.float64()
    assert o.schema.field("decl_PS").type == pa.float64()
    for b in BANDS:
        for c in (f"{b}Flux_PS", f"{b}Flux_PS_Sigma"):
            assert o.schema.field(c).type == pa.float32(), c   # FLOAT, as in PT1.2
    filler = [n for n in names if n.startswith("filler_")]
    assert len(filler) == cfg["catalog"]["filler_columns"] == 8
    assert len(names) == 3 + 12 + 8
    # ids: 1..n, unique, not in position order (permuted)
    ids = o["objectId"].to_numpy()
    assert sorted(ids.tolist()) == list(range(1, 6001))
    assert not np.all(np.diff(ids) > 0)
    # no NULLs anywhere; sigmas positive
    assert all(o[c].null_count == 0 for c in names)
    for b in BANDS:
        assert np.all(o[f"{b}Flux_PS_Sigma"].to_numpy() > 0)


def test_filler_column_count_follows_config():
    c = make_cfg(filler_columns=0, patch={"objects": 50})
    p = cat_mod.generate_patch(CatalogSpec.of(c))
    assert not [n for n in p.objects.schema.names if n.startswith("filler_")]
    c = make_cfg(filler_columns=30, patch={"objects": 50})
    p = cat_mod.generate_patch(CatalogSpec.of(c))
    fill = [n for n in p.objects.schema.names if n.startswith("filler_")]
    assert len(fill) == 30 and p.objects.schema.field(fill[0]).type == pa.float32()


def test_patch_positions_inside_patch(cfg, patch):
    p = cfg["catalog"]["patch"]
    ra, dec = patch.objects["ra_PS"].to_numpy(), patch.objects["decl_PS"].to_numpy()
    assert ra.min() >= 0 and ra.max() < p["ra_width_deg"]
    assert dec.min() >= -p["dec_height_deg"] / 2 and dec.max() < p["dec_height_deg"] / 2


def test_source_columns_and_ownership(cfg, patch):
    s = patch.sources
    assert s.schema.names == ["sourceId", "objectId", "ra", "decl", "taiMidPoint", "filterId",
                              "psfFlux", "psfFluxSigma"]
    assert s.schema.field("sourceId").type == pa.int64()
    assert s.schema.field("objectId").type == pa.int64()
    assert s.schema.field("filterId").type == pa.int8()
    sid = s["sourceId"].to_numpy()
    assert len(np.unique(sid)) == len(sid)
    # every Source belongs to an Object and sits within a few arcsec of it
    o = patch.objects
    pos = {int(k): i for i, k in enumerate(o["objectId"].to_numpy())}
    owner = np.array([pos[int(k)] for k in s["objectId"].to_numpy()])
    ora, odec = o["ra_PS"].to_numpy()[owner], o["decl_PS"].to_numpy()[owner]
    d_arcsec = 3600 * np.hypot((s["ra"].to_numpy() - ora) * np.cos(np.radians(odec)),
                               s["decl"].to_numpy() - odec)
    scatter = cfg["catalog"]["source_scatter_arcsec"]
    assert np.median(d_arcsec) < 2 * scatter and d_arcsec.max() < 10 * scatter
    f = s["filterId"].to_numpy()
    assert set(np.unique(f).tolist()) == set(range(6))


def test_sources_per_object_mean(cfg, patch):
    mean = patch.sources.num_rows / patch.objects.num_rows
    assert abs(mean - cfg["catalog"]["sources_per_object"]) < 0.15  # Poisson: sd ~0.03
    c = make_cfg(sources_per_object=2.5, patch={"objects": 4000})
    p = cat_mod.generate_patch(CatalogSpec.of(c))
    assert abs(p.sources.num_rows / 4000 - 2.5) < 0.1
    c = make_cfg(sources_per_object=0, patch={"objects": 100})
    assert cat_mod.generate_patch(CatalogSpec.of(c)).sources.num_rows == 0


def cell_counts(ra, dec, width, height, bins=20):
    h, _, _ = np.histogram2d(ra, dec, bins=bins, range=[[0, width], [-height / 2, height / 2]])
    return h.ravel()


def test_density_is_clustered(cfg, patch):
    p = cfg["catalog"]["patch"]
    h = cell_counts(patch.objects["ra_PS"].to_numpy(), patch.objects["decl_PS"].to_numpy(),
                    p["ra_width_deg"], p["dec_height_deg"])
    assert h.var() > 3 * h.mean()  # Poisson would give var == mean
    # Without clusters the same test sees a Poisson field.
    c = make_cfg(patch={"objects": 6000, "cluster_count": 0})
    q = cat_mod.generate_patch(CatalogSpec.of(c))
    h0 = cell_counts(q.objects["ra_PS"].to_numpy(), q.objects["decl_PS"].to_numpy(),
                     p["ra_width_deg"], p["dec_height_deg"])
    assert h0.var() < 1.5 * h0.mean()


def test_colour_cut_selects_a_few(patch):
    o = patch.objects
    with np.errstate(invalid="ignore"):
        colour = flux_to_ab_mag(o["iFlux_PS"].to_numpy()) - flux_to_ab_mag(o["zFlux_PS"].to_numpy())
        selected = colour > 4  # NaN (NULL) compares false, as in SQL
    n = int(selected.sum())
    assert 1 <= n <= 0.01 * o.num_rows
    # typical objects have ordinary colours
    assert abs(np.nanmedian(colour)) < 1.0


def test_magnitudes_are_plausible(patch):
    r = flux_to_ab_mag(patch.objects["rFlux_PS"].to_numpy())
    assert 16 < np.nanmin(r) and np.nanmedian(r) < 26


# -- duplication -----------------------------------------------------------------------

def all_copies(patch, cfg):
    layout, ids = cat_mod.copy_layout(cfg["catalog"]), IdLayout(PrepareSpec.of(cfg))
    objs, srcs = zip(*(cat_mod.duplicate(patch, layout, c, ids) for c in range(len(layout))))
    return layout, pa.concat_tables(objs), pa.concat_tables(srcs)


def test_copy_ids_unique_and_sources_follow(cfg, patch):
    layout, o, s = all_copies(patch, cfg)
    # 3 dec bands; in each, copies of 2 deg stretched to 2/cos(band edge) in 20 deg of ra
    per_band = [math.floor(20 / (2 / math.cos(math.radians(e)))) for e in (3, 1, 3)]
    assert len(layout) == sum(per_band) == 27
    assert sorted(set(layout["dec_centre"].tolist())) == [-2.0, 0.0, 2.0]
    assert o.num_rows == len(layout) * patch.objects.num_rows
    assert s.num_rows == len(layout) * patch.sources.num_rows
    oid = o["objectId"].to_numpy()
    assert len(np.unique(oid)) == len(oid)
    sid = s["sourceId"].to_numpy()
    assert len(np.unique(sid)) == len(sid)
    # every Source's objectId is an Object of the same copy, and sits next to it
    idx = {int(k): i for i, k in enumerate(oid)}
    owner = np.array([idx[int(k)] for k in s["objectId"].to_numpy()])
    dra = (s["ra"].to_numpy() - o["ra_PS"].to_numpy()[owner] + 180) % 360 - 180
    ddec = s["decl"].to_numpy() - o["decl_PS"].to_numpy()[owner]
    assert np.max(np.abs(ddec)) * 3600 < 10 and np.max(np.abs(dra)) * 3600 < 20


def test_copies_stay_inside_the_sky_region(patch):
    for sky in ({"ra_min_deg": 0, "ra_max_deg": 20, "dec_min_deg": -3, "dec_max_deg": 3},
                {"ra_min_deg": 340, "ra_max_deg": 360, "dec_min_deg": 50, "dec_max_deg": 70},
                {"ra_min_deg": 100, "ra_max_deg": 130, "dec_min_deg": -88, "dec_max_deg": -60}):
        c = make_cfg(sky=sky)
        layout, o, s = all_copies(patch, c)
        assert len(layout) > 0
        ra, dec = o["ra_PS"].to_numpy(), o["decl_PS"].to_numpy()
        assert ra.min() >= sky["ra_min_deg"] and ra.max() <= sky["ra_max_deg"], sky
        assert dec.min() >= sky["dec_min_deg"] and dec.max() <= sky["dec_max_deg"], sky
        # Sources may scatter a few arcsec past the edge, no more.
        tol = 20 / 3600 / math.cos(math.radians(max(abs(sky["dec_min_deg"]), abs(sky["dec_max_deg"]))))
        sra, sdec = s["ra"].to_numpy(), s["decl"].to_numpy()
        sra = np.where(sra > sky["ra_max_deg"] + 180, sra - 360, sra)
        assert sra.min() >= sky["ra_min_deg"] - tol and sra.max() <= sky["ra_max_deg"] + tol
        assert sdec.min() >= sky["dec_min_deg"] - 0.01 and sdec.max() <= sky["dec_max_deg"] + 0.01


def band_density(patch, dec_lo, dec_hi):
    """Objects per square degree over the ra range the band's copies cover."""
    c = make_cfg(sky={"ra_min_deg": 0, "ra_max_deg": 60, "dec_min_deg": dec_lo,
                      "dec_max_deg": dec_hi})
    layout, o, _ = all_copies(patch, c)
    ra = o["ra_PS"].to_numpy()
    ra_hi = ra.max()
    slot = layout["ra_start"][1] - layout["ra_start"][0]
    ra_span = len(layout) * slot
    assert ra_hi <= ra_span
    area = ra_span * (180 / math.pi) * (math.sin(math.radians(dec_hi)) - math.sin(math.radians(dec_lo)))
    return len(ra) / area, len(layout)


def test_duplication_preserves_density(patch):
    d0, n0 = band_density(patch, -1, 1)
    d60, n60 = band_density(patch, 59, 61)
    assert n60 < n0 * 0.6  # fewer, stretched copies at high dec
    assert abs(d60 / d0 - 1) < 0.10, (d0, d60)


def test_write_part_round_trip(tmp_path, cfg, patch):
    layout = cat_mod.copy_layout(cfg["catalog"])
    counts = cat_mod.write_part(patch, layout, range(2, 5), tmp_path / "o.parquet",
                                tmp_path / "s.parquet", IdLayout(PrepareSpec.of(cfg)))
    assert counts == {"copies": 3, "objects": 3 * 6000, "sources": 3 * patch.sources.num_rows}
    o = pq.read_table(tmp_path / "o.parquet")
    assert o.schema.equals(patch.objects.schema)
    assert pq.ParquetFile(tmp_path / "o.parquet").num_row_groups == 3
    expect = pa.concat_tables([cat_mod.duplicate(patch, layout, c, IdLayout(PrepareSpec.of(cfg)))[0] for c in range(2, 5)])
    assert o.equals(expect)


def test_part_copies_cover_every_copy_once():
    c = make_cfg(max_objects_per_part=6000 * 4)
    parts = cat_mod.part_copies(c["catalog"])
    flat = [k for r in parts for k in r]
    assert flat == list(range(cat_mod.n_copies(c["catalog"])))
    assert all(len(r) <= 4 for r in parts) and len(parts) == math.ceil(27 / 4)
