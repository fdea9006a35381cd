"""The values of a user's patch as survey pipelines write them: text, flags, NaN, NULL,
unsigned integers and AB magnitudes read, carried and loaded into a real chunk table; one
catalog's files in two formats as one schema; and a parse that reads the patch's manifest,
not its rows, until a file changes."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from catbench.core.infra.config import ConfigError, validate
from catbench.prepare.own import patch as pf
from catbench.prepare.own import spec as own_spec
from support.patchfiles import COLUMNS, SKY, config, read, rows, write
from support.text import line_with


def test_ab_magnitudes_and_their_errors_are_read_as_fluxes(tmp_path):
    cols = rows(200)
    erg = cols["r_psfFlux"].copy()
    mags = -2.5 * np.log10(erg) - 48.6
    cols.update(r_psfFlux=mags, r_psfFluxErr=np.full(200, 0.1))
    got = read(config([write(cols, tmp_path / "m.parquet")], flux_unit="mag",
                      columns={**COLUMNS, "rFlux_PS_Sigma": "r_psfFluxErr"}))
    assert np.allclose(got.other["rFlux_PS"].to_numpy(), erg, rtol=1e-5)
    assert np.allclose(got.other["rFlux_PS_Sigma"].to_numpy(), erg * 0.1 * np.log(10) / 2.5, rtol=1e-5)
    alone = {k: v for k, v in COLUMNS.items() if k != "rFlux_PS"}
    # the error's key, the unit that makes it a magnitude, and the key left to map
    with pytest.raises(ConfigError, match=r"columns\.rFlux_PS_Sigma .*\(flux_unit: mag\).*columns\.rFlux_PS\)"):
        config([tmp_path / "m.parquet"], flux_unit="mag", columns={**alone, "rFlux_PS_Sigma": "r_psfFluxErr"})


# ---- the values of every column type, through a real chunk table -------------------------------

TEXTS = ["i", "g\tx", "line\nbreak", "back\\slash", "\\N", "NULL", "é☃", "", None, "x" * pf.TEXT_WIDTH]


@pytest.mark.server
def test_every_column_type_a_survey_table_has_comes_back_from_a_chunk_table(tmp):
    """Text (tabs, newlines, backslashes, the NULL marker as text, non-Latin, empty, NULL, the
    widest), flags, NaN and ±inf floats, NULLs and uint16: read from a Parquet patch as the patch
    reader does, written as the chunk files' text and loaded into a chunk table's DDL on a real
    server; what comes back is the file's values, NaN and ±inf as NULL."""
    from catbench.core.server.loaddata import LoadDestination, load_data
    from catbench.core.server.process import Server
    from catbench.prepare.rowtext import text_of
    from catbench.query.chunk_tables import columns_ddl

    n = len(TEXTS)
    cols = rows(n)
    cols.update(refBand=pa.array(TEXTS, pa.large_string()), detect_isPrimary=[k % 2 == 0 for k in range(n)],
                nChild=pa.array(range(65535 - n + 1, 65536), pa.uint16()),
                refExtendedness=pa.array([np.nan, np.inf, -np.inf, None] + [0.5] * (n - 4), pa.float64()))
    path = write(cols, tmp / "p.parquet")
    got = read(config([path]))
    table = got.other.select(["refBand", "detect_isPrimary", "nChild", "refExtendedness"])
    assert got.non_finite == {"refExtendedness": 3} and table.schema.field("nChild").type == pa.int32()
    (tmp / "t.tsv").write_text("\n".join(text_of(table, range(table.num_columns)).to_pylist()) + "\n")
    with Server("types", tmp / "srv") as s:
        conn = s.connect()
        cur = conn.cursor()
        cur.execute("CREATE DATABASE d")
        cur.execute(f"CREATE TABLE d.t ({columns_ddl(table.schema)}) ENGINE=InnoDB")
        assert load_data(conn, tmp / "t.tsv", n, LoadDestination("d", "t"), escaped=True) == n
        cur.execute("SELECT refBand, detect_isPrimary, nChild, refExtendedness FROM d.t")
        back = cur.fetchall()
        conn.close()
    assert [r[0] for r in back] == TEXTS
    assert [r[1] for r in back] == [int(k % 2 == 0) for k in range(n)]
    assert [r[2] for r in back] == list(range(65535 - n + 1, 65536))
    assert [r[3] for r in back] == [None] * 4 + [0.5] * (n - 4)


