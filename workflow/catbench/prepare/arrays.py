"""numpy <-> Arrow without pandas, and Arrow compute without ``pyarrow.compute``.

pyarrow imports pandas, when it is installed, the first time an array is made from numpy
(``pa.array``, ``pa.table(dict)``, a scalar) or turned into numpy (``to_numpy``): 0.3 CPU-s
at every start of a job, more than a map job's own work. These helpers make and read
fixed-width columns through their buffers instead. ``pyarrow.compute`` (also imported by
``.take``/``.cast``) builds a Python wrapper for each of its 300 functions on import,
0.07 CPU-s; ``call`` reaches the same kernels directly. A test checks that partitioning
imports neither.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow._compute as _compute

_NUMPY = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32,
          pa.int64(): np.int64, pa.uint8(): np.uint8, pa.uint16(): np.uint16,
          pa.uint32(): np.uint32, pa.uint64(): np.uint64, pa.float32(): np.float32,
          pa.float64(): np.float64}


def numpy(col) -> np.ndarray:
    """A fixed-width column (Array or ChunkedArray) as numpy, zero-copy when it is one
    chunk without nulls (read-only then)."""
    dtype = _NUMPY.get(col.type)
    if isinstance(col, pa.ChunkedArray):
        if col.num_chunks == 0 and dtype is not None:
            return np.empty(0, dtype)
        col = col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    if dtype is None or col.null_count:
        return col.to_numpy(zero_copy_only=False)  # rare: nulls or another type
    return np.frombuffer(col.buffers()[1], dtype, len(col), col.offset * np.dtype(dtype).itemsize)


def arrow(values: np.ndarray, type: pa.DataType | None = None) -> pa.Array:
    """A numpy vector as an Arrow array (zero-copy; cast to ``type`` first if given)."""
    values = np.ascontiguousarray(values if type is None else values.astype(_NUMPY[type], copy=False))
    return pa.Array.from_buffers(type or pa.from_numpy_dtype(values.dtype), len(values),
                                 [None, pa.py_buffer(values)])


def table(columns: dict) -> pa.Table:
    """A table of named numpy vectors (or Arrow arrays)."""
    return pa.Table.from_arrays([c if isinstance(c, (pa.Array, pa.ChunkedArray)) else arrow(c)
                                 for c in columns.values()], names=list(columns))


def call(function: str, *args, options=None):
    """Arrow compute function ``function`` (e.g. "take", "cast") on ``args``."""
    return _compute.call_function(function, list(args), options)


def distinct(values: np.ndarray) -> np.ndarray:
    """np.unique(values) without its first-call import of numpy.ma (0.03-0.09 s a job)."""
    s = np.sort(values)
    return s[np.r_[True, s[1:] != s[:-1]]] if len(s) else s


def take(data, indices: np.ndarray, checked: bool = True):
    """Rows ``indices`` of an array or table (``checked=False``: the caller knows every
    index is in range; the bounds check was a third of a take from a small table)."""
    return call("take", data, arrow(np.asarray(indices, np.int64)),
                options=None if checked else _compute.TakeOptions(boundscheck=False))


def cast(data, type: pa.DataType):
    return call("cast", data, options=_compute.CastOptions(type))


def lpad(data, width: int, padding: str):
    return call("utf8_lpad", data, options=_compute.PadOptions(width, padding))
