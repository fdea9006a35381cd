"""The base patch from the user's own catalog (``catalog.patch.file``): its Objects read
from Parquet/CSV/TSV files, checked row by row as the index input's are (index.py), moved
to the equator and duplicated over ``catalog.sky`` like the synthetic patch (catalog.md).

The footprint comes from the rows: ra starts after the widest empty stretch of the circle
(a patch across ra 0/360 stays one piece), dec is centred on the middle of its range, and
``ra_local = ((ra - ra0) mod 360) * cos(dec) / cos(dec - dec_centre)`` keeps the objects
per unit area, as the duplication's own stretch does; ``catalog.patch.objects``,
``ra_width_deg`` and ``dec_height_deg`` are replaced by the file's rows and extent.
Mapped columns take catbench's names (objectId, ra_PS, decl_PS, the band fluxes the query
suite reads, cast to their types); every other column is carried in the type the file wrote
(uint8/uint16/uint32 as the next signed type), unless ``drop`` names it: a CSV's values as
written (csv_types.py), a Parquet dictionary (pandas category) column as its values, text
checked to be UTF-8. Magnitudes mapped as fluxes (``flux_unit: mag``) are carried under their
own names too.
Sources are made around the file's Objects as for the synthetic patch (a mapped band flux
is their flux in that band). The file's ids are kept for ``catalog.id_layout: source``
(ids.py); the patch itself holds local ids 1..n.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from ...core.infra.files import atomic_path
from ...core.infra.sources import (
    ROLES, TEXT_WIDTH, Source, SourceError, check_columns, comment_lines, csv_header, csv_line, ecsv_header)
from ...core.infra.resources import resource
from ...core.server.rowsize import too_wide
from ..arrays import numpy
from ..catalog import BANDS, Patch, make_sources, object_schema, true_fluxes
from ..spec import CatalogSpec, OwnFiles
from . import csv_types, manifest
from .index import Place, checked, duplicate_message, file_record

KEY = "catalog.patch.file"
NAMES = {"objectId": "objectId", "ra": "ra_PS", "dec": "decl_PS"}   # the catalog's names of the roles
# Arrow types the chunk tables take (query/chunk_tables.py), and lossless widenings into them
CARRIED = {pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64(), pa.bool_(), pa.string()}
WIDER = {pa.uint8(): pa.int16(), pa.uint16(): pa.int32(), pa.uint32(): pa.int64(), pa.float16(): pa.float32()}
RESERVED = ("chunkId", "subChunkId")   # written by the partition stage
# catalog.patch.file.flux_unit -> erg/s/cm^2/Hz, the unit of the suite's fluxToAbMag cuts; "mag": AB
# magnitudes (and their errors), f = 10^(-(m + 48.6) / 2.5), σ_f = f σ_m ln(10) / 2.5
FLUX_UNITS = {"erg": 1.0, "Jy": 1e-23, "nJy": 1e-32, "mag": None}
MAG_SENTINEL = 99.0   # |m| at or past it: no AB magnitude a survey measures (-99 would be 10^20 erg/s/cm^2/Hz)


def optional_columns() -> dict[str, pa.DataType]:
    """The synthetic Object columns a file may map besides the roles: name -> type."""
    return {f.name: f.type for f in object_schema(0) if f.name not in NAMES.values()}


def query_columns(names) -> dict[str, list[str]]:
    """The optional Object columns each query of ``names`` reads (its SQL in resources/queries)."""
    out = {}
    for q in names:
        text = resource("queries", f"{q}.sql").read_text()
        out[q] = [c for c in optional_columns() if re.search(rf"\b{c}\b", text)]
    return out


@dataclass
class Footprint:
    """Where the file's rows lie: ra from ``ra0`` eastward, dec around ``dec_centre``; the
    local patch's ``width`` x ``height`` (degrees, every local position strictly inside)."""

    ra0: float
    dec_centre: float
    width: float
    height: float

    def local(self, ra, dec):
        d = dec - self.dec_centre
        return np.mod(ra - self.ra0, 360.0) * np.cos(np.radians(dec)) / np.cos(np.radians(d)), d