NATIVE = {"f32": (np.float32, "FLOAT", "FLOAT"), "i16": (np.int16, "SMALLINT", "SMALLINT"),
          "i8": (np.int8, "TINYINT", "TINYINT"), "u8": (np.uint8, "SMALLINT", "SMALLINT"),
          "u16": (np.uint16, "INT", "INTEGER"), "i32": (np.int32, "INT", "INTEGER")}


def _types(cfg) -> tuple[dict, dict]:
    """Each Object column's SQL type in a chunk table's DDL (MySQL) and DuckDB's over its Parquet."""
    import duckdb
    import pyarrow.parquet as pq
    from catbench.prepare.spec import CatalogSpec
    from catbench.query.chunk_tables import columns_ddl
    objects = pf.build_patch(CatalogSpec.of(cfg), read(cfg))[0].objects
    ddl = dict(re.findall(r"`(\w+)` (\w+)", columns_ddl(objects.schema)))
    path = Path(cfg["catalog"]["patch"]["file"]["paths"][0]).with_suffix(".chunk.parquet")
    pq.write_table(objects, path)
    duck = dict(duckdb.sql("SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet(?))",
                           params=[str(path)]).fetchall())
    return ddl, duck


def test_carried_columns_keep_the_types_the_file_wrote(tmp_path):
    """Parquet's float32, int16, int8, int32 as FLOAT, SMALLINT, TINYINT, INT (unsigned: the next
    signed type), a dictionary (pandas category) column as text, the magnitudes mapped as fluxes
    kept under their own names, in MySQL's DDL and DuckDB's view alike: a row's fixed bytes those
    of the file's schema."""
    cols = rows(300)
    cols.update({k: np.arange(300).astype(t) % 100 for k, (t, _, _) in NATIVE.items()})
    cols["kind"] = pa.array(["star", "galaxy", "unknown"] * 100).dictionary_encode()
    cols["g_mag"] = (-2.5 * np.log10(cols.pop("g_psfFlux")) - 48.6).astype(np.float32)
    mapped = {**COLUMNS, "gFlux_PS": "g_mag"}
    path = write(cols, tmp_path / "p.parquet")
    ddl, duck = _types(config([path], columns=mapped, flux_unit="mag"))
    assert {k: ddl[k] for k in NATIVE} == {k: sql for k, (_, sql, _) in NATIVE.items()}
    assert {k: duck[k] for k in NATIVE} == {k: d for k, (_, _, d) in NATIVE.items()}
    assert ddl["kind"] == "VARCHAR" and duck["kind"] == "VARCHAR"
    assert ddl["g_mag"] == "FLOAT" and ddl["gFlux_PS"] == "FLOAT" and duck["g_mag"] == "FLOAT"
    written = sum(np.dtype(t).itemsize for t, _, _ in NATIVE.values())
    from catbench.core.server.rowsize import _SIZES
    assert abs(sum(_SIZES[ddl[k]] for k in NATIVE) - written) <= 0.34 * written   # the unsigned: one size up
    assert sum(_SIZES[ddl[k]] for k in NATIVE if not k.startswith("u")) == \
        sum(np.dtype(t).itemsize for k, (t, _, _) in NATIVE.items() if not k.startswith("u"))


