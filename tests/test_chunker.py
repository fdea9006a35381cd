"""catbench.prepare.chunker against lsst.sphgeom.Chunker (the reference implementation) and
against a brute-force overlap oracle built only from sub-chunk boxes."""

import math

import lsst.sphgeom as sg
import numpy as np
import pytest
from catbench.prepare.chunker import Chunker, CoordinateError
from support.sky import alpha_formula, brute_force_overlap

SETTINGS = [(85, 12), (18, 5), (340, 3)]


def uniform_sphere(rng, n):
    ra = rng.uniform(0.0, 360.0, n)
    dec = np.degrees(np.arcsin(rng.uniform(-1.0, 1.0, n)))
    return ra, dec


def oracle(ref: sg.Chunker, ra: float, dec: float):
    """(chunkId, subChunkId) from sphgeom for a point; None when the dilated point box
    touches more than one sub-chunk (a point within ~1 µas of an edge)."""
    hits = ref.getSubChunksIntersecting(sg.Box(sg.LonLat.fromDegrees(float(ra), float(dec))))
    if len(hits) != 1 or len(hits[0][1]) != 1:
        return None
    return int(hits[0][0]), int(hits[0][1][0])


def assert_agrees(ref, ch, ra, dec, allow_ambiguous=0):
    cid, sid = ch.locate(ra, dec)
    assert cid.dtype == np.int32 and sid.dtype == np.int32
    ambiguous, wrong = 0, []
    for i in range(len(ra)):
        o = oracle(ref, ra[i], dec[i])
        if o is None:
            ambiguous += 1
            continue
        if o != (int(cid[i]), int(sid[i])):
            wrong.append((ra[i], dec[i], o, (int(cid[i]), int(sid[i]))))
    assert not wrong, f"{len(wrong)} disagreements, e.g. {wrong[:5]}"
    assert ambiguous <= allow_ambiguous
    return cid, sid


# -- ids and counts --------------------------------------------------------------------

def test_dmtr21_setting_counts_and_known_point():
    ch = Chunker(85, 12, 1.0 / 60)
    assert ch.num_chunks == 8983
    assert ch.max_sub_chunks == 69
    cid, sid = ch.locate([273.65], [30.71])
    assert (int(cid[0]), int(sid[0])) == (9797, 11)
    ref = sg.Chunker(85, 12)
    assert sorted(ch.all_chunks().tolist()) == sorted(ref.getAllChunks())


@pytest.mark.parametrize("ns,nss", SETTINGS)
def test_chunk_list_matches_sphgeom(ns, nss):
    ch, ref = Chunker(ns, nss), sg.Chunker(ns, nss)
    assert ch.num_chunks == len(ref.getAllChunks())
    assert sorted(ch.all_chunks().tolist()) == sorted(ref.getAllChunks())


