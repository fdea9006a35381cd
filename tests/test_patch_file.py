"""A real patch from the user's own files (catalog.patch.file): Parquet and CSV under other
column names, ids packed from tract/patch or in pipeline order; its footprint read from the
rows (across ra 0/360, near a pole); duplicated over the sky with the file's own ids kept
(id_layout: source); every bad input refused before any work naming file, column and row;
a changed file detected; and every stage run from such a patch on a real server."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import tempfile
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from catbench.cli.main import main as catbench_main
from catbench.core.infra.config import ConfigError, load, validate
from catbench.core.infra.sources import changed, fingerprint, sources
from catbench.core.sky.copies import copy_layout, part_copies
from catbench.prepare import catalog as cat_mod
from catbench.prepare.ids import IdLayout
from catbench.prepare.own import patch as pf
from catbench.prepare.spec import CatalogSpec, PrepareSpec
from catbench.prepare.own import spec as own_spec
from support.patchfiles import COLUMNS, config, read, rows, write
from support.paths import REPO, snakemake
from support.servers import kill_servers, server_procs
from support.text import line_with

# ---- the footprint ------------------------------------------------------------------------------

def _back(fp: pf.Footprint, ra_l, dec_l):
    """Local positions moved as a copy placed at the file's own place would be (catalog._move)."""
    return cat_mod._move(ra_l, dec_l, fp.dec_centre, fp.ra0)


def test_footprint_across_ra_zero_and_back():
    cols = rows(3000, ra_lo=-2.0, ra_hi=1.5, dec_lo=20, dec_hi=23)
    ra, dec = cols["coord_ra"], cols["coord_dec"]
    fp = pf.footprint(ra, dec, Path("x"))
    assert fp.ra0 == pytest.approx(ra[ra > 180].min()) and fp.dec_centre == pytest.approx((dec.min() + dec.max()) / 2)
    ra_l, dec_l = fp.local(ra, dec)
    assert 0 <= ra_l.min() and ra_l.max() < fp.width and -fp.height / 2 <= dec_l.min() and dec_l.max() < fp.height / 2
    assert fp.width == pytest.approx(3.5 * np.cos(np.radians(21.5)), rel=0.02)   # area kept, not the ra span
    r2, d2 = _back(fp, ra_l, dec_l)
    assert np.allclose(np.mod(r2 - ra + 180, 360) - 180, 0, atol=1e-9) and np.allclose(d2, dec, atol=1e-9)


def test_footprint_near_a_pole_unrolled_or_refused():
    cols = rows(3000, ra_lo=0, ra_hi=90, dec_lo=80, dec_hi=86)
    fp = pf.footprint(cols["coord_ra"], cols["coord_dec"], Path("x"))
    ra_l, dec_l = fp.local(cols["coord_ra"], cols["coord_dec"])
    assert fp.width < 90 * np.cos(np.radians(80)) / np.cos(np.radians(3)) * 1.01 and ra_l.max() < fp.width
    r2, d2 = _back(fp, ra_l, dec_l)
    assert np.allclose(np.mod(r2 - cols["coord_ra"] + 180, 360) - 180, 0, atol=1e-8)
    cap = rows(3000, ra_lo=0, ra_hi=360, dec_lo=0, dec_hi=90)
    with pytest.raises(pf.SourceError, match="over 360"):
        pf.footprint(cap["coord_ra"], cap["coord_dec"], Path("cap.parquet"))
    with pytest.raises(pf.SourceError, match="no area"):
        pf.footprint(np.full(5, 3.0), np.linspace(0, 1, 5), Path("line.parquet"))


# ---- the patch and its copies --------------------------------------------------------------------

def test_parquet_and_csv_give_the_same_patch(tmp_path):
    cols = rows(1500)
    a = build(config([write(cols, tmp_path / "p.parquet")]))
    b = build(config([write(cols, tmp_path / "p.csv", "csv")]))
    assert a[0].objects.equals(b[0].objects) and a[0].sources.equals(b[0].sources) and (a[1] == b[1]).all()
    names = a[0].objects.schema.names
    assert names[:3] == ["objectId", "ra_PS", "decl_PS"] and names[-2:] == ["extendedness", "shape_xx"]
    assert a[0].objects.schema.field("iFlux_PS").type == pa.float32()     # the synthetic patch's type
    assert sorted(a[1].tolist()) == sorted(cols["obj_id"].tolist())