def test_an_ecsvs_declared_types_reach_the_chunk_tables(tmp_path):
    made = rows(4)
    decl = {"f32": "float32", "i16": "int16", "i8": "int8", "u8": "uint8", "u16": "uint16", "i32": "int32",
            "flag": "bool", "band": "string"}
    head = ("# %ECSV 1.0\n# ---\n# delimiter: ','\n# datatype:\n# - {name: obj_id, datatype: int64}\n"
            "# - {name: coord_ra, unit: deg, datatype: float64}\n# - {name: coord_dec, unit: deg, datatype: float64}\n"
            + "".join(f"# - {{name: {n}, datatype: {t}, description: 'a: column'}}\n" for n, t in decl.items())
            + "# meta: !!omap\n# - {source: Gaia}\n# schema: astropy-2.0\n"
            + ",".join(["obj_id", "coord_ra", "coord_dec", *decl]) + "\n")
    body = "".join(f"{made['obj_id'][i]},{float(made['coord_ra'][i])!r},{float(made['coord_dec'][i])!r},"
                   f"{i}.5,{i},{-i},{200 + i},{60000 + i},{i},{'True' if i % 2 else 'null'},null\n" for i in range(4))
    path = tmp_path / "g.ecsv"
    path.write_text(head + body)
    ddl, duck = _types(config([path], columns=ROLES, id_layout="random"))
    assert {k: ddl[k] for k in NATIVE} == {k: sql for k, (_, sql, _) in NATIVE.items()}
    assert {k: duck[k] for k in NATIVE} == {k: d for k, (_, _, d) in NATIVE.items()}
    assert (ddl["flag"], ddl["band"]) == ("BOOLEAN", "VARCHAR")


def test_text_past_its_width_is_refused_naming_the_row(tmp_path):
    cols = rows(30)
    cols["refBand"] = ["r"] * 29 + ["y" * (pf.TEXT_WIDTH + 1)]
    path = write(cols, tmp_path / "p.csv", "csv")
    # the file, column, row and line, its length and the width allowed
    with pytest.raises(ConfigError, match=rf"{path}: column 'refBand' row 30 \(line 31\) holds 256 characters.* 255\b"):
        config([path])


def test_a_parse_reads_the_manifest_not_the_rows_until_a_file_changes(tmp_path, monkeypatch):
    path = write(rows(500), tmp_path / "p.parquet")
    raw = {"seed": 7, "catalog": {"patch": {"file": {"paths": [str(path)], "columns": COLUMNS}}, "sky": SKY,
                                  "id_layout": "source", "sources_per_object": 2}}
    first = validate(raw, resolve=lambda c: own_spec.resolve(c, results=tmp_path / "results"))
    manifest = tmp_path / "results" / first["run"] / "catalog" / "patch" / "manifest.json"
    assert json.loads(manifest.read_text())["objects"] == 500
    real, reads = pf.read_rows, []
    monkeypatch.setattr(pf, "read_rows", lambda *a: reads.append(a) or real(*a))
    again = validate(raw, resolve=lambda c: own_spec.resolve(c, results=tmp_path / "results"))
    assert reads == [] and again["catalog"]["patch"] == first["catalog"]["patch"]
    st = path.stat()                    # the same size and mtime, another content: its ctime moved
    cols = rows(500)
    cols["obj_id"][0] = cols["obj_id"].max() + 1
    write(cols, path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    validate(raw, resolve=lambda c: own_spec.resolve(c, results=tmp_path / "results"))
    assert len(reads) == 1
    raw["catalog"]["patch"]["file"]["drop"] = ["shape_xx"]     # another section: read again
    validate(raw, resolve=lambda c: own_spec.resolve(c, results=tmp_path / "results"))
    assert len(reads) == 2


def test_a_parse_that_reads_the_rows_again_names_the_file_and_why(tmp_path, monkeypatch, caplog):
    """Touched (its bytes the same): its CRC-32 says so and no row is read; rewritten or grown:
    the console line names the file and what of it changed before every row is read again."""
    a, b = write(rows(300, seed=1), tmp_path / "a.parquet"), write(rows(300, seed=2), tmp_path / "b.parquet")
    cols = rows(300, seed=2)
    cols["obj_id"] = cols["obj_id"] + (1 << 56)
    write(cols, b)
    raw = {"seed": 7, "catalog": {"patch": {"file": {"paths": [str(tmp_path / "*.parquet")], "columns": COLUMNS}},
                                  "sky": SKY, "id_layout": "random", "sources_per_object": 2}}

    def parse():
        caplog.clear()
        return validate(raw, resolve=lambda c: own_spec.resolve(c, results=tmp_path / "results"))
    with caplog.at_level("WARNING"):
        first = parse()
        assert "no manifest of them yet" in caplog.text and "every row of 2 file(s)" in caplog.text
        real, reads = pf.read_rows, []
        monkeypatch.setattr(pf, "read_rows", lambda *a: reads.append(a) or real(*a))
        os.utime(b, ns=(b.stat().st_atime_ns, b.stat().st_mtime_ns + 10**9))   # touch: the same bytes
        assert parse()["catalog"]["patch"] == first["catalog"]["patch"] and reads == [] and not caplog.text
        parse()
        assert reads == []                                                     # its new times kept
        st = b.stat()
        cols["shape_xx"][0] += 1.0                       # another value, the same size and mtime
        write(cols, b)
        os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns))
        parse()
        assert len(reads) == 1 and line_with(caplog.text, f"{b} changed", "size and mtime kept", "ctime") \
            and str(a) not in caplog.text
        write({k: v[:200] for k, v in cols.items()}, b)
        parse()
        assert len(reads) == 2 and re.search(rf"{re.escape(str(b))} changed \(\d+ bytes then, \d+ now; modified since",
                                             caplog.text), caplog.text


