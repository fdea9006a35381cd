"""The values of a user's patch as survey pipelines write them: text, flags, NaN, NULL,
unsigned integers and AB magnitudes read, carried and loaded into a real chunk table; one
catalog's files in two formats as one schema; and a parse that reads the patch's manifest,
not its rows, until a file changes."""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pytest
from catbench.core.infra.config import ConfigError, validate
from catbench.prepare.own import patch as pf
from catbench.prepare.own import spec as own_spec
from support.patchfiles import COLUMNS, SKY, config, read, rows, write


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
    with pytest.raises(ConfigError, match=r"columns.rFlux_PS_Sigma is a magnitude error \(flux_unit: mag\); its "
                                          r"magnitude must be mapped too"):
        config([tmp_path / "m.parquet"], flux_unit="mag", columns={**alone, "rFlux_PS_Sigma": "r_psfFluxErr"})


# ---- the values of every column type, through a real chunk table -------------------------------

TEXTS = ["i", "g\tx", "line\nbreak", "back\\slash", "\\N", "NULL", "é☃", "", None, "x" * pf.TEXT_WIDTH]


@pytest.mark.server
def test_every_column_type_a_survey_table_has_comes_back_from_a_chunk_table(tmp):
    """Text (tabs, newlines, backslashes, the NULL marker as text, non-Latin, empty, NULL, the
    widest), flags, NaN and ±inf floats, NULLs and uint16: read from a Parquet patch as the patch
    reader does, written as the chunk files' text and loaded into a chunk table's DDL on a real
    server; what comes back is the file's values, NaN and ±inf as NULL."""
    from catbench.core.server.loaddata import Into, load_data
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
        assert load_data(conn, tmp / "t.tsv", n, Into("d", "t"), escaped=True) == n
        cur.execute("SELECT refBand, detect_isPrimary, nChild, refExtendedness FROM d.t")
        back = cur.fetchall()
        conn.close()
    assert [r[0] for r in back] == TEXTS
    assert [r[1] for r in back] == [int(k % 2 == 0) for k in range(n)]
    assert [r[2] for r in back] == list(range(65535 - n + 1, 65536))
    assert [r[3] for r in back] == [None] * 4 + [0.5] * (n - 4)


def test_text_past_its_width_is_refused_naming_the_row(tmp_path):
    cols = rows(30)
    cols["refBand"] = ["r"] * 29 + ["y" * (pf.TEXT_WIDTH + 1)]
    path = write(cols, tmp_path / "p.csv", "csv")
    with pytest.raises(ConfigError, match=rf"{path}: column 'refBand' row 30 \(line 31\) holds 256 characters; "
                                          rf"the chunk tables carry text of at most 255"):
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


def test_one_catalog_in_two_formats_is_one_schema_and_a_real_difference_refused(tmp_path):
    a, b = rows(300, seed=1), rows(300, seed=2)
    b["obj_id"] = b["obj_id"] + (1 << 56)
    a["nChild"], b["nChild"] = np.arange(300, dtype=np.uint16), np.arange(300, dtype=np.int64)
    got = read(config([write(a, tmp_path / "a.parquet"), write(b, tmp_path / "b.csv", "csv")]))
    assert got.other.schema.field("nChild").type == pa.int64() and got.other.num_rows == 600
    b["nChild"] = np.arange(300) + 0.5                   # a float where the other file has an integer
    with pytest.raises(ConfigError, match=r"b.csv: its other columns .* differ from .*a.parquet's"):
        config([tmp_path / "a.parquet", write(b, tmp_path / "b.csv", "csv")])


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