def footprint(ra: np.ndarray, dec: np.ndarray, first: Path) -> Footprint:
    u = np.unique(ra)
    k = int(np.argmax(np.diff(np.r_[u, u[0] + 360.0])))   # the widest gap, across 0/360 too
    lo, hi = float(dec.min()), float(dec.max())
    fp = Footprint(float(u[(k + 1) % len(u)]), (lo + hi) / 2, 0.0, hi - lo)
    fp.width = float(fp.local(ra, dec)[0].max())
    where = (f"config key '{KEY}.paths' ({first}...): the patch's rows lie in ra {fp.ra0:g}.."
             f"{(fp.ra0 + float(np.mod(ra - fp.ra0, 360.0).max())) % 360:g}, dec {lo:g}..{hi:g}")
    if fp.width <= 0 or fp.height <= 0:
        raise SourceError(f"{where}: a line or a point, no area to duplicate; a patch needs rows spread in ra and dec")
    if fp.width >= 360.0:
        raise SourceError(f"{where}: moved to the equator it is {fp.width:.1f} deg wide, over 360 (a patch around "
                          "a pole with every ra); give a patch that does not reach so far in ra and dec")
    fp.width, fp.height = fp.width * (1 + 2**-40), fp.height * (1 + 2**-40)   # half-open: every row inside
    return fp


@dataclass
class FileRows:
    """Every file's rows, checked: the roles, the other kept columns, each file's record."""

    ids: np.ndarray
    ra: np.ndarray
    dec: np.ndarray
    other: pa.Table           # mapped optional columns (catbench's names, types), then carried ones
    files: list[dict]
    footprint: Footprint
    non_finite: dict = field(default_factory=dict)   # column -> NaN/±inf held as NULL


def _read_table(src: Source, role_names: list[str]) -> pa.Table:
    """A file's rows, every text value valid UTF-8; a CSV's roles as text (checked() names a bad
    value's row), its other columns typed as csv_types.py says."""
    if src.format == "parquet":
        try:
            table = pq.ParquetFile(src.path).read()
        except (OSError, pa.ArrowException) as exc:
            raise SourceError(f"{src.path}: not a readable Parquet file ({exc})") from None
        table = _decoded(table)
        _utf8(table, src)
        return table
    meta, names = ecsv_header(src), csv_header(src)
    conv = pcsv.ConvertOptions(column_types={n: pa.string() for n in names}, strings_can_be_null=True,
                               null_values=[""], quoted_strings_can_be_null=meta is not None, check_utf8=False)
    try:
        table = pcsv.read_csv(src.path, read_options=pcsv.ReadOptions(skip_rows=comment_lines(src)),
                              parse_options=pcsv.ParseOptions(delimiter=src.delimiter), convert_options=conv)
    except (OSError, pa.ArrowException) as exc:
        raise SourceError(f"{src.path}: not readable as {src.format.upper()} ({exc})") from None
    _utf8(table, src)
    declared = meta.datatypes if meta else {}
    return pa.Table.from_arrays([c if n in role_names else csv_types.typed(c, n, src, declared.get(n))
                                 for n, c in zip(table.column_names, table.columns)], names=table.column_names)


def _decoded(table: pa.Table) -> pa.Table:
    """Dictionary-encoded columns (a pandas category, Parquet's dictionary pages) as their
    values: category text is text, as the chunk tables and DuckDB's view hold it."""
    for i, f in enumerate(table.schema):
        if pa.types.is_dictionary(f.type):
            table = table.set_column(i, pa.field(f.name, f.type.value_type), pc.cast(table.column(i), f.type.value_type))
    return table