def test_one_catalog_in_two_formats_is_one_schema_and_a_real_difference_refused(tmp_path):
    a, b = rows(300, seed=1), rows(300, seed=2)
    b["obj_id"] = b["obj_id"] + (1 << 56)
    a["nChild"], b["nChild"] = np.arange(300, dtype=np.uint16), np.arange(300, dtype=np.int64)
    got = read(config([write(a, tmp_path / "a.parquet"), write(b, tmp_path / "b.csv", "csv")]))
    assert got.other.schema.field("nChild").type == pa.int64() and got.other.num_rows == 600
    b["nChild"] = np.arange(300) + 0.5                   # a float where the other file has an integer
    with pytest.raises(ConfigError, match=r"b.csv: its other columns .* differ from .*a.parquet's"):
        config([tmp_path / "a.parquet", write(b, tmp_path / "b.csv", "csv")])


# ---- a CSV's values as the file writes them ------------------------------------------------------

def _csv(tmp_path, extra: dict, name="p.csv", n=6) -> Path:
    """A CSV patch of ``n`` rows with the columns ``extra`` written unquoted, as a survey's tools do."""
    made = rows(n)
    cols = {k: made[k] for k in ("obj_id", "coord_ra", "coord_dec")}
    lines = [",".join([*cols, *extra])]
    lines += [",".join([*(repr(float(v)) if isinstance(v, float) else str(v) for v in (c[i] for c in cols.values())),
                        *(str(v[i]) for v in extra.values())]) for i in range(n)]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


ROLES = {"objectId": "obj_id", "ra": "coord_ra", "dec": "coord_dec"}
NOTES = ["NA", "null", "NaN", "N/A", "#N/A", "nan", "-nan", "galaxy"]   # text: a text column keeps them


def test_a_csvs_text_codes_nan_and_ids_are_kept_as_written(tmp_path):
    ids = [str(2**62 + k) for k in range(8)]
    codes = ["00000", "00007", "00012", "", "00001", "00002", "10000", "00003"]
    path = _csv(tmp_path, {"note": NOTES, "code": codes, "flux": ["NaN", "nan", "-nan", "NA", "", "1.5", "2", "3"],
                           "big": ids, "flag": ["true", "false", "NA", "", "True", "FALSE", "true", "true"]}, n=8)
    got = read(config([path], columns=ROLES))
    o = got.other
    assert o["note"].to_pylist() == NOTES and o["code"].to_pylist() == [c or None for c in codes]
    assert o["big"].type == pa.int64() and [str(v) for v in o["big"].to_pylist()] == ids
    assert o["flux"].to_pylist() == [None] * 5 + [1.5, 2, 3] and got.non_finite == {"flux": 3}  # NaN counted, NA not
    assert o["flag"].to_pylist() == [True, False, None, None, True, False, True, True]