@pytest.mark.parametrize("ns,nss,n", [(85, 12, 20000), (18, 5, 5000), (340, 3, 5000)])
def test_locate_agrees_with_sphgeom_random(ns, nss, n):
    rng = np.random.default_rng(ns * 1000 + nss)
    ra, dec = uniform_sphere(rng, n)
    cid, sid = assert_agrees(sg.Chunker(ns, nss), Chunker(ns, nss), ra, dec)
    # The sample really spreads over the sky (not one chunk many times).
    assert len(np.unique(cid)) > min(n // 10, Chunker(ns, nss).num_chunks // 2)


@pytest.mark.parametrize("ns,nss", SETTINGS)
def test_locate_either_side_of_stripe_and_sub_stripe_boundaries(ns, nss):
    ref, ch = sg.Chunker(ns, nss), Chunker(ns, nss)
    h = 180.0 / (ns * nss)
    rng = np.random.default_rng(7)
    b = -90.0 + np.arange(1, ns * nss) * h
    ra_base = rng.uniform(0.0, 360.0, len(b))
    for eps in (-1e-9, 1e-9):
        cid, sid = assert_agrees(ref, ch, ra_base, b + eps)
        # Below a boundary and above it are different sub-stripes.
        if eps < 0:
            below = (cid, sid)
    above = ch.locate(ra_base, b + 1e-9)
    ss_below = below[0] // (2 * ns) * nss + below[1] // ch.max_sub_chunks
    ss_above = above[0] // (2 * ns) * nss + above[1] // ch.max_sub_chunks
    assert np.all(ss_above == ss_below + 1)


def ref_sub_chunk_box(ref: sg.Chunker, m: int, cid: int, sid: int):
    """(ra_min, ra_max, dec_min, dec_max) of a sub-chunk from sphgeom alone (dilated
    by ~1 µas): sub-chunk column = chunk * (sub-chunks in that sub-stripe) + sid % m."""
    stripe = ref.getStripe(cid)
    chunk = ref.getChunk(cid, stripe)
    t = sid // m
    nsc = sum(1 for s in ref.getAllSubChunks(cid) if s // m == t)
    box = ref.getSubChunkBoundingBox(stripe * ref.numSubStripesPerStripe + t, chunk * nsc + sid % m)
    a, b = box.getLon().getA().asDegrees(), box.getLon().getB().asDegrees()
    if b < a:    # a box across ra = 0 (dilation makes the first column's edge 359.99..)
        if chunk * nsc + sid % m == 0:
            a -= 360.0
        else:    # ... or the last column's upper edge 360 normalised to ~0
            b += 360.0
    return a, b, box.getLat().getA().asDegrees(), box.getLat().getB().asDegrees()


@pytest.mark.parametrize("ns,nss", SETTINGS)
def test_locate_either_side_of_sub_chunk_ra_boundaries(ns, nss):
    """Points 1e-9 deg either side of ra edges of sub-chunks in several sub-stripes."""
    ref, ch = sg.Chunker(ns, nss), Chunker(ns, nss)
    n_sub = ns * nss
    rng = np.random.default_rng(11)
    ras, decs = [], []
    for ss in sorted(set(rng.integers(1, n_sub - 1, 6).tolist()) | {n_sub // 2}):
        dec = -90.0 + (ss + 0.5) * ch.ss_height
        cid, sid = oracle(ref, 0.0001, dec)
        ra0, ra1, _, _ = ref_sub_chunk_box(ref, ch.max_sub_chunks, cid, sid)
        n = int(round(360.0 / (ra1 - ra0)))
        edges = np.arange(1, n) * (360.0 / n)
        edges = edges[rng.permutation(len(edges))[:80]]
        for eps in (-1e-9, 1e-9):
            ras.append(edges + eps)
            decs.append(np.full(len(edges), dec))
    assert_agrees(ref, ch, np.concatenate(ras), np.concatenate(decs))


def test_poles_are_the_polar_sub_stripe():
    for ns, nss in SETTINGS:
        ref, ch = sg.Chunker(ns, nss), Chunker(ns, nss)
        ra = np.array([0.0, 10.0, 123.4, 359.9])
        for pole in (90.0, -90.0):
            cid, sid = ch.locate(ra, np.full(4, pole))
            near = pole - math.copysign(1e-7, pole)
            for i in range(4):
                assert (int(cid[i]), int(sid[i])) == oracle(ref, ra[i], near)
        # The polar chunk: first chunk of the first / last stripe.
        assert int(ch.locate([5.0], [-90.0])[0][0]) == 0
        assert int(ch.locate([5.0], [90.0])[0][0]) == (ns - 1) * 2 * ns


def test_ra_360_wraps_to_0():
    ch = Chunker(85, 12, 1.0 / 60)
    dec = np.array([-89.5, -30.0, 0.0, 0.3, 45.0, 89.0])
    a = ch.locate(np.zeros(len(dec)), dec)
    b = ch.locate(np.full(len(dec), 360.0), dec)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    # ra just below 360 is the last sub-chunk column, not the first.
    c = ch.locate(np.full(len(dec), 360.0 - 1e-9), dec)
    assert not np.array_equal(c[1], a[1])
    # ... and 360 also wraps in the overlap computation.
    ra0 = ch.overlap_locations(np.zeros(len(dec)), dec)
    ra360 = ch.overlap_locations(np.full(len(dec), 360.0), dec)
    for x, y in zip(ra0, ra360):
        assert np.array_equal(x, y)


@pytest.mark.parametrize("ra,dec,row", [
    ([1.0, float("nan"), 3.0], [0.0, 0.0, 0.0], 1),
    ([1.0, 2.0, 3.0], [0.0, 0.0, float("nan")], 2),
    ([-0.001, 2.0], [0.0, 0.0], 0),
    ([1.0, 360.0001], [0.0, 0.0], 1),
    ([1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.0, 90.0001], 3),
    ([1.0, 2.0], [-90.5, 0.0], 0),
    ([1.0, float("inf")], [0.0, 0.0], 1),
])
def test_bad_coordinates_raise_naming_the_row(ra, dec, row):
    ch = Chunker(85, 12, 1.0 / 60)
    with pytest.raises(CoordinateError, match=rf"cat\.parquet: row {row}\b"):
        ch.locate(ra, dec, where="cat.parquet")
    with pytest.raises(CoordinateError, match=rf"cat\.parquet: row {row}\b"):
        ch.overlap_locations(ra, dec, where="cat.parquet")


def test_overlap_larger_than_sub_stripe_is_refused():
    with pytest.raises(ValueError, match="sub-stripe"):
        Chunker(85, 12, 0.2)  # sub-stripe height is 180/1020 = 0.176 deg


# -- overlap ---------------------------------------------------------------------------

@pytest.mark.parametrize("ns,nss", SETTINGS)
def test_sub_chunk_box_matches_sphgeom(ns, nss):
    ch, ref = Chunker(ns, nss), sg.Chunker(ns, nss)
    rng = np.random.default_rng(3)
    ra, dec = uniform_sphere(rng, 300)
    cid, sid = ch.locate(ra, dec)
    for c, s, x, y in zip(cid, sid, ra, dec):
        box = ch.sub_chunk_box(int(c), int(s))
        ra0, ra1, d0, d1 = box
        assert ra0 <= x < ra1 and d0 <= y < d1
        expect = ref_sub_chunk_box(ref, ch.max_sub_chunks, int(c), int(s))
        assert np.allclose(box, expect, rtol=0, atol=1e-6), (box, expect)


def test_alpha_table_follows_the_formula():
    for ns, nss, r in [(85, 12, 1.0 / 60), (18, 5, 1.5)]:
        ch = Chunker(ns, nss, r)
        lo = np.arange(ns * nss) * ch.ss_height - 90.0
        expect = [alpha_formula(r, max(abs(a), abs(a + ch.ss_height))) for a in lo]
        assert np.allclose(ch.alpha, expect, rtol=1e-12, atol=0)
        assert ch.alpha[0] == 180.0 and ch.alpha[-1] == 180.0
        assert np.all(ch.alpha >= r * (1 - 1e-12))
        # Widening grows with latitude: at 60 deg it is about r / cos(60) = 2r.
        k = int((60.0 + 90.0) / ch.ss_height)
        assert 1.9 * r < ch.alpha[k] < 2.3 * r


def edge_sample(ch: Chunker, rng, n, r):
    """Points within 2r of a sub-chunk edge (dec or ra), over the whole sky, plus a few
    near the poles and near ra = 0."""
    ra, dec = uniform_sphere(rng, n)
    cid, sid = ch.locate(ra, dec)
    ra_out, dec_out = [], []
    for k in range(n):
        ra0, ra1, d0, d1 = ch.sub_chunk_box(int(cid[k]), int(sid[k]))
        off = rng.uniform(-2 * r, 2 * r)
        if k % 3 == 0:      # near a dec edge
            d = (d0 if rng.uniform() < 0.5 else d1) + off
            x = ra[k]
        elif k % 3 == 1:    # near an ra edge
            d = dec[k]
            x = (ra0 if rng.uniform() < 0.5 else ra1) + off / max(math.cos(math.radians(d)), 0.05)
        else:               # a corner
            d = (d0 if rng.uniform() < 0.5 else d1) + off
            x = (ra0 if rng.uniform() < 0.5 else ra1) + rng.uniform(-2 * r, 2 * r)
        ra_out.append(math.fmod(x + 720.0, 360.0))
        dec_out.append(min(max(d, -90.0), 90.0))
    extra_dec = [89.99, -89.99, 90.0 - 0.6 * ch.ss_height, -90.0 + 0.9 * ch.ss_height,
                 0.0, 0.0, r / 2, -r / 2]
    extra_ra = [10.0, 200.0, 45.0, 300.0, 0.0 + r / 3, 360.0 - r / 3, 359.999, 0.001]
    return np.array(ra_out + extra_ra), np.array(dec_out + extra_dec)


@pytest.mark.parametrize("ns,nss,r,n", [(85, 12, 1.0 / 60, 900), (18, 5, 1.5, 400)])
def test_overlap_locations_equal_brute_force(ns, nss, r, n):
    ch, ref = Chunker(ns, nss, r), sg.Chunker(ns, nss)
    rng = np.random.default_rng(ns + nss)
    ra, dec = edge_sample(ch, rng, n, r)
    rows, cid, sid = ch.overlap_locations(ra, dec)
    assert rows.dtype == np.int64 and cid.dtype == np.int32 and sid.dtype == np.int32
    assert np.all(np.diff(rows) >= 0)  # ordered by row
    got = [set() for _ in ra]
    for i, c, s in zip(rows, cid, sid):
        assert (int(c), int(s)) not in got[i], "duplicate overlap location"
        got[i].add((int(c), int(s)))
    n_nonempty = 0
    for i in range(len(ra)):
        expect = brute_force_overlap(ref, ch, ra[i], dec[i], r)
        assert got[i] == expect, (ra[i], dec[i], sorted(got[i] ^ expect))
        n_nonempty += bool(expect)
    # The sample exercises the overlap: most edge points have at least one neighbour.
    assert n_nonempty > len(ra) // 2


def test_no_overlap_when_radius_is_zero():
    ch = Chunker(85, 12, 0.0)
    rows, cid, sid = ch.overlap_locations([0.0, 10.0], [0.0, 89.99])
    assert len(rows) == len(cid) == len(sid) == 0


def haversine_deg(ra1, dec1, ra2, dec2):
    ra1, dec1, ra2, dec2 = map(np.radians, (ra1, dec1, ra2, dec2))
    a = np.sin((dec2 - dec1) / 2) ** 2 + np.cos(dec1) * np.cos(dec2) * np.sin((ra2 - ra1) / 2) ** 2
    return np.degrees(2 * np.arcsin(np.sqrt(np.minimum(a, 1.0))))


def destination(ra, dec, dist, bearing):
    """Point at angular distance ``dist`` (deg) from (ra, dec) along ``bearing`` (rad)."""
    la, lo, d = np.radians(dec), np.radians(ra), np.radians(dist)
    la2 = np.arcsin(np.sin(la) * np.cos(d) + np.cos(la) * np.sin(d) * np.cos(bearing))
    lo2 = lo + np.arctan2(np.sin(bearing) * np.sin(d) * np.cos(la),
                          np.cos(d) - np.sin(la) * np.sin(la2))
    return np.mod(np.degrees(lo2), 360.0), np.degrees(la2)


@pytest.mark.parametrize("ns,nss,r", [(85, 12, 1.0 / 60), (18, 5, 1.5)])
def test_overlap_is_complete_for_close_pairs(ns, nss, r):
    """Any two points closer than r in different sub-chunks: each is in the other's
    sub-chunk overlap (what a near-neighbour query relies on)."""
    ch = Chunker(ns, nss, r)
    rng = np.random.default_rng(99)
    n = 60000
    ra_p, dec_p = uniform_sphere(rng, n)
    # Push a third of the points close to the poles, where ra widening matters most.
    polar = rng.uniform(size=n) < 0.3
    dec_p[polar] = np.sign(dec_p[polar]) * rng.uniform(85.0, 90.0, polar.sum())
    ra_q, dec_q = destination(ra_p, dec_p, rng.uniform(0.0, 0.999 * r, n),
                              rng.uniform(0.0, 2 * math.pi, n))
    d = haversine_deg(ra_p, dec_p, ra_q, dec_q)
    ok = d < r
    ra_p, dec_p, ra_q, dec_q = ra_p[ok], dec_p[ok], ra_q[ok], dec_q[ok]
    cp, sp = ch.locate(ra_p, dec_p)
    cq, sq = ch.locate(ra_q, dec_q)
    differ = (cp != cq) | (sp != sq)
    assert differ.sum() > 1000  # enough crossing pairs to mean something
    idx = np.flatnonzero(differ)
    m = len(idx)
    # overlap locations of all p then all q in one call
    rows, cid, sid = ch.overlap_locations(np.r_[ra_p[idx], ra_q[idx]],
                                          np.r_[dec_p[idx], dec_q[idx]])
    have = set(zip(rows.tolist(), cid.tolist(), sid.tolist()))
    missing = []
    for k, i in enumerate(idx):
        if (k, int(cq[i]), int(sq[i])) not in have:       # p in q's sub-chunk overlap
            missing.append(("p", ra_p[i], dec_p[i], ra_q[i], dec_q[i]))
        if (m + k, int(cp[i]), int(sp[i])) not in have:   # q in p's sub-chunk overlap
            missing.append(("q", ra_q[i], dec_q[i], ra_p[i], dec_p[i]))
    assert not missing, f"{len(missing)} missing, e.g. {missing[:3]}"
