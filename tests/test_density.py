"""The galactic density model (catalog.density): its coordinates, its counts for named fields
against survey figures, its contrast, and a galactic catalog through the catalog, partition
and index-only paths (ids unique, Sources with their Object, the same bytes)."""

import copy
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from catbench.core.sky import copies as lay
from catbench.core.infra.config import load, validate
from catbench.prepare import catalog as cat_mod
from catbench.prepare.chunker import Chunker
from catbench.prepare.ids import IdLayout
from catbench.prepare.spec import CatalogSpec, PrepareSpec

from support.catalog import build_catalog, chunk_files, read_tsv, run_partition

REPO = Path(__file__).resolve().parent.parent
FACTOR = 2.0   # a model figure agrees with a survey's when within this factor of it


@pytest.fixture(scope="module")
def model():
    return validate({"run": "t", "seed": 1, "catalog": {"density": {"model": "galactic"}},
                     "partition": {}})["catalog"]["density"]


def test_galactic_coordinates_of_known_points():
    ra, dec = lay.to_equatorial(np.array([0.0, 0.0, 32.93]), np.array([0.0, 90.0, 0.0]))
    assert np.allclose([ra[0], dec[0]], [266.40499, -28.93617], atol=1e-4)   # galactic centre
    assert np.allclose([ra[1], dec[1]], [192.85948, 27.12825], atol=1e-4)    # north galactic pole
    assert abs(dec[2]) < 0.01 and abs(ra[2] - 282.86) < 0.01                 # the plane's node
    rng = np.random.default_rng(0)
    r, d = rng.uniform(0, 360, 1000), np.degrees(np.arcsin(rng.uniform(-1, 1, 1000)))
    back = lay.to_equatorial(*lay.to_galactic(r, d))
    assert np.allclose(back[1], d, atol=1e-9)
    assert np.allclose((back[0] - r + 180) % 360 - 180, 0, atol=1e-8)


def test_named_fields_against_the_surveys(model):
    # Gaia DR2: ~581k sources/deg^2 at (l, b) = (-30, -4) against ~3.2k at (-100, -60): 180x
    gaia = lay.relative(-30, -4, model) / lay.relative(-100, -60, model)
    assert 180 / FACTOR <= gaia <= 180 * FACTOR, gaia
    # 2MASS: star counts 20-30x higher in the plane (|b| < 5 deg) than at |b| > 25 deg
    _, b, rho = lay.per_deg2(1.0, model)
    two_mass = rho[np.abs(b) < 5].mean() / rho[np.abs(b) > 25].mean()
    assert 20 / FACTOR <= two_mass <= 30 * FACTOR, two_mass
    # the clouds stand out of their surroundings; the bulge is the densest place
    assert lay.relative(280.5, -32.9, model) > 5 * lay.relative(280.5, -22.9, model)
    assert lay.relative(302.8, -44.3, model) > 5 * lay.relative(302.8, -54.3, model)
    assert np.argmax(rho) == np.argmax(lay.relative(*lay.per_deg2(1.0, model)[:2], model))
    assert abs(b[np.argmax(rho)]) < 1


def test_densest_over_sparsest_square_degree(model):
    _, _, rho = lay.per_deg2(1.0, model)
    assert rho.max() / rho.min() >= 100
    uniform = {**model, "model": "uniform"}
    assert np.all(lay.at_equatorial(np.arange(10.0), np.zeros(10), uniform) == 1)


def galactic_config(**catalog):
    cfg = validate({
        "run": "g", "seed": 42,
        "catalog": {"patch": {"objects": 2000}, "sources_per_object": 3,
                    "max_objects_per_part": 2000 * 4,
                    "sky": {"ra_min_deg": 275, "ra_max_deg": 295, "dec_min_deg": -3, "dec_max_deg": 3},
                    "density": {"model": "galactic"}, **catalog},
        "partition": {"index_files": 5},
    })
    return cfg