def _utf8(table: pa.Table, src: Source):
    """Every text value valid UTF-8 (Parquet's readers and a CSV's read as text do not check;
    the chunk tables' utf8mb4 and DuckDB refuse it much later): refused naming the row."""
    for name, col in zip(table.column_names, table.columns):
        if not _is_text(col.type):
            continue
        first = 0
        for chunk in col.chunks:
            try:
                chunk.validate(full=True)
            except pa.ArrowInvalid:
                i = next(k for k, v in enumerate(chunk.cast(pa.binary()).to_pylist()) if v is not None
                         and not _decodes(v))
                row = first + i
                line = f" (line {row + 2 + comment_lines(src)})" if src.format != "parquet" else ""
                raise SourceError(f"{src.path}: column {name!r} row {row + 1}{line} is not valid UTF-8 text; "
                                  f"re-encode the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)") from None
            first += len(chunk)


def _decodes(v: bytes) -> bool:
    try:
        v.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _others(table: pa.Table, src: Source, section: OwnFiles, counts: dict) -> pa.Table:
    """The mapped optional columns (renamed, cast) and the carried ones of one file; its floats'
    NaN and ±inf as NULL, counted into ``counts`` (column -> values)."""
    cols, optional = section.columns, optional_columns()
    unknown = [k for k in cols if k not in ROLES and k not in optional]
    if unknown:
        raise SourceError(f"config key '{KEY}.columns.{unknown[0]}': not a column catbench reads; it maps "
                          f"{', '.join([*ROLES, *optional])}")
    names = set(table.column_names)
    for name in section.drop:
        if name not in names:
            raise SourceError(f"config key '{KEY}.drop': {src.path} has no column {name!r}")
    out, fields = [], []
    for name, to in optional.items():
        if name not in cols:
            continue
        if cols[name] not in names:
            raise SourceError(f"{src.path}: no column {cols[name]!r} ({KEY}.columns.{name})")
        arr = table.column(cols[name])
        if not (pa.types.is_floating(arr.type) or pa.types.is_integer(arr.type) or pa.types.is_null(arr.type)):
            raise SourceError(f"{src.path}: column {cols[name]!r} ({KEY}.columns.{name}) is {arr.type}, "
                              "expected a numeric type")
        if "Flux" in name:
            arr = _in_erg(arr, name, table, cols, section.flux_unit, src)
        out.append(_finite_or_null(pc.cast(arr, to, safe=False), name, counts))
        fields.append(pa.field(name, to))
    # magnitudes become fluxes under catbench's names; the file's magnitudes are carried too
    converted = {v for k, v in cols.items() if "Flux" in k and section.flux_unit == "mag"}
    taken = (set(cols.values()) - converted) | set(section.drop)
    seen = {n.lower(): (n, "catbench's own column") for n in (*NAMES.values(), *optional, *RESERVED)}
    own = set(seen)
    for f in table.schema:
        if f.name in taken or (f.name in converted and f.name.lower() in own):   # already a flux of that name
            continue
        _check_name(f.name, src, seen)
        to = pa.string() if _is_text(f.type) else WIDER.get(f.type, f.type)
        if to not in CARRIED and not pa.types.is_null(to):   # no value here: another file's type (_one_schema)
            raise SourceError(f"{src.path}: column {f.name!r} is {f.type}; the chunk tables carry integers, floats, "
                              f"booleans and text: leave it out ({KEY}.drop) or map it ({KEY}.columns)")
        col = pc.cast(table.column(f.name), to) if to != f.type else table.column(f.name)
        if to == pa.string():
            _short_text(col, f.name, src)
        out.append(_finite_or_null(col, f.name, counts))
        fields.append(pa.field(f.name, to))
    return pa.Table.from_arrays(out, schema=pa.schema(fields))