def test_fluxes_in_njy_are_read_in_the_suites_unit_and_nan_as_null(tmp_path):
    cols = rows(300)
    erg = cols["g_psfFlux"].copy()
    cols.update({f"{b}_psfFlux": cols[f"{b}_psfFlux"] * 1e32 for b in "ugrizy"})   # nJy, as Rubin writes
    cols["shape_xx"][[4, 9]] = [np.nan, np.inf]
    cols["flag"] = np.arange(300) % 3 == 0
    got = read(config([write(cols, tmp_path / "a.parquet")], flux_unit="nJy"))
    assert np.allclose(got.other["gFlux_PS"].to_numpy(), erg, rtol=1e-12)
    assert got.other["shape_xx"].null_count == 2 and got.non_finite == {"shape_xx": 2}
    assert got.other["flag"].type == pa.bool_()


def build(cfg):
    return pf.build_patch(CatalogSpec.of(cfg), read(cfg))


@pytest.mark.parametrize("layout,ids", [("source", "packed"), ("source", "pipeline"), ("spatial", "packed"),
                                        ("random", "pipeline")])
def test_duplicated_over_the_sky_with_unique_ids(tmp_path, layout, ids):
    cols = rows(1200)
    if ids == "pipeline":   # ids a pipeline hands out in the order it writes the rows
        cols["obj_id"] = np.arange(1, 1201, dtype=np.int64) + 10**9
    cfg = config([write(cols, tmp_path / "p.parquet")], id_layout=layout)
    cat = cfg["catalog"]
    assert cat["patch"]["objects"] == 1200 and cat["patch"]["ra_width_deg"] < 2.0
    patch, own = build(cfg)
    lay, names = copy_layout(cat), IdLayout(PrepareSpec.of(cfg), own)
    objs = [cat_mod.duplicate(patch, lay, c, names)[0] for c in range(len(lay))]
    assert len(objs) == len(lay) > 10
    oid = np.concatenate([o["objectId"].to_numpy() for o in objs])
    assert len(np.unique(oid)) == len(oid) == 1200 * len(lay) and oid.min() > 0
    ra = np.concatenate([o["ra_PS"].to_numpy() for o in objs])
    dec = np.concatenate([o["decl_PS"].to_numpy() for o in objs])
    assert ra.min() >= 0 and ra.max() <= 12 and dec.min() >= -3 and dec.max() <= 3
    if layout == "source":   # copy 0: the file's ids; copy c: + c << b
        by_local = own[patch.objects["objectId"].to_numpy() - 1]
        b = int(cols["obj_id"].max()).bit_length()
        for c in (0, 1, len(lay) - 1):
            assert (objs[c]["objectId"].to_numpy() == by_local + (c << b)).all()


def test_source_ids_over_bigint_refused_naming_the_copies(tmp_path):
    cols = rows(800)
    cols["obj_id"] = cols["obj_id"] | (1 << 61)        # 62-bit ids: two copies fit, not more
    with pytest.raises(ConfigError, match=r"catalog.id_layout.*over BIGINT.*keep at most 2 copies"):
        config([write(cols, tmp_path / "p.parquet")])


def test_the_query_suite_columns_are_read_from_its_files():
    need = pf.query_columns(["LV1", "LV3", "HV2", "SHV1"])
    assert need["LV1"] == [] and need["SHV1"] == []
    assert set(need["LV3"]) == {"gFlux_PS", "rFlux_PS", "iFlux_PS", "zFlux_PS"}
    assert set(need["HV2"]) == {f"{b}Flux_PS" for b in "ugrizy"}


# ---- bad input: refused before any work, naming the file, the column and the row ----------------

