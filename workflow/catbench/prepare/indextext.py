"""The text of index rows, ``key \\t chunkId \\t subChunkId \\n``, in both key forms: the
numeric objectId and the seed's CHAR(28) key (the objectId's digits zero-padded to 28).
Byte for byte what polars' CSV writer (and the full path's Arrow text) writes; see
index_only.md for the measurements behind this design.

Every key is formatted once, as 28 zero-padded digits (numpy, four digits a lookup), and
every chunk and sub-chunk id once, as ``\\tC`` and ``\\tS\\n`` (rowtext.id_table).
One Arrow array (the *pool*) holds the keys then those texts: a row's line is three pool
entries (key, its chunk's, its sub-chunk's), and one ``take`` of 3 indices a row
concatenates a whole batch's lines, each byte copied once. The CHAR(28) form takes a
key's 28 digits; the numeric form the digits after its leading zeros (each key is two
pool entries there: zeros, digits). The keys' buffers are made once, for ``rows`` rows a
call, and reused: fresh pages cost more than the formatting.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .arrays import arrow, call
from .rowtext import id_table

KEY_WIDTH = 28  # the seed's CHAR(28) source_id
_BLOCKS = KEY_WIDTH // 4
_LUT4 = np.frombuffer(b"".join(b"%04d" % i for i in range(10000)), np.uint32)
_POW10 = 10 ** np.arange(1, 19, dtype=np.int64)  # a key >= 10^k has more than k digits
_SUB_ROWS = 1 << 14  # digits of this many keys at a time: their temporaries stay in cache


class IndexText:
    """Lines of at most ``rows`` rows a call."""

    def __init__(self, rows: int):
        self.rows = rows
        self.digits = np.empty(rows * KEY_WIDTH, np.uint8)
        starts = KEY_WIDTH * np.arange(rows + 1, dtype=np.int64)
        self.char_offsets = starts
        self.num_offsets = np.repeat(starts, 2)[1:]  # odd entries: where a key's digits start
        self.char_keys = np.arange(rows, dtype=np.int64)
        self.num_keys = 2 * self.char_keys + 1
        self.index = np.empty((rows, 3), np.int64)
        self.tables: dict[str, tuple] = {}

    def _ids(self, values, end: str):
        """Texts ``\t<id><end>`` and each value's entry: kept between calls (made over the
        ids' whole range so far) while that range is under 2^20 ids; made per call beyond.
        Per call, at 64k rows, the tables cost 20 ns a row."""
        lo, hi = int(values.min()), int(values.max())
        have = self.tables.get(end)
        if have is None or lo < have[0] or hi > have[1]:
            lo, hi = (lo, hi) if have is None else (min(lo, have[0]), max(hi, have[1]))
            if hi - lo >= 1 << 20:
                return id_table(values, end, "\t")
            have = self.tables[end] = (lo, hi, id_table(np.array([lo, hi]), end, "\t")[0])
        return have[2], values - have[0]

    def _digits(self, keys: np.ndarray):
        """Each key's 28 zero-padded digits (an int64 has at most 19)."""
        out = self.digits[:len(keys) * KEY_WIDTH].view(np.uint32).reshape(len(keys), _BLOCKS)
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
        if keys.min() < 0:
            raise ValueError(f"objectId {keys.min()} is negative: not a key of the index input")
        self._digits(keys)
        self.num_offsets[1:2 * n:2] = self.num_offsets[2:2 * n + 1:2] - (np.searchsorted(_POW10, keys, "right") + 1)
        chunks, chunk_rows = self._ids(chunk, "")
        subs, sub_rows = self._ids(sub, "\n")
        index = self.index[:n]
        out = []
        for offsets, key_entries, entries in ((self.num_offsets, self.num_keys, 2 * n),
                                              (self.char_offsets, self.char_keys, n)):
            keys_text = pa.LargeStringArray.from_buffers(
                entries, pa.py_buffer(offsets[:entries + 1]), pa.py_buffer(self.digits))
            pool = pa.concat_arrays([keys_text, chunks, subs])
            index[:, 0] = key_entries[:n]
            index[:, 1] = chunk_rows
            index[:, 1] += entries
            index[:, 2] = sub_rows
            index[:, 2] += entries + len(chunks)
            text = call("take", pool, arrow(index.ravel()))
            end = int(np.frombuffer(text.buffers()[1], np.int64, 1, 8 * len(text))[0])
            out.append(text.buffers()[2][:end])
        return out[0], out[1]
