"""Object ids: how the catalog's objectIds lie in the key space (``catalog.id_layout``),
the one thing that decides how a B-tree load of the secondary index behaves (ids.md).

Every Object is named by its patch-local id (1..n, a permutation of the patch rows) and its
copy; a layout maps that pair (and, for ``spatial``, the object's chunk and sub-chunk) to a
positive int64, unique by construction:

- ``interleaved``: ``local * 2^20 + copy``: every copy's row lands beside the earlier
  copies' rows of the same patch object (a copy inserts at ``patch.objects`` places).
- ``random``: a seeded bijection of the dense number ``(local - 1) * copies + copy`` on
  k bits (``2^k`` >= the catalog's objects): ids spread uniformly over [1, 2^k], every
  file a random sample of the key space (hashed ids).
- ``spatial``: ``(chunkId * M + subChunkId) << b | (dense + 1)``: ids increase with the
  sky cell (M: the chunker's largest sub-chunks per chunk), so a chunk's keys are one
  range of the key space, as with Gaia's HEALPix-prefixed or LSST's tract/patch ids.
- ``source`` (a patch from the user's file, catalog.patch.file): ``own + copy << b``, b the
  bits of the file's largest id: copy 0 keeps the file's ids, each copy is the file's id
  structure shifted to its own range of the key space.

Both the catalog stage and the index-only path name objects here, so their index input is
the same, byte for byte. Per row: interleaved one multiply-add; random three rounds of an
odd multiply, a mask and a xor-shift on uint64; spatial two multiply-adds and a shift.
"""

from __future__ import annotations

import numpy as np

from ..core.sky.copies import COPY_STRIDE, MAX_COPIES, n_copies
from ..core.sky.geometry import Geometry
from .chunker import Chunker
from .spec import PrepareSpec

INT63 = 63
_ROUNDS = 3


class IdLayout:
    """objectIds of ``catalog.id_layout`` for the catalog the spec describes (its seed and
    copies; spatial also the chunker's ``partition.num_stripes`` and sub-stripes)."""

    def __init__(self, spec: PrepareSpec, own: np.ndarray | None = None):
        """``own``: the patch file's ids by local id - 1 (``source`` only)."""
        cat = spec.catalog
        self.kind = cat.id_layout
        if self.kind not in LAYOUTS:
            raise ValueError(f"config key 'catalog.id_layout': {self.kind!r} is not one of {sorted(LAYOUTS)}")
        self.copies = n_copies(cat.section)
        if self.copies > MAX_COPIES:
            raise ValueError(f"{self.copies} copies exceed the ids' {MAX_COPIES}; make the patch larger")
        self.n = cat.patch.objects * self.copies   # the dense numbers 0..n-1
        self.needs_location = self.kind == "spatial"
        self.bits = max(16, (self.n - 1).bit_length())
        self.mask = np.uint64((1 << self.bits) - 1)
        rng = np.random.default_rng([cat.seed, 27])
        self.mult = [np.uint64(int(m) | 1) for m in rng.integers(1 << 32, 1 << 62, _ROUNDS)]
        self.shift = np.uint64(max(1, self.bits // 2))
        if self.needs_location:
            self._spatial_budget(spec.partition.geometry)
        if self.kind == "source":
            if own is None or not len(own):
                raise ValueError("config key 'catalog.id_layout': source keeps the ids of catalog.patch.file, "
                                 "which gives none")
            self.own = np.asarray(own, np.int64)
            self.low, problem = source_bits(int(self.own.max()), self.copies)
            if problem:
                raise ValueError(problem)

    def _spatial_budget(self, geo: Geometry):
        ch = self.chunker = Chunker(geo.num_stripes, geo.num_sub_stripes_per_stripe)
        # a chunk's subChunkIds: its sub-stripes × the most sub-chunks of one (chunker.py)
        self.cells = int(ch.max_sub_chunks) * geo.num_sub_stripes_per_stripe
        max_chunk = (geo.num_stripes - 1) * 2 * geo.num_stripes + int(ch.chunks_per_stripe.max())
        self.low = self.n.bit_length()                       # dense + 1 <= n
        need = (max_chunk * self.cells + self.cells).bit_length() + self.low
        if need > INT63:
            raise ValueError(
                f"config key 'catalog.id_layout': spatial ids need {need} bits ({self.low} for "
                f"{self.n} objects, the rest for chunk and sub-chunk at partition.num_stripes "
                f"{geo.num_stripes}), over int64's 63; use fewer stripes or objects")

    def locate(self, ra, dec, where: str):
        """(chunkId, subChunkId) of moved positions, as the partition stage finds them;
        (None, None) when the layout does not need them."""
        return self.chunker.locate(ra, dec, where) if self.needs_location else (None, None)

    def dense(self, local: np.ndarray, copy: int) -> np.ndarray:
        """``(local - 1) * copies + copy``: 0..n-1, one per Object of the catalog."""
        return (np.asarray(local, np.int64) - 1) * self.copies + copy

    def ids(self, local: np.ndarray, copy: int, chunk=None, sub=None) -> np.ndarray:
        """objectIds (int64) of patch-local ids ``local`` in copy ``copy`` (``spatial``:
        at chunks ``chunk`` and sub-chunks ``sub``)."""
        if copy >= MAX_COPIES:
            raise ValueError(f"copy {copy} exceeds the id scheme's {MAX_COPIES} copies")
        return LAYOUTS[self.kind](self, np.asarray(local, np.int64), copy, chunk, sub)

    def mix(self, x: np.ndarray) -> np.ndarray:
        """A bijection of [0, 2^bits): odd multiplies and xor-shifts, each one mod 2^bits."""
        x = x.astype(np.uint64)
        for m in self.mult:
            x *= m          # wraps mod 2^64, so mod 2^bits after the mask
            x &= self.mask
            x ^= x >> self.shift
        return x.view(np.int64)


def source_bits(own_max: int, copies: int) -> tuple[int, str]:
    """The bits b of ``source`` ids (``own + copy << b``) and, when the last copy's ids
    would be over BIGINT's 2^63-1, why (else "")."""
    low = max(1, own_max.bit_length())
    top = ((copies - 1) << low) | own_max
    if top <= 2**63 - 1:
        return low, ""
    return low, (f"config key 'catalog.id_layout': source ids are the file's id + copy x 2^{low} (its largest id "
                 f"{own_max} has {low} bits), so {copies} copies reach {top}, over BIGINT's 2^63-1; keep at "
                 f"most {((2**63 - 1 - own_max) >> low) + 1} copies (a smaller catalog.sky) or use another id_layout")


def _source(ids: IdLayout, local, copy, chunk, sub):
    return ids.own[local - 1] + (np.int64(copy) << np.int64(ids.low))


def _interleaved(ids: IdLayout, local, copy, chunk, sub):
    return local * COPY_STRIDE + copy


def _random(ids: IdLayout, local, copy, chunk, sub):
    return ids.mix(ids.dense(local, copy)) + 1


def _spatial(ids: IdLayout, local, copy, chunk, sub):
    if chunk is None or sub is None:
        raise ValueError("spatial ids need each object's chunk and sub-chunk")
    cell = np.asarray(chunk, np.int64) * ids.cells + np.asarray(sub, np.int64)
    return (cell << ids.low) | (ids.dense(local, copy) + 1)


LAYOUTS = {"interleaved": _interleaved, "random": _random, "spatial": _spatial, "source": _source}