def test_an_ecsvs_declared_types_and_space_delimiter_are_kept(tmp_path):
    cols = rows(4)
    head = ("# %ECSV 1.0\n# ---\n# datatype:\n# - {name: obj_id, datatype: int64}\n# - {name: coord_ra, datatype: "
            "float64}\n# - {name: coord_dec, datatype: float64}\n# - {name: code, datatype: string}\n"
            "# - {name: band, datatype: string}\n# - {name: n, datatype: int32}\n"
            "# meta: !!omap\n# - {unit: !astropy.units.Unit {unit: mag}}\n# schema: astropy-2.0\n"
            "obj_id coord_ra coord_dec code band n\n")
    band = ["NA", '"r i"', "null", '""']     # astropy quotes a value with a space, and an empty one
    body = "".join(f"{cols['obj_id'][i]} {float(cols['coord_ra'][i])!r} {float(cols['coord_dec'][i])!r} "
                   f"0000{i} {band[i]} 00{i}\n" for i in range(4))
    path = tmp_path / "p.ecsv"
    path.write_text(head + body)
    o = read(config([path], columns=ROLES, id_layout="random")).other
    assert o["code"].to_pylist() == ["00000", "00001", "00002", "00003"] and o["n"].type == pa.int32()
    assert o["band"].to_pylist() == ["NA", "r i", "null", None] and o["n"].to_pylist() == [0, 1, 2, 3]


@pytest.mark.parametrize("value,says", [
    (str(2**63), f"column 'big' row 4 (line 5): value {2**63} is outside int64's range"),
    ("1.5", f"column 'big' row 2 (line 3): integer {2**62 + 1} would be rounded to {2**62}"),
])
def test_an_integer_column_that_cannot_be_kept_is_refused_naming_the_row(tmp_path, value, says):
    big = [str(2**62 + k) for k in range(6)]
    big[3] = value
    path = _csv(tmp_path, {"big": big})
    with pytest.raises(ConfigError, match=re.escape(f"{path}: {says}")):
        config([path], columns=ROLES)


def test_magnitude_sentinels_are_held_as_null_and_counted(tmp_path):
    cols = rows(6)
    cols.update(r_mag=np.array([20.0, -99.0, 99.0, 99.99, -999.0, 21.0]), r_magErr=np.array([0.1, 0.1, 0.1, 99.0,
                                                                                            0.1, 0.1]))
    got = read(config([write(cols, tmp_path / "m.parquet")], flux_unit="mag",
                      columns={**ROLES, "rFlux_PS": "r_mag", "rFlux_PS_Sigma": "r_magErr"}))
    assert got.other["rFlux_PS"].null_count == 4 and got.other["rFlux_PS_Sigma"].null_count == 4
    assert got.non_finite == {"rFlux_PS": 4, "rFlux_PS_Sigma": 4}


def test_invalid_utf8_is_refused_naming_file_column_and_row(tmp_path):
    cols = rows(5)
    cols["name"] = pa.array([b"a", b"b", b"\xff\xfe", b"c", b"d"], pa.binary()).view(pa.string())
    path = write(cols, tmp_path / "p.parquet")
    with pytest.raises(ConfigError, match=re.escape(f"{path}: column 'name' row 3 ") + ".*UTF-8"):
        config([path])
    csv = _csv(tmp_path, {"name": ["a", "b", "c", "d", "e", "f"]})
    csv.write_bytes(csv.read_bytes().replace(b",d\n", b",\xe9\n"))
    with pytest.raises(ConfigError, match=re.escape(f"{csv}: column 'name' row 4 (line 5) ") + ".*UTF-8"):
        config([csv], columns=ROLES)