def _in_erg(arr, name: str, table: pa.Table, cols: dict, unit: str, src: Source):
    """A mapped flux column in erg/s/cm^2/Hz (float64). A magnitude error needs its band's
    magnitude, mapped too."""
    arr = pc.cast(arr, pa.float64())
    if FLUX_UNITS[unit] is not None:
        return arr if FLUX_UNITS[unit] == 1.0 else pc.multiply(arr, FLUX_UNITS[unit])
    arr = _no_sentinel(arr)
    mag = arr
    if name.endswith("_Sigma"):
        band = name.removesuffix("_Sigma")
        if band not in cols:
            raise SourceError(f"{src.path}: {KEY}.columns.{name} is a magnitude error (flux_unit: mag); its "
                              f"magnitude must be mapped too ({KEY}.columns.{band})")
        mag = _no_sentinel(pc.cast(table.column(cols[band]), pa.float64()))
    flux = pc.power(10.0, pc.divide(pc.add(mag, 48.6), -2.5))
    return pc.multiply(pc.multiply(flux, arr), np.log(10) / 2.5) if name.endswith("_Sigma") else flux


def _no_sentinel(mag):
    """Magnitudes (or their errors) at or past ±MAG_SENTINEL as NaN: the "no measurement" values
    surveys write (99, -99, 99.99, -999, -9999); as fluxes they would be up to 10^20 erg/s/cm^2/Hz
    and pass every cut. NaN is then held as NULL and counted as any other (_finite_or_null)."""
    return pc.if_else(pc.greater_equal(pc.abs(mag), MAG_SENTINEL), np.nan, mag)


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _short_text(col, name: str, src: Source):
    """A text column's values fit the chunk tables' VARCHAR(TEXT_WIDTH): refused naming the
    first longer value's row (a CSV's line: after its header and comment lines)."""
    long = pc.greater(pc.utf8_length(col), TEXT_WIDTH)
    if pc.any(long).as_py():
        row = pc.index(long, True).as_py()
        line = f" (line {csv_line(src, row + 1)})" if src.format != "parquet" else ""
        raise SourceError(f"{src.path}: column {name!r} row {row + 1}{line} holds "
                          f"{pc.utf8_length(col)[row].as_py()} characters; the chunk tables carry text of at most "
                          f"{TEXT_WIDTH}: shorten it or leave the column out ({KEY}.drop)")


def _finite_or_null(arr, name: str, counts: dict):
    """A float column's NaN and ±inf as NULL: MySQL's DOUBLE holds neither, and a NaN in DuckDB
    passes every ``>`` cut a NULL fails; so both see NULL. ``counts[name]`` adds how many."""
    if not pa.types.is_floating(arr.type):
        return arr
    finite = pc.is_finite(arr)
    n = len(arr) - arr.null_count - (pc.sum(finite).as_py() or 0)
    if n:
        counts[name] = counts.get(name, 0) + n
    return pc.if_else(finite, arr, pa.scalar(None, arr.type)) if n else arr


IDENTIFIER = re.compile(r"[A-Za-z0-9_$]{1,64}")   # a MySQL column name that needs no quoting


def _check_name(name: str, src: Source, seen: dict):
    """A carried column's name: a MySQL identifier of at most 64 plain characters that is not,
    in any case (MySQL's names ignore it), catbench's own column or another of the file's
    (``seen``: lower-case name -> (name, what it is))."""
    if not IDENTIFIER.fullmatch(name) or name.isdigit():
        raise SourceError(f"{src.path}: column {name[:80]!r} is not a name the chunk tables can take (1-64 "
                          f"letters, digits, _ or $, not only digits): rename it in the file or leave it out "
                          f"({KEY}.drop)")
    if name.lower() in seen:
        other, what = seen[name.lower()]
        raise SourceError(f"{src.path}: column {name!r} has the name of {what} {other!r} (MySQL's column names "
                          f"ignore case); map it ({KEY}.columns) or leave it out ({KEY}.drop)")
    seen[name.lower()] = (name, "another column of the file")