def test_layout_thins_and_thickens_and_keeps_the_mean():
    cfg = galactic_config()
    cat = cfg["catalog"]
    layout, n = cat_mod.copy_layout(cat), cat["patch"]["objects"]
    places = lay.placements(cat)
    assert (layout["keep"] < n).any() and (layout["keep"] > 0).all() and (layout["keep"] <= n).all()
    assert len(layout) > len(places)                                   # some places thickened
    # the mean density over the region is the patch's: as many objects as uniform, to rounding
    assert abs(layout["keep"].sum() - len(places) * n) <= len(places)
    # the layers of a place: the first unshifted, each later one shifted in the patch
    first = np.r_[True, (np.diff(layout["ra_start"]) != 0) | (np.diff(layout["dec_centre"]) != 0)]
    assert np.all(layout["ra_shift"][first] == 0) and np.all(layout["ra_shift"][~first] > 0)
    assert np.all(layout["ra_shift"] < 2.0) and np.all(layout["dec_shift"] < 2.0)
    # max_factor caps the layers of a place
    capped = copy.deepcopy(cat)
    capped["density"]["max_factor"] = 2
    keep = cat_mod.copy_layout(capped)
    assert len(keep) <= 2 * len(places)
    uniform = copy.deepcopy(cat)
    uniform["density"]["model"] = "uniform"
    u = cat_mod.copy_layout(uniform)
    assert len(u) == len(places) and np.all(u["keep"] == n) and not u["ra_shift"].any()


def test_thinned_and_thickened_copies_ids_unique_and_sources_follow():
    cfg = galactic_config()
    cat = cfg["catalog"]
    patch = cat_mod.generate_patch(CatalogSpec.of(cfg))
    layout, ids = cat_mod.copy_layout(cat), IdLayout(PrepareSpec.of(cfg))
    objs, srcs = zip(*(cat_mod.duplicate(patch, layout, c, ids) for c in range(len(layout))))
    o, s = pa.concat_tables(objs), pa.concat_tables(srcs)
    assert [t.num_rows for t in objs] == layout["keep"].tolist()
    oid, sid = o["objectId"].to_numpy(), s["sourceId"].to_numpy()
    assert len(np.unique(oid)) == len(oid) and len(np.unique(sid)) == len(sid)
    # every Source's Object is in the catalog (a thinned Object's Sources are gone) and near it
    at = {int(k): i for i, k in enumerate(oid)}
    owner = np.array([at[int(k)] for k in s["objectId"].to_numpy()])
    dra = (s["ra"].to_numpy() - o["ra_PS"].to_numpy()[owner] + 180) % 360 - 180
    ddec = s["decl"].to_numpy() - o["decl_PS"].to_numpy()[owner]
    assert np.max(np.abs(ddec)) * 3600 < 10 and np.max(np.abs(dra)) * 3600 < 20
    # each kept Object keeps all its patch Sources
    per_obj = np.bincount(owner, minlength=len(oid))
    p_local = patch.objects["objectId"].to_numpy()                  # 1..n, permuted
    p_counts = np.bincount(patch.sources["objectId"].to_numpy(), minlength=len(p_local) + 1)[p_local]
    expect = np.concatenate([p_counts[:k] for k in layout["keep"]])
    assert np.array_equal(per_obj, expect)
    # deterministic
    again = cat_mod.duplicate(cat_mod.generate_patch(CatalogSpec.of(cfg)), layout, len(layout) - 1, ids)
    assert again[0].equals(objs[-1]) and again[1].equals(srcs[-1])


def test_uniform_patch_unchanged_by_the_density_keys():
    cfg = galactic_config()
    cat = copy.deepcopy(cfg["catalog"])
    cat["density"]["model"] = "uniform"
    a = cat_mod.generate_patch(CatalogSpec.of({**cfg, "catalog": cat, "seed": 3}))
    cat["density"]["disc_peak"] = 1.0   # a galactic parameter: no effect on uniform
    b = cat_mod.generate_patch(CatalogSpec.of({**cfg, "catalog": cat, "seed": 3}))
    assert a.objects.equals(b.objects) and a.sources.equals(b.sources)
    cat["density"]["model"] = "galactic"   # the same objects, in another row order
    g = cat_mod.generate_patch(CatalogSpec.of({**cfg, "catalog": cat, "seed": 3}))
    assert sorted(g.objects["ra_PS"].to_numpy()) == sorted(a.objects["ra_PS"].to_numpy())
    assert g.sources.drop_columns(["ra", "decl"]).equals(a.sources.drop_columns(["ra", "decl"]))