def test_a_bom_and_a_column_empty_in_one_file_are_read(tmp_path):
    a = _csv(tmp_path, {"size": ["", "", "", "", "", ""]}, "a.csv")
    a.write_bytes(b"\xef\xbb\xbf" + a.read_bytes())
    b = _csv(tmp_path, {"size": ["1.5", "2", "", "3", "4", "5"]}, "b.csv")
    _shift_ids(b)
    got = read(config([a, b], columns=ROLES))
    assert got.other["size"].type == pa.float64() and got.other["size"].to_pylist()[6:] == [1.5, 2, None, 3, 4, 5]
    with pytest.raises(ConfigError, match=re.escape(f"{a}: column 'size' ") + r".*no value.* 1 file\(s\)"):
        config([a], columns=ROLES)


def _shift_ids(path: Path):
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0]] + [str(int(ln.split(",")[0]) + 2**40) + ln[ln.index(","):]
                                            for ln in lines[1:]]) + "\n")


# ---- a patch wider than an InnoDB table takes ------------------------------------------------------

def test_a_patch_wider_than_an_innodb_table_is_refused_before_any_job(tmp_path):
    """1,100 carried columns, or 70 text columns (over 65,535 bytes a row), or 1,000 floats (over
    the 8,126 bytes a row may take on its page) pass no config check: each names the limit and drop."""
    def refused(cols, name, fmt, match):
        path = write({**rows(20), **cols}, tmp_path / f"{name}.{fmt}", fmt)
        with pytest.raises(ConfigError, match=rf"catalog.patch.file': the chunk tables .*{match}.*"
                                              rf"leave columns out \(catalog.patch.file.drop\)"):
            config([path])
        config([path], drop=list(cols))       # what drop leaves is taken
    refused({f"c{k}": np.zeros(20) for k in range(1100)}, "many", "parquet", "an InnoDB table holds at most 1017")
    refused({f"t{k}": ["x"] * 20 for k in range(70)}, "text", "csv", "MariaDB's rows hold at most 65,535 bytes")
    refused({f"c{k}": np.zeros(20) for k in range(1000)}, "wide", "parquet", "under 8,126 bytes")


@pytest.mark.server
def test_the_row_limits_are_the_servers(srv):
    """rowsize.py's model of InnoDB's three limits gives the columns MariaDB's CREATE TABLE takes,
    to the column, for a chunk table's DDL (Object's keys)."""
    from catbench.core.server.rowsize import too_wide
    from catbench.query.chunk_tables import KINDS, columns_ddl
    head = [pa.field("objectId", pa.int64()), pa.field("ra_PS", pa.float64()), pa.field("decl_PS", pa.float64())]
    loc = [pa.field("chunkId", pa.int32()), pa.field("subChunkId", pa.int32())]

    def schema(fixed, n):
        return pa.schema([*head, *fixed, *n, *loc])

    families = {   # the columns at the start, and the one type added until a limit is met
        "columns": ([], pa.int32()), "row": ([pa.field(f"t{k}", pa.string()) for k in range(60)], pa.float64()),
        "page": ([], pa.float64()), "page with text": ([pa.field(f"t{k}", pa.string()) for k in range(30)],
                                                       pa.float64())}
    conn = srv.connect()
    cur = conn.cursor()
    cur.execute("CREATE DATABASE IF NOT EXISTS rowsize")
    try:
        for name, (fixed, typ) in families.items():
            n = next(n for n in range(2000) if too_wide(schema(fixed, [pa.field(f"c{k}", typ) for k in range(n + 1)])))
            for k, fits in ((n, True), (n + 1, False)):
                cur.execute("DROP TABLE IF EXISTS rowsize.t")
                ddl = columns_ddl(schema(fixed, [pa.field(f"c{j}", typ) for j in range(k)]))
                try:
                    cur.execute(f"CREATE TABLE rowsize.t ({ddl}, {KINDS['Object'][2]}) ENGINE=InnoDB")
                    created = True
                except Exception:
                    created = False
                assert created == fits, (name, k)
    finally:
        cur.execute("DROP DATABASE IF EXISTS rowsize")
        conn.close()
