"""The text of index rows, ``key \\t chunkId \\t subChunkId \\n``, in both key forms: the
numeric objectId and the CHAR(28) key (the objectId's digits zero-padded to 28).
Byte for byte what polars' CSV writer (and the full path's Arrow text) writes; see
index_only.md for the measurements behind this design.

Every key is formatted once, as 28 zero-padded digits (numpy, four digits a lookup), and
every chunk and sub-chunk id once, as ``\\tC`` and ``\\tS\\n`` (rowtext.id_table).
One Arrow array (the *pool*) holds those texts then the keys, over one byte buffer: a
row's line is three pool entries (key, its chunk's, its sub-chunk's), and one ``take`` of
3 indices a row concatenates a whole batch's lines, each byte copied once. The CHAR(28)
form takes a key's 28 digits; the numeric form the digits after its leading zeros (each
key is two pool entries there: zeros, digits). The pool's buffers are made for ``rows``
rows a call and reused (fresh pages cost more than the formatting), made again only when
an id falls outside the texts.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .arrays import arrow, call
from .rowtext import id_table

KEY_WIDTH = 28  # the char28 variant's CHAR(28) source_id
_BLOCKS = KEY_WIDTH // 4
_LUT4 = np.frombuffer(b"".join(b"%04d" % i for i in range(10000)), np.uint32)
_POW10 = 10 ** np.arange(1, 19, dtype=np.int64)  # a key >= 10^k has more than k digits
_SUB_ROWS = 1 << 14  # digits of this many keys at a time: their temporaries stay in cache


class IndexText:
    """Lines of at most ``rows`` rows a call."""

    def __init__(self, rows: int):
        self.rows = rows
        self.index = np.empty((rows, 3), np.int64)
        self.ranges: dict[str, tuple[int, int]] = {}  # the ids each table of texts covers
        self.texts: dict[str, pa.Array] = {}
        self.base = None  # the keys' first byte in the pool; None: lay the pool out again

    def _ids(self, values, end: str) -> np.ndarray:
        """Each value's entry in its texts ``\\t<id><end>``. The texts are kept between
        calls (made over the ids' whole range so far) while that range is under 2^20 ids,
        made per call beyond: per call, at 64k rows, they cost 20 ns a row."""
        lo, hi = int(values.min()), int(values.max())
        have = self.ranges.pop(end, None)
        if have is not None and have[0] <= lo and hi <= have[1]:
            self.ranges[end] = have
            return values - have[0]
        lo, hi = (lo, hi) if have is None else (min(lo, have[0]), max(hi, have[1]))
        self.base = None
        if hi - lo >= 1 << 20:
            self.texts[end], rows = id_table(values, end, "\t")
            return rows
        # widened both ways: a run's ids drift (dec band after band), and each miss lays
        # the pool out again (it did at every batch unwidened)
        wide = hi - lo + 1 if 3 * (hi - lo + 1) < 1 << 20 else 0
        lo, hi = lo - wide, hi + wide
        self.ranges[end] = (lo, hi)
        self.texts[end] = id_table(np.array([lo, hi]), end, "\t")[0]
        return values - lo

    def _layout(self):
        """The pool's buffers: the id texts, then room for ``rows`` keys."""
        texts = pa.concat_arrays([self.texts[""], self.texts["\n"]])
        t = self.n_texts = len(texts)
        text_offsets = np.frombuffer(texts.buffers()[1], np.int64, t + 1)
        self.base = int(text_offsets[-1])
        self.data = np.empty(self.base + self.rows * KEY_WIDTH, np.uint8)
        self.data[:self.base] = np.frombuffer(texts.buffers()[2], np.uint8, self.base)
        starts = self.base + KEY_WIDTH * np.arange(self.rows + 1, dtype=np.int64)
        self.char_offsets = np.r_[text_offsets, starts[1:]]
        self.num_offsets = np.r_[text_offsets, np.repeat(starts[1:], 2)]  # split set per call
        self.char_keys = t + np.arange(self.rows, dtype=np.int64)
        self.num_keys = t + 1 + 2 * np.arange(self.rows, dtype=np.int64)

    def _digits(self, keys: np.ndarray):
        """Each key's 28 zero-padded digits (an int64 has at most 19); blocks of four
        digits above the largest key are zeros, not computed."""
        out = self.data[self.base:self.base + len(keys) * KEY_WIDTH].view(np.uint32)
        out = out.reshape(len(keys), _BLOCKS)
        blocks = -(-len(str(int(keys.max()))) // 4)
        out[:, :_BLOCKS - blocks] = _LUT4[0]
        for s in range(0, len(keys), _SUB_ROWS):
            v, o = keys[s:s + _SUB_ROWS], out[s:s + _SUB_ROWS]
            for j in range(_BLOCKS - 1, _BLOCKS - 1 - blocks, -1):
                q = v // 10000
                o[:, j] = _LUT4[v - q * 10000]  # not v % 10000: numpy's % is 3x slower
                v = q

    def lines(self, keys, chunk, sub) -> tuple[pa.Buffer, pa.Buffer]:
        """The lines of rows (``keys``, ``chunk``, ``sub``) with numeric keys and with
        CHAR(28) keys, each as one buffer."""
        keys = np.asarray(keys, np.int64)
        n = len(keys)
        if n > self.rows:
            raise ValueError(f"{n} rows in one call; this IndexText takes at most {self.rows}")
        if n == 0:
            return pa.py_buffer(b""), pa.py_buffer(b"")
        if keys.min() < 0:
            raise ValueError(f"objectId {keys.min()} is negative: not a key of the index input")
        index = self.index[:n]
        index[:, 1] = self._ids(chunk, "")
        index[:, 2] = self._ids(sub, "\n")
        if self.base is None:
            self._layout()
        index[:, 2] += len(self.texts[""])
        self._digits(keys)
        t = self.n_texts
        self.num_offsets[t + 1:t + 2 * n:2] = self.num_offsets[t + 2:t + 2 * n + 1:2] - \
            (np.searchsorted(_POW10, keys, "right") + 1)
        out = []
        for offsets, key_entries, entries in ((self.num_offsets, self.num_keys, t + 2 * n),
                                              (self.char_offsets, self.char_keys, t + n)):
            pool = pa.LargeStringArray.from_buffers(
                entries, pa.py_buffer(offsets[:entries + 1]), pa.py_buffer(self.data))
            index[:, 0] = key_entries[:n]
            text = call("take", pool, arrow(index.ravel()))
            end = int(np.frombuffer(text.buffers()[1], np.int64, 1, 8 * len(text))[0])
            out.append(text.buffers()[2][:end])
        return out[0], out[1]