@pytest.fixture(scope="module")
def galactic_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("galactic")
    cfg = galactic_config()
    parts = build_catalog(cfg, root / "catalog")
    assert len(parts) >= 3
    run_partition(cfg, parts, root, 3)
    objects = pa.concat_tables([pq.read_table(o) for o, _ in parts])
    sources = pa.concat_tables([pq.read_table(s) for _, s in parts])
    return {"cfg": cfg, "root": root, "parts": parts, "objects": objects, "sources": sources}


def test_galactic_chunks_hold_the_catalog_rows_and_sources_follow(galactic_run):
    root, objs, srcs = galactic_run["root"], galactic_run["objects"], galactic_run["sources"]
    for table, whole in (("Object", objs), ("Source", srcs)):
        got = pa.concat_tables([pq.read_table(p) for _, p in sorted(chunk_files(root, table, "main").items())])
        key = "objectId" if table == "Object" else "sourceId"
        order = np.argsort(got[key].to_numpy())
        want = whole.take(np.argsort(whole[key].to_numpy()))
        assert got.drop_columns(["chunkId", "subChunkId"]).take(order).equals(want)   # every column
    loc = {}
    for _, p in chunk_files(root, "Object", "main").items():
        t = pq.read_table(p, columns=["objectId", "chunkId", "subChunkId"])
        loc.update(zip(t["objectId"].to_numpy().tolist(),
                       zip(t["chunkId"].to_numpy().tolist(), t["subChunkId"].to_numpy().tolist())))
    for _, p in chunk_files(root, "Source", "main").items():
        t = pq.read_table(p, columns=["objectId", "chunkId", "subChunkId"])
        for o, c, s in zip(*(t[k].to_numpy().tolist() for k in ("objectId", "chunkId", "subChunkId"))):
            assert loc[o] == (c, s)


def test_galactic_tsv_parses_back_to_the_parquet_values(galactic_run):
    root, n = galactic_run["root"], 0
    for table, kind in (("Object", "main"), ("Object", "overlap"), ("Source", "main")):
        tsv = chunk_files(root, table, kind, "tsv")
        for cid, p in chunk_files(root, table, kind).items():
            t = pq.read_table(p)
            if t.num_rows:
                assert read_tsv(tsv[cid], t.schema).equals(t), f"{tsv[cid]} differs from {p}"
                n += 1
    assert n > 20


def test_galactic_chunks_without_text_or_patch_are_the_same(galactic_run, tmp_path):
    cfg, parts, root = galactic_run["cfg"], galactic_run["parts"], galactic_run["root"]
    run_partition(cfg, parts, tmp_path, 2, text=False, patch=False)
    for table in ("Object", "Source"):
        for cid, p in chunk_files(root, table, "main", "tsv").items():
            assert (tmp_path / "chunks" / table / p.name).read_bytes() == p.read_bytes()


def test_default_run_crosses_the_plane_with_skewed_chunks():
    """config/config.yaml: chunk objects max / median >= 10 at the rows of the uniform band
    of the same size (148k objects)."""
    cfg = load(REPO / "config/config.yaml")
    cat = cfg["catalog"]
    assert cat["density"]["model"] == "galactic"
    counts = chunk_objects(cfg)
    assert counts.max() / np.median(counts) >= 10
    assert 120_000 <= counts.sum() <= 180_000


