"""The TSV text of catalog rows, chunk rows and index rows: ``LOAD DATA INFILE``-ready lines
(tab-separated, no header, ``\\N`` for NULL, every number in its shortest round-trip
form, formatted by polars as its CSV writer does: the bytes catbench's TSV always had),
assembled in Arrow.

Formatting numbers is what a TSV writer spends its time on (100-130 ns a float). A
catalog part is made of whole copies of the base patch, and a copy changes only its
leading columns (ids and position, ``catalog.VARYING``): every later column of a part's
row r is the patch's row r % patch rows, value for value (a thinned copy, core/sky/density.md,
holds the patch's first rows: ``patch_rows``). So the catalog stage formats
each value once: ``catalog_patch`` writes the text of every patch row's shared columns
(a *shared* text file), ``catalog_part`` the text of every row's varying columns (a
*varying* text file, one batch per copy). A chunk row's line is then

    varying[r] \\t shared[r % patch rows] \\t chunkId \\t subChunkId \\n

glued by the reduce from bytes already made, as sph-partition copies its input lines;
it formats only chunk and sub-chunk ids (each pair once a batch). A part without a varying text
file has its varying columns formatted by the reduce (``PartText.lines(table=...)``), and
without any text files every column of a row is formatted (``formatted``): the same
bytes, slower. See partition.md.

Text files are Arrow IPC files (uncompressed, memory-mapped when read) of one
large_string column ``text``; their schema metadata says ``{"varying": k, "rows": n}``
(k leading columns vary, the patch has n rows), and the reduce checks both files agree.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from ..core.infra.addrspace import polars
from ..core.infra.files import atomic_path
from .arrays import arrow, call, cast, distinct, take

NULL = "\\N"
# text values as LOAD DATA's default ESCAPED BY '\\' reads them back (a value "\\N" stays text)
ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\0": "\\0"}
TEXT = pa.large_string()
META = b"catbench.text"
# A catalog part's Parquet metadata when a copy is thinned (catalog._copy_sizes): the
# rows of each copy, a JSON list. Without it every copy holds the whole patch.
COPY_ROWS = b"catbench.copy_rows"


def copy_rows(parquet_file) -> list[int] | None:
    """The rows of each copy of a catalog part (a ``pq.ParquetFile``; its file metadata's
    COPY_ROWS), None: whole copies."""
    meta = parquet_file.metadata.metadata or {}
    return json.loads(meta[COPY_ROWS]) if COPY_ROWS in meta else None


def patch_rows(rows: np.ndarray, n: int, sizes: list[int] | None) -> np.ndarray:
    """The patch row of each of a part's rows ``rows``: a copy's row k holds the patch's
    row k (a thinned copy its first rows). Whole copies of ``n`` rows when ``sizes`` is
    None, else copies of ``sizes`` rows."""
    if sizes is None:
        return rows % n
    starts = np.r_[0, np.cumsum(sizes)]
    return rows - starts[np.searchsorted(starts, rows, side="right") - 1]


def repeat(text: str, n: int) -> pa.Array:
    """``text`` n times, as an array (pyarrow scalars would import pandas)."""
    b = text.encode()
    offsets = np.arange(n + 1, dtype=np.int64) * len(b)
    return pa.Array.from_buffers(TEXT, n, [None, pa.py_buffer(offsets), pa.py_buffer(b * n)])


def column_text(col) -> pa.Array:
    """One column as text (Arrow's cast; used for integers, whose text is the same as
    polars'), ``\\N`` for NULL."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    text = cast(cast(col, pa.int8()) if pa.types.is_boolean(col.type) else col, TEXT)   # BOOLEAN: 1/0
    if text.null_count:
        text = call("coalesce", text, repeat(NULL, len(text)))
    return text


def join(pieces: list[pa.Array], sep: str = "\t") -> pa.Array:
    """Row-wise concatenation of text arrays with ``sep`` between pieces."""
    if len(pieces) == 1:
        return pieces[0]
    return call("binary_join_element_wise", *pieces, repeat(sep, len(pieces[0])))


def column_texts(table: pa.Table, columns: range) -> list[pa.Array]:
    """The text of each of ``columns`` (indices) of every row of ``table``. Floats are
    formatted by polars (48 ns a float64, Arrow's cast 124 ns; the same text as polars'
    CSV writer), imported here: a job that only glues text never pays its 0.23 s. Column
    by column: polars' ``concat_str`` costs as much again as the formatting (Arrow joins,
    or the reduce's gather places the tabs)."""
    pl = polars()

    df = pl.from_arrow(table.select([table.column_names[k] for k in columns]), rechunk=False)
    texts = []
    for name in df.columns:
        col = df.get_column(name)
        if col.dtype == pl.Boolean:   # MySQL's BOOLEAN (TINYINT) reads 1/0, not true/false
            col = col.cast(pl.Int8)
        elif col.dtype == pl.String:  # LOAD DATA's escapes: a tab, a newline, a backslash are data
            col = col.str.replace_many(list(ESCAPES), list(ESCAPES.values()))
        text = col.cast(pl.String).fill_null(NULL).to_arrow()
        if isinstance(text, pa.ChunkedArray):
            text = text.combine_chunks()
        texts.append(text if text.type == TEXT else cast(text, TEXT))
    return texts


def text_of(table: pa.Table, columns: range) -> pa.Array:
    """The tab-joined text of ``columns`` (indices) of every row of ``table``."""
    return join(column_texts(table, columns))


def id_table(values: np.ndarray, end: str = "", start: str = "") -> tuple[pa.Array, np.ndarray]:
    """Text of each id in the range of ``values`` (between ``start`` and ``end``), and each
    value's index into it: chunk and sub-chunk ids are formatted once each."""
    values = np.asarray(values, np.int64)
    lo, hi = (int(values.min()), int(values.max())) if len(values) else (0, -1)
    ids = distinct(values) if hi - lo >= 1 << 20 else np.arange(lo, hi + 1)
    text = join([repeat(start, len(ids)), column_text(arrow(ids)), repeat(end, len(ids))], "")
    return text, (np.searchsorted(ids, values) if hi - lo >= 1 << 20 else values - lo)


class Lines:
    """Chunk-file lines as one text array holding ``stride`` consecutive pieces per row
    (the bytes of rows [a, b) are one contiguous slice of its buffer)."""

    def __init__(self, text: pa.Array, stride: int):
        self.text, self.stride = text, stride

    def slices(self, bounds) -> list[memoryview]:
        """The bytes of rows [a, b) for each (a, b) of ``bounds``."""
        text, k = self.text, self.stride
        offsets = np.frombuffer(text.buffers()[1], np.int64, len(text) + 1, text.offset * 8)
        data = memoryview(text.buffers()[2]) if len(text) else memoryview(b"")
        return [data[offsets[a * k]:offsets[b * k]] for a, b in bounds]


DENSE_SLOTS = 1 << 20  # (chunk, sub-chunk) slots of location_text's tables: 16 MB


def location_text(chunk_id, sub_id) -> tuple[pa.Array, np.ndarray]:
    """``\\tchunkId\\tsubChunkId\\n`` of each (chunk, sub-chunk) pair the rows use (text
    made once per pair), and each row's index into it. Rows come in runs of a chunk, so
    the distinct chunks are few and found without sorting the rows."""
    chunk_id, sub_id = np.asarray(chunk_id, np.int64), np.asarray(sub_id, np.int64)
    if not len(chunk_id):
        return repeat("", 0), np.zeros(0, np.int64)
    starts = np.flatnonzero(np.r_[True, chunk_id[1:] != chunk_id[:-1]])
    chunks = distinct(chunk_id[starts])
    width = int(sub_id.max()) + 1
    key = np.searchsorted(chunks, chunk_id) * width + sub_id
    if len(chunks) * width <= DENSE_SLOTS:  # every pair's slot: no sort of the rows
        used = np.flatnonzero(np.bincount(key, minlength=len(chunks) * width))
        slot = np.empty(len(chunks) * width, np.int64)
        slot[used] = np.arange(len(used))
        index = slot[key]
    else:
        used, index = np.unique(key, return_inverse=True)
    text = join([repeat("\t", len(used)), column_text(arrow(chunks[used // width])),
                 repeat("\t", len(used)), column_text(arrow(used % width)),
                 repeat("\n", len(used))], "")
    return text, index


TAB = (repeat("\t", 1), 0)  # a located() piece: a tab between two others


def tabbed(pieces: list) -> list:
    """``pieces`` with a tab piece between each two."""
    return [q for k, piece in enumerate(pieces) for q in ((TAB, piece) if k else (piece,))]


class ChunkLines:
    """Full chunk-file lines of rows: ``piece[index]`` of every (array, index) of
    ``pieces`` (a piece's text may be a list of arrays, taken as their concatenation), as
    they are (a piece after the first begins with its tab: ``tabbed``, or text made with
    one), then ``\\tchunkId\\tsubChunkId\\n``. The pieces' text is pooled
    once; ``lines(a, b)`` gathers rows [a, b) from it (one take), so lines can be made a
    batch at a time without copying the pool again. Three pieces a row instead of seven
    (tabs and ids each a piece) took 0.57x the time of the gather."""

    def __init__(self, pieces: list[tuple[pa.Array, np.ndarray]], chunk_id, sub_id):
        pieces = [(text if isinstance(text, list) else [text], rows)
                  for text, rows in [*pieces, location_text(chunk_id, sub_id)]]
        self.pool = pa.concat_arrays([t for texts, _ in pieces for t in texts])
        self.index = np.empty((len(chunk_id), len(pieces)), np.int64)
        start = 0
        for k, (texts, rows) in enumerate(pieces):
            self.index[:, k] = start + rows
            start += sum(len(t) for t in texts)

    def lines(self, a: int = 0, b: int | None = None) -> Lines:
        return Lines(take(self.pool, self.index[a:b].ravel()), self.index.shape[1])


def located(pieces: list[tuple[pa.Array, np.ndarray]], chunk_id, sub_id) -> Lines:
    """Full chunk-file lines of every row at once (``ChunkLines``)."""
    return ChunkLines(pieces, chunk_id, sub_id).lines()


def formatted(table: pa.Table, chunk_id, sub_id) -> Lines:
    """Chunk-file lines of ``table``'s rows, every value formatted here."""
    return located([(text_of(table, range(table.num_columns)), np.arange(table.num_rows))],
                   chunk_id, sub_id)


# -- text files -------------------------------------------------------------------------

class TextWriter:
    """A text file written batch by batch (one batch per copy); atomic."""

    def __init__(self, path, varying: int, rows: int):
        self.path = path
        self.schema = pa.schema([("text", TEXT)], metadata={
            META: json.dumps({"varying": varying, "rows": rows}).encode()})

    def __enter__(self):
        self._atomic = atomic_path(self.path)
        tmp = self._atomic.__enter__()
        self._writer = pa.ipc.new_file(str(tmp), self.schema)
        return self

    def write(self, text: pa.Array):
        self._writer.write_batch(pa.RecordBatch.from_arrays([text], schema=self.schema))

    def __exit__(self, *exc):
        self._writer.close()
        return self._atomic.__exit__(*exc)


def read_text(path) -> tuple[list[pa.Array], dict]:
    """The batches of a text file (zero-copy, memory-mapped) and its metadata."""
    reader = pa.ipc.open_file(pa.memory_map(str(path)))
    meta = json.loads(reader.schema.metadata[META])
    return [reader.get_batch(i).column(0) for i in range(reader.num_record_batches)], meta


class PartText:
    """The chunk-file lines of rows of one catalog part: its varying columns' text glued
    to the patch's shared text. The varying text is read from the part's text file when
    the catalog stage wrote one (``varying_path``), else formatted here from the rows'
    varying columns (``lines(table=...)``): see catalog.PART_TEXT."""

    def __init__(self, shared_path, rows: int, varying_path=None, sizes: list[int] | None = None):
        shared, self.meta = read_text(shared_path)
        self.shared = pa.concat_arrays(shared) if len(shared) != 1 else shared[0]
        self.sizes_of_copies = sizes    # rows of each copy (copy_rows), None: whole copies
        whole = sizes is None and rows % max(len(self.shared), 1) == 0
        fits = sizes is not None and sum(sizes) == rows and max(sizes, default=0) <= len(self.shared)
        if len(self.shared) != self.meta["rows"] or not (whole or fits):
            raise ValueError(f"{shared_path} ({self.meta}, {len(self.shared)} rows) does not "
                             f"describe the patch of a catalog part of {rows} rows: re-run "
                             f"the catalog stage")
        # With its leading tab (made once: the patch's rows, not the part's).
        self.tabbed = join([repeat("\t", len(self.shared)), self.shared], "")
        self.varying = self.meta["varying"]
        self.batches = None
        if varying_path is None:
            return
        self.batches, meta = read_text(varying_path)
        if meta != self.meta:
            raise ValueError(f"{varying_path} ({meta}) and {shared_path} ({self.meta}) do "
                             f"not describe the same patch: re-run the catalog stage")
        self.sizes = np.array([len(b) for b in self.batches], np.int64)
        self.starts = np.r_[0, np.cumsum(self.sizes)]
        if self.starts[-1] != rows:
            raise ValueError(f"{varying_path} holds the text of {self.starts[-1]} rows but its "
                             f"catalog part has {rows}: re-run the catalog stage")

    def lines(self, rows: np.ndarray, chunk_id, sub_id, table: pa.Table | None = None) -> Lines:
        """Lines of the part's rows ``rows`` (``table``: those rows' varying columns, when
        there is no varying text file)."""
        if self.batches is None:  # each column a piece: the gather places the tabs
            own = np.arange(len(rows))
            texts = column_texts(table, range(self.varying))
            return located([*tabbed([(text, own) for text in texts]), self._shared(rows)], chunk_id, sub_id)
        return self.glue(rows, chunk_id, sub_id).lines()

    def _shared(self, rows: np.ndarray) -> tuple[pa.Array, np.ndarray]:
        return self.tabbed, patch_rows(rows, len(self.shared), self.sizes_of_copies)

    def glue(self, rows: np.ndarray, chunk_id, sub_id) -> ChunkLines:
        """The lines of the part's rows ``rows``, made from the varying text file (only the
        batches holding them are pooled), to be gathered a batch at a time."""
        batch = np.searchsorted(self.starts, rows, side="right") - 1
        needed = np.flatnonzero(np.bincount(batch, minlength=len(self.sizes)))
        base = np.zeros(len(self.sizes), np.int64)
        base[needed] = np.cumsum(np.r_[0, self.sizes[needed[:-1]]])
        own = [self.batches[i] for i in needed]   # pooled once, by ChunkLines
        return ChunkLines([(own, rows - self.starts[batch] + base[batch]), self._shared(rows)], chunk_id, sub_id)


# ---- index rows ----------------------------------------------------------------------------
# The text of index rows, ``key \t chunkId \t subChunkId \n``, in both key forms: the
# numeric objectId and the CHAR(28) key (the objectId's digits zero-padded to 28).
# Byte for byte what polars' CSV writer (and the full path's Arrow text) writes; see
# index_only.md for the measurements behind this design.
#
# Every key is formatted once, as 28 zero-padded digits (numpy, four digits a lookup), and
# every chunk and sub-chunk id once, as ``\tC`` and ``\tS\n`` (id_table).
# One Arrow array (the *pool*) holds those texts then the keys, over one byte buffer: a
# row's line is three pool entries (key, its chunk's, its sub-chunk's), and one ``take`` of
# 3 indices a row concatenates a whole batch's lines, each byte copied once. The CHAR(28)
# form takes a key's 28 digits; the numeric form the digits after its leading zeros (each
# key is two pool entries there: zeros, digits). The pool's buffers are made for ``rows``
# rows a call and reused (fresh pages cost more than the formatting), made again only when
# an id falls outside the texts.

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