def _bad(tmp_path, case):
    cols, fmt, more = rows(600), "parquet", {}
    if case == "missing column":
        del cols["coord_dec"]
    elif case == "text ids":
        cols["obj_id"] = cols["obj_id"].astype(str)
    elif case == "NULL ra":
        cols["coord_ra"] = pa.array(np.where(np.arange(600) == 41, np.nan, cols["coord_ra"]), from_pandas=True)
    elif case == "dec over 90":
        cols["coord_dec"][41] = 91.0
    elif case == "infinite dec":
        cols["coord_dec"][41] = np.inf
    elif case == "repeated id":
        cols["obj_id"][41] = cols["obj_id"][7]
    elif case == "id over BIGINT":
        fmt = "csv"
        cols["obj_id"] = cols["obj_id"].astype(str).astype(object)
        cols["obj_id"][41] = str(2**63)
    elif case == "hex id":
        fmt = "csv"
        cols["obj_id"] = cols["obj_id"].astype(str).astype(object)
        cols["obj_id"][41] = "0x10"
    elif case == "list column":
        cols["name"] = pa.array([[i] for i in range(600)])
    elif case == "own name":
        cols["ra_PS"] = cols["coord_ra"]
    elif case in NAMES:
        for name in NAMES[case]:
            cols[name] = cols["coord_ra"]
    return write(cols, tmp_path / f"bad.{fmt}", fmt), more


CASES = {  # case: what the message says (besides the file)
    "missing column": "no column 'coord_dec' (catalog.patch.file.columns.dec)",
    "text ids": "column 'obj_id' (catalog.patch.file.columns.objectId) is string",
    "NULL ra": "row 42, column 'coord_ra' (catalog.patch.file.columns.ra): NULL",
    "dec over 90": "row 42, column 'coord_dec' (catalog.patch.file.columns.dec): dec 91",
    "infinite dec": "row 42, column 'coord_dec' (catalog.patch.file.columns.dec): value inf is not finite",
    "repeated id": "row 8 and",
    "id over BIGINT": "row 42 (line 43), column 'obj_id' (catalog.patch.file.columns.objectId): value 9223372036854775808",
    "hex id": "row 42 (line 43), column 'obj_id' (catalog.patch.file.columns.objectId): value '0x10' is not a "
              "decimal integer",
    "list column": "column 'name' is list<",
    "own name": "column 'ra_PS' has the name of catbench's own column",
    "SQL in a name": "column 'x` DOUBLE, `pwn' is not a name the chunk tables can take",
    "own name in capitals": "column 'OBJECTID' has the name of catbench's own column 'objectId'",
    "70 characters": f"column '{'f' * 70}' is not a name the chunk tables can take (1-64",
    "empty name": "column '' is not a name",
    "one name in two cases": "column 'Flag' has the name of another column of the file 'flag'",
}
NAMES = {"SQL in a name": ["x` DOUBLE, `pwn"], "own name in capitals": ["OBJECTID"], "70 characters": ["f" * 70],
         "empty name": [""], "one name in two cases": ["flag", "Flag"]}


@pytest.mark.parametrize("case", CASES)
def test_bad_input_refused_naming_file_column_and_row(tmp_path, case):
    path, more = _bad(tmp_path, case)
    with pytest.raises(ConfigError) as e:
        config([path], **more)
    assert str(path) in str(e.value) and CASES[case] in str(e.value), str(e.value)
    if case == "repeated id":
        assert "row 42" in str(e.value) and "duplicate objectId" in str(e.value)


def test_repeated_id_across_files_names_both(tmp_path):
    a, b = rows(500, seed=1), rows(500, seed=2)
    b["obj_id"] = b["obj_id"] + (1 << 56)
    b["obj_id"][9] = a["obj_id"][3]
    pa_, pb = write(a, tmp_path / "a.parquet"), write(b, tmp_path / "b.csv", "csv")
    with pytest.raises(ConfigError) as e:
        config([pa_, pb])
    assert f"{pa_} row 4 and {pb} row 10 (line 11)" in str(e.value)