def chunk_objects(cfg) -> np.ndarray:
    """Objects per chunk of a catalog, from its layout and patch positions."""
    cat, p = cfg["catalog"], cfg["partition"]
    patch = cat_mod.generate_patch(CatalogSpec.of(cfg)).objects
    ra, dec = patch["ra_PS"].to_numpy(), patch["decl_PS"].to_numpy()
    chunker, found = Chunker(p["num_stripes"], p["num_sub_stripes_per_stripe"]), []
    for row in cat_mod.copy_layout(cat):
        k = row["keep"]
        l_ra, l_dec = cat_mod.layer(ra[:k], dec[:k], row["ra_shift"], row["dec_shift"],
                                    row["width"], row["height"])
        found.append(chunker.locate(*cat_mod._move(l_ra, l_dec, row["dec_centre"], row["ra_start"]), "t")[0])
    return np.unique(np.concatenate(found), return_counts=True)[1]


@pytest.mark.parametrize("limit", [1e6, 5e6, 1e7, 3e7, 1e9])
def test_map_batches_balanced_by_rows_on_a_crowded_sky(limit):
    # the bench sky: 13 uneven galactic parts where uniform has 12 equal ones
    cfg = load(REPO / "config" / "bench.yaml")
    cfg["partition"]["max_rows_per_map"] = limit
    cat = cfg["catalog"]
    keep = lay.copy_layout(cat)["keep"]
    rows = [int(keep[c.start:c.stop].sum()) * (1 + cat["sources_per_object"]) for c in lay.part_copies(cat)]
    batches = lay.map_batches(cfg)
    assert [p for b in batches for p in b] == list(range(len(rows)))  # every part once, in order
    assert all(len(b) == 1 or sum(rows[b.start:b.stop]) <= limit for b in batches)
    # the fewest jobs (each a process start-up; on 2 cores a third job costs wall time):
    # no two neighbouring batches fit in one
    assert all(sum(rows[a.start:b.stop]) > limit for a, b in zip(batches, batches[1:]))
    uniform = copy.deepcopy(cfg)
    uniform["catalog"]["density"]["model"] = "uniform"
    if limit == 3e7:  # the bench's setting: as many jobs as the uniform sky of the same rows
        assert len(batches) == len(lay.map_batches(uniform)) == 2


def _survey_patch(partition: dict, objects: int = 150_000) -> dict:
    """A survey-like patch (150k objects on 1 deg², Rubin DP1's density) copied twice."""
    return validate({"run": "t", "seed": 1, "partition": partition, "catalog": {
        "patch": {"objects": objects, "ra_width_deg": 1.0, "dec_height_deg": 1.0},
        "sky": {"ra_min_deg": 0.0, "ra_max_deg": 2.2, "dec_min_deg": -0.6, "dec_max_deg": 0.6}}})


def test_auto_stripes_bound_the_objects_a_chunk_and_a_sub_chunk_hold():
    auto = {"num_stripes": "auto", "num_sub_stripes_per_stripe": "auto", "auto_chunk_rows": 10_000,
            "auto_sub_chunk_rows": 1_000}
    dense, sparse = _survey_patch(auto)["partition"], _survey_patch(auto, objects=1_500)["partition"]
    # the denser the catalog, the more stripes; numbers from then on (every job reads them)
    assert dense["num_stripes"] > 5 * sparse["num_stripes"] > 0   # 100x the density: ~10x the stripes
    assert isinstance(dense["num_sub_stripes_per_stripe"], int)
    # the real chunker, over the densest place: no chunk or sub-chunk over the bounds
    rng = np.random.default_rng(3)
    ra, dec = rng.uniform(0.0, 1.0, 150_000), rng.uniform(-0.5, 0.5, 150_000)
    chunk, sub = Chunker(dense["num_stripes"], dense["num_sub_stripes_per_stripe"]).locate(ra, dec)[:2]
    assert np.unique(chunk, return_counts=True)[1].max() <= 10_000 * 1.1    # the sample's noise
    cells = np.unique(np.stack([chunk, sub]), axis=1, return_counts=True)[1]
    assert cells.max() <= 1_000 * 1.2
    # numbers given stay as given; the overlap still fits in a sub-stripe
    assert _survey_patch({})["partition"]["num_stripes"] == 85
    tight = _survey_patch({**auto, "overlap_deg": 0.05, "auto_sub_chunk_rows": 10})["partition"]
    assert 180 / (tight["num_stripes"] * tight["num_sub_stripes_per_stripe"]) >= 0.05