def read_rows(section: OwnFiles, srcs: list[Source]) -> FileRows:
    """Read and check every row of the patch files: refused naming the file, the column and
    the row (a CSV's line too) on the index input's rules, duplicates across files included."""
    roles = {r: section.columns[r] for r in ROLES}
    for src in srcs:   # every file's columns before any row is read
        check_columns(src, roles, KEY)
    parts, others, files, first, non_finite = [], [], [], 0, {}
    for src in srcs:
        before = src.path.stat()
        table = _read_table(src, list(roles.values()))
        batch = table.select(list(dict.fromkeys(roles.values()))).combine_chunks().to_batches()
        got = [checked(b, Place(src, first_b + 1, roles, KEY))
               for b, first_b in zip(batch, np.cumsum([0] + [b.num_rows for b in batch]))] if batch else []
        parts += got
        others.append(_others(table, src, section, non_finite))
        files.append(file_record(src, before, table.num_rows))
        first += table.num_rows
    if not first:
        raise SourceError(f"config key '{KEY}.paths': its {len(srcs)} file(s) hold no rows (the first: {srcs[0].path})")
    ids, ra, dec = (np.concatenate([p[k] for p in parts]) for k in range(3))
    _no_duplicates(ids, files, roles["objectId"])
    other = pa.concat_tables(_one_schema(others, srcs))
    _fits_a_chunk_table(other.schema)
    return FileRows(ids, ra, dec, other, files, footprint(ra, dec, srcs[0].path), non_finite)


def _fits_a_chunk_table(other: pa.Schema):
    """The patch's Object chunk tables (the roles, ``other``, the partition's location) within
    InnoDB's limits: refused here, before any job, rather than by the query job's CREATE TABLE."""
    head = [pa.field("objectId", pa.int64()), pa.field("ra_PS", pa.float64()), pa.field("decl_PS", pa.float64())]
    why = too_wide(pa.schema([*head, *other, *(pa.field(c, pa.int32()) for c in RESERVED)]))
    if why:
        raise SourceError(f"config key '{KEY}': the chunk tables of the patch's {len(other)} other columns would "
                          f"take {why}; leave columns out ({KEY}.drop)")