def test_a_csv_line_counts_the_newlines_inside_quoted_values(tmp_path):
    """A bad value, a repeated id and a too long text after a note with a newline in quotes (and
    a '#' comment line) are named at the line an editor shows them on."""
    cols = rows(20)
    cols["note"] = ["ok"] * 20
    cols["note"][2] = "two\nlines"                      # row 3: lines 5 and 6 (after the comment and header)
    dec = cols["coord_dec"]
    cols["coord_dec"] = [repr(float(v)) for v in dec[:4]] + ["north"] + [repr(float(v)) for v in dec[5:]]  # row 5: line 8
    path = write(cols, tmp_path / "bad.csv", "csv")
    path.write_text("# a comment line\n" + path.read_text())
    assert '"two\nlines"' in path.read_text()
    with pytest.raises(ConfigError, match=r"row 5 \(line 8\), column 'coord_dec'"):
        config([path])
    cols["coord_dec"] = dec
    cols["obj_id"][6] = cols["obj_id"][5]             # rows 6 and 7: lines 9 and 10
    path.write_text("# a comment line\n" + write(cols, tmp_path / "b.csv", "csv").read_text())
    with pytest.raises(ConfigError, match=r"bad.csv row 6 \(line 9\) and .*bad.csv row 7 \(line 10\)"):
        config([path])
    cols["obj_id"][6] += 1 << 30
    cols["note"][7] = "x" * 300                        # row 8: line 11
    path.write_text("# a comment line\n" + write(cols, tmp_path / "b.csv", "csv").read_text())
    with pytest.raises(ConfigError, match=r"column 'note' row 8 \(line 11\) holds 300 characters"):
        config([path])


def test_config_mistakes_refused_before_any_work(tmp_path):
    path = write(rows(500), tmp_path / "p.parquet")
    no_flux = {k: v for k, v in COLUMNS.items() if k in ("objectId", "ra", "dec")}
    with pytest.raises(ConfigError, match=r"query LV3 .*column gFlux_PS\b"):
        config([path], stages=["queries"], columns=no_flux)
    cfg = config([path], stages=["load_index"], columns=no_flux)    # no queries: nothing to map
    assert cfg["catalog"]["patch"]["objects"] == 500
    with pytest.raises(ConfigError, match=r"catalog.patch.file.columns.gflux': not a column catbench reads"):
        config([path], columns={**no_flux, "gflux": "g_psfFlux"})
    with pytest.raises(ConfigError, match=r"catalog.patch.file.drop.*has no column 'nope'"):
        config([path], drop=["nope"])
    assert "shape_xx" not in build(config([path], drop=["shape_xx"]))[0].objects.schema.names
    with pytest.raises(ConfigError, match=r"catalog.id_layout.*source.*names no file"):
        validate({"catalog": {"id_layout": "source"}})
    with pytest.raises(ConfigError, match=r"index.source.*generate makes its own patch"):
        validate({"catalog": {"patch": {"file": {"paths": [str(path)], "columns": no_flux}}},
                  "index": {"source": "generate"}}, resolve=own_spec.resolve)
    with pytest.raises(ConfigError, match=r"index.source: file builds no catalog"):
        validate({"catalog": {"patch": {"file": {"paths": [str(path)], "columns": no_flux}}},
                  "index": {"source": "file", "file": {"paths": [str(path)]}}}, resolve=own_spec.resolve)
    with pytest.raises(ConfigError, match=r"catalog.patch.file.paths.*names no file"):
        config([tmp_path / "none*.parquet"])


