"""The text of index rows, ``key \\t chunkId \\t subChunkId \\n``, in both key forms: the
numeric objectId and the seed's CHAR(28) key (the objectId's digits zero-padded to 28).
Byte for byte what polars' CSV writer (and the full path's Arrow text) writes; see
index_only.md for the measurements behind this design.

Every key is formatted once, as 28 zero-padded digits (numpy, four digits a lookup);
every chunk and sub-chunk id once per worker, as ``\\tC`` and ``\\tS\\n`` in a table.
One Arrow array (the *pool*) holds the table entries then the keys, all over one byte
buffer: a row's line is then three pool entries (key, its chunk's, its sub-chunk's), and
one ``take`` of 3 indices a row concatenates a whole batch's lines, each byte copied
once. The CHAR(28) form takes a key's 28 digits; the numeric form the digits after its
leading zeros (each key is two pool entries there: zeros, digits). Buffers are made once,
for ``rows`` rows a batch, and reused: fresh pages cost more than the formatting.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .arrays import arrow, call

KEY_WIDTH = 28  # the seed's CHAR(28) source_id
_BLOCKS = KEY_WIDTH // 4
_LUT4 = np.frombuffer(b"".join(b"%04d" % i for i in range(10000)), np.uint32)
_POW10 = 10 ** np.arange(1, 19, dtype=np.int64)  # a key >= 10^k has more than k digits
_SUB_ROWS = 1 << 14  # digits of this many keys at a time: their temporaries stay in cache


def _table(texts: list[bytes]) -> tuple[bytes, np.ndarray]:
    lengths = np.fromiter(map(len, texts), np.int64, len(texts))
    return b"".join(texts), np.cumsum(lengths)


class IndexText:
    """Lines of rows with chunk ids in 0..``max_chunk`` and sub-chunk ids in 0..``max_sub``,
    at most ``rows`` rows a call."""

    def __init__(self, max_chunk: int, max_sub: int, rows: int):
        chunks, chunk_ends = _table([b"\t%d" % c for c in range(max_chunk + 1)])
        subs, sub_ends = _table([b"\t%d\n" % s for s in range(max_sub + 1)])
        self.max_chunk, self.max_sub, self.rows = max_chunk, max_sub, rows
        self.n_chunks = max_chunk + 1
        self.n_table = self.n_chunks + max_sub + 1
        self.base = len(chunks) + len(subs)  # the keys' first byte
        self.data = np.empty(self.base + rows * KEY_WIDTH, np.uint8)
        self.data[:self.base] = np.frombuffer(chunks + subs, np.uint8)
        table_offsets = np.r_[0, chunk_ends, len(chunks) + sub_ends]
        key_starts = self.base + KEY_WIDTH * np.arange(rows + 1, dtype=np.int64)
        # CHAR(28): one pool entry a key; numeric: two (zeros, digits), the split set per call
        self.char_offsets = np.r_[table_offsets, key_starts[1:]]
        self.num_offsets = np.empty(self.n_table + 1 + 2 * rows, np.int64)
        self.num_offsets[:self.n_table + 1] = table_offsets
        self.num_offsets[self.n_table + 2::2] = key_starts[1:]
        self.char_keys = self.n_table + np.arange(rows, dtype=np.int64)
        self.num_keys = self.n_table + 1 + 2 * np.arange(rows, dtype=np.int64)
        self.index = np.empty((rows, 3), np.int64)

    def _digits(self, keys: np.ndarray):
        """Each key's 28 zero-padded digits into the data buffer (int64 has at most 19)."""
        out = self.data[self.base:self.base + len(keys) * KEY_WIDTH].view(np.uint32)
        out = out.reshape(len(keys), _BLOCKS)
        out[:, :2] = _LUT4[0]
        for s in range(0, len(keys), _SUB_ROWS):
            v, o = keys[s:s + _SUB_ROWS], out[s:s + _SUB_ROWS]
            for j in range(_BLOCKS - 1, 1, -1):
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
        # an id outside its table would take another table's text: checked, not trusted
        for name, v, top in (("objectId", keys, np.iinfo(np.int64).max),
                             ("chunkId", chunk, self.max_chunk), ("subChunkId", sub, self.max_sub)):
            lo, hi = int(v.min()), int(v.max())
            if lo < 0 or hi > top:
                raise ValueError(f"{name} {lo if lo < 0 else hi} is outside 0..{top}")
        self._digits(keys)
        n_digits = np.searchsorted(_POW10, keys, side="right") + 1
        t = self.n_table
        self.num_offsets[t + 1:t + 2 * n:2] = self.num_offsets[t + 2:t + 2 * n + 1:2] - n_digits
        index = self.index[:n]
        index[:, 1] = chunk
        index[:, 2] = sub
        index[:, 2] += self.n_chunks
        out = []
        for offsets, key_entries, entries in ((self.num_offsets, self.num_keys, t + 2 * n),
                                              (self.char_offsets, self.char_keys, t + n)):
            index[:, 0] = key_entries[:n]
            pool = pa.LargeStringArray.from_buffers(
                entries, pa.py_buffer(offsets[:entries + 1]), pa.py_buffer(self.data))
            text = call("take", pool, arrow(index.ravel()))
            end = int(np.frombuffer(text.buffers()[1], np.int64, 1, 8 * len(text))[0])
            out.append(text.buffers()[2][:end])
        return out[0], out[1]
