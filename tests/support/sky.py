"""An overlap oracle independent of the chunker under test: built only from sub-chunk
boxes and an independent derivation of the overlap's ra half-width."""

from __future__ import annotations

import math

import lsst.sphgeom as sg
from catbench.prepare.chunker import Chunker


def alpha_formula(r: float, lat: float) -> float:
    """Independent re-derivation of the ra half-width (degrees) of the overlap."""
    if r == 0:
        return 0.0
    if lat + r > 90.0 - 1.0 / 3600.0:
        return 180.0
    rr, la = math.radians(r), math.radians(lat)
    return math.degrees(math.atan(math.sin(rr) / math.sqrt(abs(math.cos(la - rr) * math.cos(la + rr)))))


def in_ra_range(ra, lo, hi):
    """ra (in [0, 360)) in [lo, hi) on the circle; lo/hi may lie outside [0, 360]."""
    if hi - lo >= 360.0:
        return True
    return any(lo <= x < hi for x in (ra, ra - 360.0, ra + 360.0))


def brute_force_overlap(ref: sg.Chunker, ch: Chunker, ra: float, dec: float, r: float):
    """Set of (chunkId, subChunkId) whose box widened by r (dec) and alpha (ra) contains
    the point, excluding its own sub-chunk. Candidates: every sub-chunk of every chunk
    sphgeom says intersects a generous box around the point."""
    hh = 3.0 * ch.ss_height
    lat = min(abs(dec) + hh, 90.0)
    hw = 180.0 if lat > 89.0 else min(180.0, 4.0 / math.cos(math.radians(lat)))
    region = sg.Box(sg.LonLat.fromDegrees(ra, dec), sg.Angle.fromDegrees(hw),
                    sg.Angle.fromDegrees(hh))
    own = tuple(int(x[0]) for x in ch.locate([ra], [dec]))
    out = set()
    chunks = {c for c, _ in ref.getSubChunksIntersecting(region)}
    for cid in chunks:
        for sid in ref.getAllSubChunks(cid):
            ra0, ra1, d0, d1 = ch.sub_chunk_box(cid, sid)
            lat_edge = max(abs(d0), abs(d1))
            a = alpha_formula(r, lat_edge)
            if d0 - r <= dec < d1 + r and in_ra_range(ra, ra0 - a, ra1 + a):
                if (cid, sid) != own:
                    out.add((cid, sid))
    return out