def test_a_file_changed_after_the_plan_fails_the_job_with_nothing_written(tmp_path):
    path = write(rows(700), tmp_path / "p.parquet")
    cfg = config([path])
    section = cfg["catalog"]["patch"]["file"]
    was = fingerprint(sources(section, key=pf.KEY))
    out = tmp_path / "out"
    args = ["patch", "--config", json.dumps({k: cfg[k] for k in ("seed", "catalog", "partition")}),
            "--objects", str(out / "Object.parquet"), "--sources", str(out / "Source.parquet"),
            "--metrics", str(out / "m.json"), "--own-ids", str(out / "own_ids.parquet"), "--files", str(out / "f.json")]
    assert catbench_main(args) == 0
    record = json.loads((out / "f.json").read_text())
    assert record["files"][0]["path"] == str(path) and record["files"][0]["crc32"] and record["rows"] == 700
    shutil.rmtree(out)
    cols = rows(700)
    cols["coord_dec"][99] = np.nan
    write(cols, path)
    assert any("changed" in line for line in changed(record["files"], fingerprint(sources(section, key=pf.KEY))))
    assert was != fingerprint(sources(section, key=pf.KEY))
    assert catbench_main(args) != 0
    assert not any(p.suffix in (".parquet", ".json") and not p.name.startswith("m.") for p in out.rglob("*"))
    write(rows(650), path)       # good rows, but not those the catalog was laid out from
    assert catbench_main(args) != 0 and not (out / "Object.parquet").exists()


def test_a_manifest_that_disagrees_with_the_files_is_rewritten_by_the_job(tmp_path, capsys):
    """A manifest whose rows are not the unchanged files' (hand-edited, or written by another
    reader) fails the patch job naming it, once: the job rewrites it, the next parse lays the
    catalog out from the files and the job passes."""
    path = write(rows(500), tmp_path / "p.parquet")
    raw = {"seed": 7, "catalog": {"patch": {"file": {"paths": [str(path)], "columns": COLUMNS}},
                                  "sky": {"ra_min_deg": 0, "ra_max_deg": 12, "dec_min_deg": -3, "dec_max_deg": 3},
                                  "id_layout": "source", "sources_per_object": 2}}

    def parse():
        return validate(raw, resolve=lambda c: own_spec.resolve(c, results=tmp_path / "results"))
    first = parse()
    manifest = tmp_path / "results" / first["run"] / "catalog" / "patch" / "manifest.json"
    doc = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**doc, "objects": 499}))
    out = tmp_path / "out"

    def job(cfg):
        return catbench_main(["patch", "--config", json.dumps({k: cfg[k] for k in ("seed", "catalog", "partition")}),
                              "--objects", str(out / "Object.parquet"), "--sources", str(out / "Source.parquet"),
                              "--metrics", str(out / "m.json"), "--own-ids", str(out / "own_ids.parquet"),
                              "--files", str(out / "f.json"), "--manifest", str(manifest)])
    assert parse()["catalog"]["patch"]["objects"] == 499 and job(parse()) != 0
    # the key, the layout's file, and the rows now and then
    assert line_with(capsys.readouterr().err, "patch.file.paths", f"differ from {manifest}", "(500 rows", "499 rows")
    assert parse()["catalog"]["patch"]["objects"] == 500 and job(parse()) == 0


def test_preset_validates_on_a_users_files(tmp_path):
    cols = {k.replace("_psfFlux", "_flux").replace("coord_", "").replace("obj_id", "objectId"): v
            for k, v in rows(2000).items()}
    write(cols, tmp_path / "my-patch" / "a.parquet")
    cfg = yaml.safe_load((REPO / "config" / "own-patch.yaml").read_text())
    cfg["catalog"]["patch"]["file"]["paths"] = [str(tmp_path / "my-patch" / "*.parquet")]
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    got = load(tmp_path / "c.yaml", resolve=own_spec.resolve)
    assert got["catalog"]["patch"]["objects"] == 2000 and "queries" in got["stages"]
    assert len(part_copies(got["catalog"])) >= 1


# ---- every stage from a real patch, on a real server --------------------------------------------

