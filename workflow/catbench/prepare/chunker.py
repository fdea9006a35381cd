"""Qserv's sky partitioning (chunks, sub-chunks, overlap), vectorised with numpy.

Same geometry as Qserv ``src/partition/Chunker.cc`` and ``lsst.sphgeom.Chunker``;
see ``chunker.md`` beside this file for the algorithm and the edge-case choices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

_POLE_EPS_RAD = 4.85e-6  # ~1 arcsec: sphgeom treats latitudes this close to a pole as polar


class CoordinateError(ValueError):
    """Coordinates that cannot be placed on the sky (NaN, out of range)."""


def segments(lat_min: float, lat_max: float, width: float) -> int:
    """Number of segments of angular ``width`` that fit in a latitude band (radians)."""
    lat = max(abs(lat_min), abs(lat_max))
    if lat > 0.5 * math.pi - _POLE_EPS_RAD or width >= math.pi:
        return 1
    x = math.cos(width) - math.sin(lat) ** 2
    u = math.cos(lat) ** 2
    y = math.sqrt(abs(u * u - x * x))
    return int(math.floor(2.0 * math.pi / abs(math.atan2(y, x))))


def max_alpha(radius: float, lat: float) -> float:
    """Half-width in ra (degrees) of a box that contains every circle of ``radius``
    (degrees) centred at |latitude| <= ``lat``; 180 when the circle reaches a pole."""
    if radius == 0.0:
        return 0.0
    if abs(lat) + radius > 90.0 - 1.0 / 3600.0:
        return 180.0
    r, la = math.radians(radius), math.radians(lat)
    y = math.sin(r)
    x = math.sqrt(abs(math.cos(la - r) * math.cos(la + r)))
    return math.degrees(abs(math.atan(y / x)))


@dataclass
class Chunker:
    """``Chunker(num_stripes, num_sub_stripes_per_stripe, overlap_deg)``."""

    num_stripes: int
    num_sub_stripes: int
    overlap: float = 0.0
    # Per sub-stripe lookup tables, filled in __post_init__.
    ss_height: float = field(init=False)
    chunks_per_stripe: np.ndarray = field(init=False, repr=False)
    sub_chunks_per_chunk: np.ndarray = field(init=False, repr=False)
    sub_chunk_width: np.ndarray = field(init=False, repr=False)
    alpha: np.ndarray = field(init=False, repr=False)
    columns: np.ndarray = field(init=False, repr=False)
    max_sub_chunks: int = field(init=False)

    @classmethod
    def of(cls, geometry) -> Chunker:
        """The chunker of a partition's ``core.sky.geometry.Geometry``."""
        return cls(geometry.num_stripes, geometry.num_sub_stripes_per_stripe, geometry.overlap_deg)

    def __post_init__(self):
        if self.num_stripes < 1 or self.num_sub_stripes < 1:
            raise ValueError("num_stripes and num_sub_stripes must be >= 1")
        ns, nss = self.num_stripes, self.num_sub_stripes
        n_sub = ns * nss
        stripe_h = math.pi / ns
        sub_h = math.pi / n_sub
        nc = np.zeros(ns, dtype=np.int64)
        nsc = np.zeros(n_sub, dtype=np.int64)
        for s in range(ns):
            lat0 = s * stripe_h - 0.5 * math.pi
            lat1 = (s + 1) * stripe_h - 0.5 * math.pi
            nc[s] = segments(lat0, lat1, stripe_h)
            for t in range(nss):
                a = lat0 + t * sub_h
                nsc[s * nss + t] = segments(a, a + sub_h, sub_h) // nc[s]
        self.ss_height = 180.0 / n_sub
        if not 0.0 <= self.overlap <= self.ss_height:
            raise ValueError(
                f"overlap {self.overlap} deg must be between 0 and the sub-stripe height "
                f"{self.ss_height:.6f} deg")
        self.chunks_per_stripe = nc
        self.sub_chunks_per_chunk = nsc
        self.columns = nsc * np.repeat(nc, nss)  # sub-chunks across each sub-stripe
        self.sub_chunk_width = 360.0 / self.columns
        self.max_sub_chunks = int(nsc.max())
        lat_lo = np.arange(n_sub) * self.ss_height - 90.0
        self.alpha = np.array([max_alpha(self.overlap, max(abs(lo), abs(lo + self.ss_height)))
                               for lo in lat_lo])

    # -- ids ---------------------------------------------------------------------------
    @property
    def num_chunks(self) -> int:
        return int(self.chunks_per_stripe.sum())

    def all_chunks(self) -> np.ndarray:
        ids = [s * 2 * self.num_stripes + c
               for s in range(self.num_stripes) for c in range(self.chunks_per_stripe[s])]
        return np.array(ids, dtype=np.int64)

    def chunk_ra_centre(self, chunk_ids) -> np.ndarray:
        """Right ascension (degrees) of the centre of each chunk."""
        stripe, chunk = np.divmod(np.asarray(chunk_ids, dtype=np.int64), 2 * self.num_stripes)
        return (chunk + 0.5) * (360.0 / self.chunks_per_stripe[stripe])

    def chunk_dec_centre(self, chunk_ids) -> np.ndarray:
        """Declination (degrees) of the centre of each chunk's stripe."""
        stripe = np.asarray(chunk_ids, dtype=np.int64) // (2 * self.num_stripes)
        return -90.0 + (stripe + 0.5) * (180.0 / self.num_stripes)

    def _ids(self, ss, sc):
        """(chunkId, subChunkId) of sub-stripe ``ss`` and ra sub-chunk column ``sc``."""
        stripe = ss // self.num_sub_stripes
        nsc = self.sub_chunks_per_chunk[ss]
        chunk = sc // nsc
        chunk_id = stripe * 2 * self.num_stripes + chunk
        sub_id = (ss - stripe * self.num_sub_stripes) * self.max_sub_chunks + (sc - chunk * nsc)
        return chunk_id.astype(np.int32), sub_id.astype(np.int32)

    # -- locate ------------------------------------------------------------------------
    def sub_stripe(self, dec):
        n_sub = self.num_stripes * self.num_sub_stripes
        return np.clip(np.floor((dec + 90.0) / self.ss_height).astype(np.int64), 0, n_sub - 1)

    def _column(self, ra, ss):
        col = np.floor(ra / self.sub_chunk_width[ss]).astype(np.int64)
        return np.minimum(col, self.columns[ss] - 1)

    def locate(self, ra, dec, where: str = "input"):
        """chunkId and subChunkId (int32 arrays) of each position (degrees).

        ra = 360 wraps to 0; dec = +-90 lands in the polar sub-stripe. NaN or
        out-of-range values raise CoordinateError naming ``where`` and the first bad row.
        """
        ra, dec = check_coordinates(ra, dec, where)
        return self.locate_in(ra, self.sub_stripe(dec))

    def locate_in(self, ra, sub_stripe):
        """``locate`` of checked positions whose sub-stripes (``sub_stripe(dec)``) are
        known: the index-only path moves a patch along a band, its declinations unchanged."""
        return self._ids(sub_stripe, self._column(ra, sub_stripe))

    def overlap_locations(self, ra, dec, where: str = "input"):
        """Every (row, chunkId, subChunkId) whose sub-chunk box, widened by the overlap
        radius (dec) and alpha (ra), contains the row, excluding the row's own sub-chunk.
        Rows come out ordered by row index."""
        ra, dec = check_coordinates(ra, dec, where)
        return self._overlap(ra, dec, *self.cells(ra, dec))

    def _overlap(self, ra, dec, own_ss, own_col):
        """``overlap_locations`` of checked positions in cells (``own_ss``, ``own_col``)."""
        empty = (np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int32))
        if self.overlap == 0.0 or len(ra) == 0:
            return empty
        n_sub = self.num_stripes * self.num_sub_stripes
        lo = np.floor((dec - self.overlap + 90.0) / self.ss_height).astype(np.int64)
        hi = np.floor((dec + self.overlap + 90.0) / self.ss_height).astype(np.int64)
        rows_out, ss_out, col_out = [], [], []
        for off in (-1, 0, 1):  # overlap <= sub-stripe height: at most one neighbour each way
            if off:  # the few rows whose widened box reaches that neighbour
                ss = own_ss + off
                r = np.flatnonzero((ss >= np.maximum(lo, 0)) & (ss <= np.minimum(hi, n_sub - 1)))
                s = ss[r]
            else:  # every row's own sub-stripe
                r, s = np.arange(len(ra)), own_ss
            if not len(r):
                continue
            x, width, alpha, n = ra[r] if off else ra, self.sub_chunk_width[s], self.alpha[s], self.columns[s]
            first = np.floor((x - alpha) / width).astype(np.int64)
            count = np.floor((x + alpha) / width).astype(np.int64) - first + 1
            if not off:  # only rows whose box leaves their own cell (most do not)
                r = np.flatnonzero((count > 1) | (np.mod(first, n) != own_col))
                s, x, width, alpha, n, first, count = (a[r] for a in (s, x, width, alpha, n, first, count))
                if not len(r):
                    continue
            full = count >= n
            first = np.where(full, 0, first)
            count = np.minimum(count, n)
            mine = own_col[r] if off == 0 else None  # a row's own cell is not overlap
            for k in range(int(count.max())):
                sel = np.flatnonzero(count > k) if k else slice(None)
                col = np.mod(first[sel] + k, n[sel])
                keep = col != mine[sel] if off == 0 else slice(None)
                rows_out.append(r[sel][keep])
                ss_out.append(s[sel][keep])
                col_out.append(col[keep])
        if not rows_out:
            return empty
        r = np.concatenate(rows_out)
        order = np.argsort(r, kind="stable")
        chunk_id, sub_id = self._ids(np.concatenate(ss_out)[order], np.concatenate(col_out)[order])
        return r[order], chunk_id, sub_id

    def locate_with_overlap(self, ra, dec, where: str = "input"):
        """``locate`` and ``overlap_locations`` of the same rows, each cell found once."""
        ra, dec = check_coordinates(ra, dec, where)
        own = self.cells(ra, dec)
        return (*self._ids(*own), *self._overlap(ra, dec, *own))

    def cells(self, ra, dec):
        """(sub-stripe, ra column) of checked positions: ``locate_in``'s inputs."""
        ss = self.sub_stripe(dec)
        return ss, self._column(ra, ss)

    # -- geometry for tests and queries ------------------------------------------------
    def sub_chunk_box(self, chunk_id: int, sub_chunk_id: int):
        """(ra_min, ra_max, dec_min, dec_max) in degrees of one sub-chunk."""
        stripe, chunk = divmod(int(chunk_id), 2 * self.num_stripes)
        ss = stripe * self.num_sub_stripes + sub_chunk_id // self.max_sub_chunks
        col = chunk * self.sub_chunks_per_chunk[ss] + sub_chunk_id % self.max_sub_chunks
        w = self.sub_chunk_width[ss]
        dec0 = ss * self.ss_height - 90.0
        return col * w, (col + 1) * w, dec0, dec0 + self.ss_height


def check_coordinates(ra, dec, where: str = "input"):
    """Validated float64 copies of ra/dec; ra == 360 wraps to 0."""
    ra = np.asarray(ra, dtype=np.float64)
    dec = np.asarray(dec, dtype=np.float64)
    bad = ~((ra >= 0.0) & (ra <= 360.0) & (dec >= -90.0) & (dec <= 90.0))  # NaN fails too
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CoordinateError(
            f"{where}: row {i}: coordinates ra={float(ra[i])}, dec={float(dec[i])} are NaN or out of "
            f"range (need 0 <= ra <= 360, -90 <= dec <= 90); {int(bad.sum())} bad row(s) in "
            f"all. Fix the input catalog.")
    return np.where(ra == 360.0, 0.0, ra), dec