def _wider(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """The type holding both without loss: the wider of two integers or of two floats; a column
    with no value in one file (null) takes the other's type."""
    if a == b or pa.types.is_null(b):
        return a
    if pa.types.is_null(a):
        return b
    for kind in (pa.types.is_integer, pa.types.is_floating):
        if kind(a) and kind(b):
            return a if a.bit_width >= b.bit_width else b
    return None


def _one_schema(others: list[pa.Table], srcs: list[Source]) -> list[pa.Table]:
    """Every file's other columns in one schema: the same names in the same order, an integer
    (or float) column at the widest width any file has it (a Parquet uint16 and a CSV's int64
    are one column); other differences refused naming both files."""
    first = others[0].schema
    types = list(first.types)
    for t, src in zip(others[1:], srcs[1:]):
        wider = [_wider(a, b) for a, b in zip(types, t.schema.types)] if t.schema.names == first.names else [None]
        if None in wider:
            raise SourceError(f"{src.path}: its other columns {t.schema.names} (types "
                              f"{[str(x) for x in t.schema.types]}) differ from {srcs[0].path}'s "
                              f"{first.names} ({[str(x) for x in first.types]})")
        types = wider
    if any(pa.types.is_null(t) for t in types):
        name = first.names[[pa.types.is_null(t) for t in types].index(True)]
        raise SourceError(f"{srcs[0].path}: column {name!r} has no value in any of the {len(srcs)} file(s) (every "
                          f"field empty or NA/null), so no type; give it values, or leave it out ({KEY}.drop)")
    schema = pa.schema([pa.field(n, ty) for n, ty in zip(first.names, types)])
    return [t if t.schema == schema else t.cast(schema) for t in others]


def _no_duplicates(ids: np.ndarray, files: list[dict], column: str):
    order = np.argsort(ids, kind="stable")
    same = np.flatnonzero(ids[order][1:] == ids[order][:-1])
    if len(same):
        rows = order[np.r_[same, same + 1]]
        firsts = {}
        for o in sorted(rows.tolist()):   # the repeated id met first, and its next row
            firsts.setdefault(int(ids[o]), []).append(o)
        key, where = min(firsts.items(), key=lambda kv: kv[1][0])
        raise SourceError(duplicate_message(key, where[:2], len(np.unique(ids[order][same])), files, column, KEY))


def build_patch(cat: CatalogSpec, rows: FileRows) -> tuple[Patch, np.ndarray]:
    """The base patch of the file's rows (local ids, equator positions, Sources) and the
    file's ids by local id - 1."""
    n = len(rows.ids)
    rng = np.random.default_rng([cat.seed, 2])
    order = (np.arange(n) if cat.density_model == "uniform"   # thinned copies: a random sample
             else np.random.default_rng([cat.seed, 31]).permutation(n))
    ra, dec = rows.footprint.local(rows.ra[order], rows.dec[order])
    own, other = rows.ids[order], rows.other.take(pa.array(order))
    local = rng.permutation(n).astype(np.int64) + 1
    flux = true_fluxes(rng, n)
    for k, b in enumerate(BANDS):   # a mapped band flux, where it is a number, is the Sources' flux
        if f"{b}Flux_PS" in other.column_names:
            given = numpy(pc.fill_null(pc.cast(other.column(f"{b}Flux_PS"), pa.float64()), np.nan))
            flux[:, k] = np.where(np.isfinite(given), given, flux[:, k])
    head = pa.table({"objectId": local, "ra_PS": ra, "decl_PS": dec},
                    schema=pa.schema([pa.field(c, t, nullable=False) for c, t in
                                      (("objectId", pa.int64()), ("ra_PS", pa.float64()), ("decl_PS", pa.float64()))]))
    objects = pa.Table.from_arrays([*head.columns, *other.columns], schema=pa.schema([*head.schema, *other.schema]))
    by_local = np.empty(n, np.int64)
    by_local[local - 1] = own
    return Patch(objects, make_sources(rng, cat, local, ra, dec, flux)), by_local


def write_record(rows: FileRows, section: OwnFiles, path):
    """files.json: each file's path, format, bytes, mtime, CRC-32 and rows, the column map,
    the footprint and the NaN/±inf values held as NULL per column (the provenance reads it)."""
    doc = {"rows": len(rows.ids), "columns": section.columns, "drop": list(section.drop),
           "footprint": vars(rows.footprint), "files": rows.files, "non_finite_as_null": rows.non_finite}
    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(doc, indent=1) + "\n")


def check_unchanged(cat: CatalogSpec, rows: FileRows, manifest_path: Path | None = None):
    """The job's rows are those the workflow laid the catalog out from (a file changed
    between the two would give copies that overlap or leave gaps). When they differ, the
    workflow's manifest (``manifest_path``) is rewritten from these rows, so the next parse
    lays the catalog out from them whether the files changed or the manifest was wrong."""
    p, fp = cat.patch, rows.footprint
    if (p.objects, p.ra_width_deg, p.dec_height_deg) == (len(rows.ids), fp.width, fp.height):
        return
    now = (f"{len(rows.ids)} rows, {fp.width:g} x {fp.height:g} deg now; {p.objects} rows, "
           f"{p.ra_width_deg:g} x {p.dec_height_deg:g} deg then")
    if manifest_path is None:
        raise SourceError(f"config key '{KEY}.paths': the files changed since the workflow read them ({now}); "
                          "run the workflow again")
    try:
        then = json.loads(Path(manifest_path).read_text()).get("files") or []
    except (OSError, ValueError, AttributeError):
        then = []
    which = "; ".join(manifest.differences(then, rows.files)) or f"no file changed since {manifest_path} was written"
    manifest.write(manifest_path, cat.patch_file, rows)
    raise SourceError(f"config key '{KEY}.paths': the files differ from {manifest_path}, which the workflow "
                      f"laid the catalog out from ({now}; {which}); it is rewritten from the files: run the "
                      "workflow again")