@pytest.mark.slow
@pytest.mark.server
def test_every_stage_from_a_patch_file(tmp_path):
    """A Rubin-like Parquet file (nJy fluxes, a flag, NaN, ±inf, NULL, uint16, text), a CSV and
    a Gaia-style ECSV .csv.gz of one patch (tract/patch-packed ids, ra across 0): the
    catalog, partition, index loads and the query suite on MySQL and DuckDB (answers equal),
    tables and report; the file's ids kept in copy 0, its extra columns in the chunk tables,
    its path, bytes and CRC-32 in the provenance. Then a bad row: refused before any job."""
    disk = Path(tempfile.mkdtemp(prefix="cbpf-", dir="/tmp"))   # short: socket paths
    try:
        wd = tmp_path / "wd"
        cols = rows(400)
        # as Rubin's Object tables have them: a flag, NaN and ±inf in a carried and a mapped float
        cols["detect_isPrimary"] = np.random.default_rng(3).integers(0, 2, 400).astype(bool)
        cols["shape_xx"][::7] = np.nan
        cols["u_psfFlux"][[3, 300]] = [np.inf, -np.inf]
        cols["u_psfFlux"][5] = np.nan
        cols["refBand"] = np.array(["g", "r\tz", "i\\N", "é☃", "y"] * 80)   # text, LOAD DATA's escapes in it
        cols["nChild"] = np.arange(400, dtype=np.uint16)                     # an unsigned count
        cols["psfNdata"], cols["sizeFlag"] = np.arange(400, dtype=np.int16), (np.arange(400) % 3).astype(np.int8)
        cols["refSizeExtendedness"] = np.linspace(0, 1, 400, dtype=np.float32)
        cols["morphology"] = pa.array(["point", "extended"] * 200).dictionary_encode()   # a pandas category
        cols["refExtendedness"] = pa.array([None if k % 9 == 0 else 0.5 for k in range(400)], pa.float64())
        cols.update({f"{b}_psfFlux": cols[f"{b}_psfFlux"] * 1e32 for b in "ugrizy"})   # nJy, as Rubin's
        first = {k: v[:200] for k, v in cols.items()}
        write(first, wd / "patch" / "a.parquet")
        write({k: v[200:300] for k, v in cols.items()}, wd / "patch" / "b.csv", "csv")
        ecsv = write({k: v[300:] for k, v in cols.items()}, tmp_path / "c.csv", "csv").read_text()
        (wd / "patch" / "c.csv.gz").write_bytes(gzip.compress(   # Gaia's distribution: ECSV, gzip
            ("# %ECSV 1.0\n# ---\n# delimiter: ','\n# datatype: []\n" + ecsv).encode()))
        cfg = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
        cfg.update(run="pf", stages=["load_index", "queries"], targets={"disk": {"path": str(disk)}})
        cfg["catalog"].update(patch={"file": {"paths": ["patch/a.parquet", "patch/b.csv", "patch/c.csv.gz"],
                                              "columns": COLUMNS, "flux_unit": "nJy"}},
                              id_layout="source", sky={"ra_min_deg": 0, "ra_max_deg": 6, "dec_min_deg": -2,
                                                       "dec_max_deg": 2})
        cfg["load"].update(lookup_count=200)
        cfg["queries"]["concurrency"].update(seconds=0.5)
        cfgfile = tmp_path / "c.yaml"
        cfgfile.write_text(yaml.safe_dump(cfg))
        r = snakemake(wd, cfgfile, "--cores", "2")
        assert r.returncode == 0, (r.stdout + r.stderr)[-5000:]
        res = wd / "results" / "pf"
        check = json.loads((res / "queries" / "check.json").read_text())
        assert check["ok"] and set(check["queries"]) >= {"LV1", "LV2", "LV3", "HV1", "HV2", "HV3", "SHV1", "SHV2"}
        obj = pq.read_table(res / "catalog" / "Object" / "part-00000.parquet")
        b = int(cols["obj_id"].max()).bit_length()
        assert sorted(obj["objectId"].to_numpy()[:400].tolist()) == sorted(cols["obj_id"].tolist())
        assert (obj["objectId"].to_numpy()[400:800] >> b == 1).all()
        chunk = next((res / "chunks" / "Object").glob("chunk_*[0-9].parquet"))
        assert {"extendedness", "shape_xx", "iFlux_PS", "detect_isPrimary", "refBand", "chunkId"} <= \
            set(pq.read_schema(chunk).names)
        text = "".join(p.read_text() for p in (res / "chunks" / "Object").glob("chunk_*.tsv"))
        assert not re.search(r"(?:^|\t)(?:true|false|nan|NaN|-?inf)(?:\t|$)", text, re.M)   # 1/0 and \N only
        held = pq.read_table(res / "catalog" / "Object" / "part-00000.parquet", columns=["shape_xx", "uFlux_PS"])
        assert held["shape_xx"].null_count >= 58 and not np.isnan(held["shape_xx"].to_numpy(zero_copy_only=False)
                                                              [~np.asarray(held["shape_xx"].is_null())]).any()
        n_obj = sum(pq.ParquetFile(p).metadata.num_rows for p in (res / "catalog" / "Object").glob("*.parquet"))
        assert "HV1" in (res / "tables" / "queries.csv").read_text() and f"n={n_obj}" in \
            (res / "tables" / "queries.csv").read_text()
        prov = json.loads((res / "tables" / "provenance.json").read_text())["patch_files"]
        assert [f["rows"] for f in prov["files"]] == [200, 100, 100] and all(f["crc32"] for f in prov["files"])
        # every file's NaN: the CSVs' "nan" is a float NaN as the Parquet file's is, counted the same
        assert prov["non_finite_as_null"] == {"uFlux_PS": 3, "shape_xx": 58}
        summary = json.loads((res / "load" / "disk" / "bigint" / "innodb" / "one-file-at-a-time" /
                              "summary.json").read_text())
        assert summary["checksum_ok"] and summary["rows"] == n_obj
        assert (res / "report" / "index.html").is_file() and not server_procs(disk)
        md = (res / "report" / "summary.md").read_text()
        assert line_with(md, "catalog.patch.file", "catalog.sky", "400 rows", "3 file(s)",
                         f"{wd / 'patch' / 'a.parquet'}, {wd / 'patch' / 'b.csv'}, {wd / 'patch' / 'c.csv.gz'}")
        # one digit of the CSV changed, its size and mtime kept (touch -r): seen by its content
        csv_path, st = wd / "patch" / "b.csv", (wd / "patch" / "b.csv").stat()
        text = csv_path.read_text()
        digit = text.index("7", text.index("\n") + 1)
        csv_path.write_text(text[:digit] + "8" + text[digit + 1:])
        os.utime(csv_path, ns=(st.st_atime_ns, st.st_mtime_ns))
        r = snakemake(wd, cfgfile, "-n")
        out = r.stdout + r.stderr
        assert r.returncode == 0 and f"{csv_path} changed (its content: CRC-32" in out and "catalog_patch" in out, \
            out[-3000:]
        r = snakemake(wd, cfgfile, "--cores", "2", "results/pf/catalog/patch/files.json")   # and made again
        assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
        record = json.loads((res / "catalog" / "patch" / "files.json").read_text())["files"]
        assert [f["crc32"] for f in record if f["path"] == str(csv_path)] == [zlib.crc32(csv_path.read_bytes())]
        csv_path.write_text(text)
        # the Parquet file written again: named as changed, and the catalog made again from it
        write(first, wd / "patch" / "a.parquet")
        r = snakemake(wd, cfgfile, "-n")
        out = r.stdout + r.stderr
        assert r.returncode == 0 and f"catalog.patch.file: {wd / 'patch' / 'a.parquet'} changed" in out, out[-3000:]
        assert "catalog_patch" in out
        # a bad row in the CSV: nothing is started, the file, column and line are named
        text = (wd / "patch" / "b.csv").read_text().splitlines()
        text[5] = text[5].replace(text[5].split(",")[0], "", 1)
        (wd / "patch" / "b.csv").write_text("\n".join(text) + "\n")
        r = snakemake(wd, cfgfile, "--cores", "2")
        out = r.stdout + r.stderr
        assert r.returncode != 0 and f"{wd / 'patch' / 'b.csv'}: row 5 (line 6), column 'coord_dec'" in out, out[-3000:]
        assert "NULL" in out and "Finished jobid" not in out
    finally:
        kill_servers(disk)   # only this test's servers, by pid
        shutil.rmtree(disk, ignore_errors=True)
