"""The types of a CSV/TSV/ECSV patch file's columns, read as text and typed here rather than by
Arrow's inference, which makes codes such as ``00007`` integers, 64-bit ids doubles (rounded)
as soon as one value is ``1.5`` or over 2^63, and ``NA`` or ``null`` NULL even in a text column.

An ECSV's declared types are kept (its text columns stay text). Elsewhere a column is:
integers (BIGINT) when every value is a decimal integer; text when one has a leading zero (a
code); booleans when every value is true or false; floats when every value is a number (NaN,
inf included); text otherwise, every value as written. An empty field is NULL in any column; in
a column of numbers or booleans the markers NA, N/A, null, NULL and #N/A are NULL too (a text
column keeps them as text). What cannot be kept exactly is refused naming the file, the column
and the row: an integer outside BIGINT's range, or, in a column of floats, an integer past 2^53
that a double would round."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...core.infra.sources import Source, SourceError, comment_lines

MARKERS = ["NA", "N/A", "n/a", "null", "NULL", "#N/A", "#N/A N/A", "#NA"]
INTEGER = r"^-?[0-9]+$"
CODE = r"^-?0[0-9]"          # a leading zero: a code, text
TRUE, FALSE = ["true", "True", "TRUE"], ["false", "False", "FALSE"]
EXACT = 2**53                # a double holds every integer up to this
DECLARED = {"int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
            "uint8": pa.uint8(), "uint16": pa.uint16(), "uint32": pa.uint32(), "uint64": pa.uint64(),
            "float16": pa.float32(), "float32": pa.float32(), "float64": pa.float64(), "bool": pa.bool_(),
            "string": pa.string()}


def where(src: Source, name: str, row: int) -> str:
    """A value's place: file, column, row (1-based) and line."""
    return f"{src.path}: column {name!r} row {row + 1} (line {row + 2 + comment_lines(src)})"


def _first(mask) -> int:
    return pc.index(mask, True).as_py()


def typed(col: pa.ChunkedArray, name: str, src: Source, declared: tuple | None) -> pa.ChunkedArray:
    """``col`` (text, an empty field NULL) in its type: ``declared`` (an ECSV's (datatype,
    subtype)) or the one its values have."""
    if declared is not None:
        return _declared(col, name, src, declared)
    missing = pc.is_in(col, pa.array(MARKERS))
    values = pc.drop_null(pc.filter(col, pc.invert(missing)))
    if not len(values):
        return pa.chunked_array([pa.nulls(len(col))])
    numbers = pc.if_else(missing, pa.scalar(None, pa.string()), col)
    if pc.all(pc.match_substring_regex(values, INTEGER)).as_py():
        if pc.any(pc.match_substring_regex(values, CODE)).as_py():
            return col
        return _integers(numbers, name, src, pa.int64())
    if pc.all(pc.is_in(values, pa.array(TRUE + FALSE))).as_py():
        return _bools(numbers)
    try:
        floats = pc.cast(numbers, pa.float64())
    except pa.ArrowInvalid:
        return col
    _exact(numbers, floats, name, src)
    return floats


def _declared(col, name: str, src: Source, declared: tuple) -> pa.ChunkedArray:
    datatype, subtype = declared
    to = DECLARED.get(datatype)
    if to is None or subtype:
        raise SourceError(f"{src.path}: column {name!r} is declared {datatype}"
                          f"{f' ({subtype})' if subtype else ''} in its ECSV header; the chunk tables carry "
                          f"integers, floats, booleans and text: leave it out (catalog.patch.file.drop)")
    if to == pa.string():
        return col
    numbers = pc.if_else(pc.fill_null(pc.is_in(col, pa.array(MARKERS)), False), pa.scalar(None, pa.string()), col)
    if pa.types.is_integer(to):
        bad = pc.invert(pc.match_substring_regex(numbers, INTEGER))
        if pc.any(bad).as_py():
            i = _first(pc.fill_null(bad, False))
            raise SourceError(f"{where(src, name, i)}: value {numbers[i].as_py()[:40]!r} is not an integer (the "
                              f"ECSV header declares {datatype}); fix the value or the header")
        return _integers(numbers, name, src, to)
    if to == pa.bool_():
        bad = pc.invert(pc.is_in(numbers, pa.array(TRUE + FALSE)))
        if pc.any(pc.and_(bad, pc.is_valid(numbers))).as_py():
            i = _first(pc.and_(bad, pc.is_valid(numbers)))
            raise SourceError(f"{where(src, name, i)}: value {numbers[i].as_py()[:40]!r} is not true or false "
                              f"(the ECSV header declares bool); fix the value or the header")
        return _bools(numbers)
    try:
        return pc.cast(numbers, to)
    except pa.ArrowInvalid:
        i = next(k for k, s in enumerate(numbers.to_pylist()) if s is not None and not _is_float(s))
        raise SourceError(f"{where(src, name, i)}: value {numbers[i].as_py()[:40]!r} is not a number (the ECSV "
                          f"header declares {datatype}); fix the value or the header") from None


def _bools(numbers):
    return pc.if_else(pc.is_null(numbers), pa.scalar(None, pa.bool_()), pc.is_in(numbers, pa.array(TRUE)))


def _is_float(s: str) -> bool:
    try:
        pc.cast(pa.array([s]), pa.float64())
    except pa.ArrowInvalid:
        return False
    return True


def _integers(numbers, name: str, src: Source, to: pa.DataType) -> pa.ChunkedArray:
    """Decimal integers as ``to``; one outside its range refused naming the row."""
    try:
        return pc.cast(numbers, to)
    except pa.ArrowInvalid:
        lo, hi = (-(1 << (to.bit_width - 1)), (1 << (to.bit_width - 1)) - 1) if pa.types.is_signed_integer(to) \
            else (0, (1 << to.bit_width) - 1)
        i = next(k for k, s in enumerate(numbers.to_pylist()) if s is not None and not lo <= int(s) <= hi)
        raise SourceError(f"{where(src, name, i)}: value {numbers[i].as_py()[:40]} is outside {to}'s range "
                          f"{lo}..{hi}; fix the value, or leave the column out (catalog.patch.file.drop)") from None


def _exact(numbers, floats, name: str, src: Source):
    """A column of floats holding integers past 2^53 (64-bit ids with one ``1.5``) would round
    them: refused naming that row and the value that made the column floats."""
    big = pc.and_(pc.match_substring_regex(numbers, INTEGER), pc.greater(pc.abs(floats), EXACT))
    if not pc.any(big).as_py():
        return
    for i in map(int, np.flatnonzero(pc.fill_null(big, False).to_numpy())):
        if int(numbers[i].as_py()) != int(floats[i].as_py()):
            j = _first(pc.fill_null(pc.invert(pc.match_substring_regex(numbers, INTEGER)), False))
            raise SourceError(f"{where(src, name, i)}: integer {numbers[i].as_py()} would be rounded to "
                              f"{int(floats[i].as_py())}, the column being floats for its value "
                              f"{numbers[j].as_py()[:40]!r} (row {j + 1}); fix that value, or leave the column "
                              f"out (catalog.patch.file.drop)")
