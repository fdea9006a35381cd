"""The index study on the user's own catalog (index.source: file): objectId, ra, dec read
from Parquet and CSV files under other column names, with ids packed from tract/patch
and ids in pipeline order; located by the same chunker; every bad input refused naming
file, column and row with no input folder left; the generator's ids through a Parquet
file give the generator's bytes; and the study end to end on a real server."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
import yaml
from catbench.core.infra.config import validate
from catbench.core.index.input import list_input
from catbench.core.infra.sources import SourceError, changed, fingerprint, sources, total_rows
from catbench.prepare.index_order import written_in_order
from catbench.prepare.chunker import Chunker
from catbench.prepare.index_only import generate_index
from catbench.prepare.own.index import read_index, setup_from
from catbench.prepare.spec import PrepareSpec

from support.catalog import INDEX_FILES, build_catalog, small_config
from support.paths import REPO, snakemake
from support.preflight import check
from support.servers import kill_servers, server_procs

COLUMNS = {"objectId": "id", "ra": "coord_ra", "dec": "coord_dec"}


def tract_patch_ids(ra, dec) -> np.ndarray:
    """An LSST-style packing: tract (a 10 x 10 deg cell) << 42 | patch (1 x 1 deg) << 35 | sequence."""
    tract = (np.floor(ra / 10) * 18 + np.floor((dec + 90) / 10)).astype(np.int64)
    patch = (np.floor(ra % 10) * 10 + np.floor((dec + 90) % 10)).astype(np.int64)
    cell = tract * 128 + patch
    order = np.argsort(cell, kind="stable")          # a pipeline writes a patch's objects together
    seq = np.empty(len(ra), np.int64)
    _, first = np.unique(cell[order], return_index=True)
    run = np.arange(len(ra)) - np.repeat(first, np.diff(np.r_[first, len(ra)]))
    seq[order] = run
    return (tract << 42) | (patch << 35) | seq, order


def sky(n: int, seed: int = 3):
    rng = np.random.default_rng(seed)
    return rng.uniform(0, 360, n), np.degrees(np.arcsin(rng.uniform(-1, 1, n)))


def write(table: pa.Table, path: Path, fmt: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "parquet":
        pq.write_table(table, path, row_group_size=3000)
    else:
        pcsv.write_csv(table, path, pcsv.WriteOptions(delimiter="\t" if fmt == "tsv" else ","))


def catalog(root: Path, ids: np.ndarray, ra, dec, files: int, fmt: str) -> list[Path]:
    """The rows split into ``files`` files of ``fmt`` under COLUMNS' names, in row order."""
    t = pa.table({"coord_dec": dec, "id": ids, "flux": np.ones(len(ids)), "coord_ra": ra})
    b = np.linspace(0, len(ids), files + 1).astype(int)
    out = []
    for k in range(files):
        p = root / f"part-{k:03d}.{fmt}"
        write(t.slice(b[k], b[k + 1] - b[k]), p, fmt)
        out.append(p)
    return out


def config(paths, order="generation", files=6, batch_rows=2000, columns=COLUMNS) -> dict:
    return validate({"index": {"source": "file", "order": order, "sort_memory": "64MB",
                               "file": {"paths": [str(p) for p in paths], "columns": columns,
                                        "batch_rows": batch_rows}},
                     "partition": {"index_files": files}})


def read(cfg: dict, out: Path, threads: int = 1) -> dict:
    return read_index(setup_from(PrepareSpec.of(cfg), sources(cfg["index"]["file"]), threads), out / "input",
                      out / "input_char28", out / "sources.json")


def rows_of(folder: Path) -> np.ndarray:
    return np.concatenate([np.loadtxt(f, dtype=np.int64, ndmin=2) for f in list_input(folder)])


# ---- reading real-looking catalogs -----------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["parquet", "csv", "tsv"])
@pytest.mark.parametrize("ids", ["tract-patch", "pipeline"])
def test_own_ids_located_in_file_order(tmp_path, fmt, ids):
    ra, dec = sky(20_000)
    if ids == "tract-patch":
        keys, order = tract_patch_ids(ra, dec)
        ra, dec, keys = ra[order], dec[order], keys[order]   # the files list a patch after another
    else:   # ids as a pipeline assigned them: running numbers, in processing order
        keys = 10**12 + np.arange(len(ra), dtype=np.int64)
    paths = catalog(tmp_path / "cat", keys, ra, dec, 4, fmt)
    cfg = config([tmp_path / "cat" / f"part-*.{fmt}"])
    r = read(cfg, tmp_path / "out")
    assert r["rows"] == len(keys) and r["source_files"] == 4 and r["files"] == 6
    got = rows_of(tmp_path / "out" / "input")
    chunker = Chunker(85, 12, cfg["partition"]["overlap_deg"])
    chunk, sub = chunker.locate(ra, dec)
    assert np.array_equal(got[:, 0], keys)                     # the files' order, every row once
    assert np.array_equal(got[:, 1], chunk) and np.array_equal(got[:, 2], sub)
    char = [line.split(b"\t")[0] for f in list_input(tmp_path / "out" / "input_char28")
            for line in f.read_bytes().splitlines()]
    assert char[:3] == [b"%028d" % k for k in keys[:3]]
    doc = json.loads((tmp_path / "out" / "sources.json").read_text())
    assert [f["path"] for f in doc["files"]] == [str(p) for p in paths]
    assert [f["rows"] for f in doc["files"]] == [5000] * 4
    assert all(f["bytes"] == p.stat().st_size and f["crc32"] > 0 for f, p in zip(doc["files"], paths))


def test_files_order_kept_over_many_row_groups_and_threads(tmp_path):
    """More rows than DuckDB's row groups (122,880), read with two threads: still the files' order."""
    n = 400_000
    ra, dec = sky(n, seed=8)
    keys = np.random.default_rng(8).permutation(n).astype(np.int64) + 1
    catalog(tmp_path / "cat", keys, ra, dec, 2, "parquet")
    read(config([tmp_path / "cat" / "*.parquet"], files=3, batch_rows=50_000), tmp_path / "out", threads=2)
    assert np.array_equal(rows_of(tmp_path / "out" / "input")[:, 0], keys)


def test_chunk_order_keeps_the_files_order_within_a_chunk(tmp_path):
    ra, dec = sky(12_000, seed=5)
    keys = np.random.default_rng(5).permutation(12_000).astype(np.int64) * 3 + 11
    catalog(tmp_path / "cat", keys, ra, dec, 3, "parquet")
    read(config([tmp_path / "cat" / "*.parquet"], order="generation"), tmp_path / "gen")
    read(config([tmp_path / "cat" / "*.parquet"], order="chunk"), tmp_path / "chunk")
    gen, ch = rows_of(tmp_path / "gen" / "input"), rows_of(tmp_path / "chunk" / "input")
    expect = gen[np.lexsort((np.arange(len(gen)), gen[:, 1]))]   # by chunk, then file order
    assert np.array_equal(ch, expect) and not np.array_equal(ch, gen)


def test_the_generators_ids_through_parquet_give_its_bytes(tmp_path):
    """The same ids and positions, from the generator and from a Parquet file of its
    catalog: byte-identical index input in both orders (manifests included)."""
    cfg = small_config()
    parts = build_catalog(cfg, tmp_path / "catalog")
    objects = pa.concat_tables([pq.read_table(o, columns=["objectId", "ra_PS", "decl_PS"]) for o, _ in parts])
    n = objects.num_rows
    for k in range(3):   # several files, cut anywhere: the index files' split does not follow them
        pq.write_table(objects.slice(k * n // 3, (k + 1) * n // 3 - k * n // 3), tmp_path / f"gen-{k}.parquet",
                       row_group_size=4000)
    columns = {"objectId": "objectId", "ra": "ra_PS", "dec": "decl_PS"}
    for order in ("generation", "chunk"):
        gen = tmp_path / f"generated-{order}"
        written_in_order(order, lambda num, char: generate_index(PrepareSpec.of(cfg), INDEX_FILES, num, char),
                         gen / "input", gen / "input_char28", "64MB")
        own = config([tmp_path / "gen-*.parquet"], order=order, files=INDEX_FILES, batch_rows=5000, columns=columns)
        read(own, tmp_path / f"own-{order}", threads=2)   # DuckDB's threads keep the files' order
        for sub in ("input", "input_char28"):
            a = {p.name: p.read_bytes() for p in sorted((gen / sub).iterdir())}
            b = {p.name: p.read_bytes() for p in sorted((tmp_path / f"own-{order}" / sub).iterdir())}
            assert a == b and len(a) == INDEX_FILES + 1, (order, sub)


def test_the_generators_positions_files_read_back_give_its_bytes(tmp_path):
    """``catbench index-positions`` (the benchmark's input): the generator's own ids and
    positions as Parquet files, read through index.source: file, give its index input."""
    from catbench.prepare.index_only import write_positions
    cfg = small_config()
    cfg["catalog"]["id_layout"] = "spatial"
    r = write_positions(PrepareSpec.of(cfg), 4, tmp_path / "files", workers=2)
    generate_index(PrepareSpec.of(cfg), INDEX_FILES, tmp_path / "gen" / "input", tmp_path / "gen" / "input_char28")
    read(config([tmp_path / "files" / "*.parquet"], files=INDEX_FILES, batch_rows=3000,
                columns={"objectId": "objectId", "ra": "ra", "dec": "dec"}), tmp_path / "own")
    for sub in ("input", "input_char28"):
        a = {p.name: p.read_bytes() for p in sorted((tmp_path / "gen" / sub).iterdir())}
        assert a == {p.name: p.read_bytes() for p in sorted((tmp_path / "own" / sub).iterdir())}
    assert r["files"] == 4 and r["rows"] == json.loads((tmp_path / "own" / "sources.json").read_text())["rows"]


# ---- bad input ---------------------------------------------------------------------------------------

def _good(n=3000):
    ra, dec = sky(n, seed=9)
    return {"id": np.arange(1, n + 1, dtype=np.int64), "coord_ra": ra, "coord_dec": dec}


def _with(cols: dict, name: str, row: int, value):
    """The columns with ``value`` at ``row`` (0-based) of column ``name``, as Arrow columns."""
    vals = list(cols[name])
    vals[row] = value
    out = {k: pa.array(v) for k, v in cols.items()}
    out[name] = pa.array(vals, type=pa.float64() if name != "id" else None)
    return pa.table(out)


def _text_table(cols: dict, name: str, row: int, text: str) -> pa.Table:
    out = {k: pa.array([repr(float(x)) if k != "id" else str(int(x)) for x in v]) for k, v in cols.items()}
    vals = out[name].to_pylist()
    vals[row] = text
    out[name] = pa.array(vals)
    return pa.table(out)


BAD = {   # name: (format, table maker, what the message says)
    "null ra": ("parquet", lambda c: _with(c, "coord_ra", 1234, None), "column 'coord_ra'", "row 1235", "NULL"),
    "nan dec": ("parquet", lambda c: _with(c, "coord_dec", 17, float("nan")), "column 'coord_dec'", "row 18",
                "not finite"),
    "inf ra": ("parquet", lambda c: _with(c, "coord_ra", 2999, float("inf")), "column 'coord_ra'", "row 3000",
               "not finite"),
    "dec over 90": ("parquet", lambda c: _with(c, "coord_dec", 5, 90.5), "column 'coord_dec'", "row 6",
                    "outside -90..90"),
    "ra over 360": ("parquet", lambda c: _with(c, "coord_ra", 7, 361.0), "column 'coord_ra'", "row 8",
                    "outside 0..360"),
    "id over BIGINT": ("parquet", lambda c: pa.table({**{k: pa.array(v) for k, v in c.items()}, "id": pa.array(
        [int(x) for x in c["id"][:-1]] + [2**63], pa.uint64())}), "column 'id'", "row 3000", "over BIGINT"),
    "negative id": ("parquet", lambda c: _with(c, "id", 2, -5), "column 'id'", "row 3", "negative"),
    "null id": ("parquet", lambda c: pa.table({**{k: pa.array(v) for k, v in c.items()},
                                              "id": pa.array([None] + list(c["id"][1:]), pa.int64())}),
                "column 'id'", "row 1", "NULL"),
    "csv id over BIGINT": ("csv", lambda c: _text_table(c, "id", 99, str(2**63)), "column 'id'", "row 100 (line 101)",
                           "over BIGINT"),
    "csv hex id": ("csv", lambda c: _text_table(c, "id", 99, "0x10"), "column 'id'", "row 100 (line 101)",
                   "value '0x10' is not a decimal integer"),
    "csv text in ra": ("csv", lambda c: _text_table(c, "coord_ra", 10, "12h30m"), "column 'coord_ra'",
                       "row 11 (line 12)", "not a number"),
    "csv empty dec": ("csv", lambda c: _text_table(c, "coord_dec", 2500, ""), "column 'coord_dec'",
                      "row 2501 (line 2502)", "NULL"),
    "csv dec out of range": ("csv", lambda c: _text_table(c, "coord_dec", 0, "-90.0001"), "column 'coord_dec'",
                             "row 1 (line 2)", "outside -90..90"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_values_named_by_file_column_and_row_nothing_written(tmp_path, case):
    fmt, make, column, row, why = BAD[case]
    good = tmp_path / "cat" / f"a-good.{fmt}"
    write(pa.table({k: pa.array(v) for k, v in _good().items()}), good, fmt)
    bad = tmp_path / "cat" / f"b-bad.{fmt}"
    write(make(_good()), bad, fmt)
    cfg = config([tmp_path / "cat" / f"*.{fmt}"], batch_rows=1000)
    with pytest.raises(SourceError) as e:
        read(cfg, tmp_path / "out")
    msg = str(e.value)
    assert str(bad) in msg and column in msg and f"{row}," in msg + "," and why in msg, msg
    assert not (tmp_path / "out" / "input").exists() and not (tmp_path / "out" / "input_char28").exists()
    assert not (tmp_path / "out" / "sources.json").exists() and not list((tmp_path / "out").glob(".read-*"))


@pytest.mark.parametrize("where", ["within", "across"])
def test_duplicate_ids_named_with_both_rows(tmp_path, where):
    a, b = _good(), _good()
    b["id"] = b["id"] + 10_000
    if where == "within":
        b["id"][2000] = b["id"][40]
    else:
        b["id"][2000] = a["id"][700]
    catalog_files = []
    for name, cols in (("a", a), ("b", b)):
        p = tmp_path / "cat" / f"{name}.csv"
        write(pa.table(cols), p, "csv")
        catalog_files.append(p)
    with pytest.raises(SourceError) as e:
        read(config(catalog_files), tmp_path / "out")
    msg = str(e.value)
    first = f"{catalog_files[1]} row 41 (line 42)" if where == "within" else f"{catalog_files[0]} row 701 (line 702)"
    assert "duplicate objectId" in msg and "column 'id'" in msg and first in msg and f"{catalog_files[1]} row 2001 (line 2002)" in msg, msg
    assert not (tmp_path / "out" / "input").exists()


def test_columns_checked_before_any_row_is_read(tmp_path):
    good = tmp_path / "a.parquet"
    write(pa.table(_good()), good, "parquet")
    missing = tmp_path / "b.parquet"
    write(pa.table({"id": _good()["id"], "ra": _good()["coord_ra"], "coord_dec": _good()["coord_dec"]}),
          missing, "parquet")
    with pytest.raises(SourceError, match=rf"{missing}: no column 'coord_ra' \(index.file.columns.ra\)"):
        read(config([good, missing]), tmp_path / "out")
    mistyped = tmp_path / "c.parquet"
    write(pa.table({**_good(), "id": _good()["id"].astype(np.float64)}), mistyped, "parquet")
    with pytest.raises(SourceError, match=rf"{mistyped}: column 'id' \(index.file.columns.objectId\) is double"):
        read(config([good, mistyped]), tmp_path / "out")
    header = tmp_path / "d.csv"
    header.write_text("id,coord_ra,dec\n1,2.0,3.0\n")
    with pytest.raises(SourceError, match=rf"{header}: no column 'coord_dec'"):
        read(config([header]), tmp_path / "out")
    assert not (tmp_path / "out").exists()
    with pytest.raises(SourceError, match="names no file"):
        sources({"paths": [str(tmp_path / "nothing-*.parquet")]})
    with pytest.raises(SourceError, match="listed twice"):
        sources({"paths": [str(good), str(tmp_path / "a.*")]})
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(SourceError, match="unknown format"):
        sources({"paths": [str(tmp_path / "x.json")]})
    with pytest.raises(SourceError, match=r"is a folder; give its files, e.g. '.*/\*.parquet'"):
        sources({"paths": [str(tmp_path)]})
    (tmp_path / "README.txt").write_text("these are my files\n")
    (tmp_path / "SHA256SUMS").write_text("x\n")
    assert [s.path.name for s in sources({"paths": [str(tmp_path / "*")]})] == ["a.parquet", "b.parquet",
                                                                              "c.parquet", "d.csv"]


def test_a_gz_that_is_not_or_is_cut_short_is_named(tmp_path):
    plain = tmp_path / "plain.csv.gz"
    plain.write_text("id,coord_ra,coord_dec\n1,2.0,3.0\n")
    with pytest.raises(SourceError, match=rf"{plain}: not readable as .*CSV/TSV"):
        read(config([plain]), tmp_path / "out")
    whole = tmp_path / "whole.csv"
    pcsv.write_csv(pa.table(_good(30000)), whole)
    cut = tmp_path / "cut.csv.gz"
    cut.write_bytes(gzip.compress(whole.read_bytes())[:20000])
    with pytest.raises(SourceError, match=rf"{cut}: not readable as"):
        read(config([cut]), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_gaias_ecsv_gz_is_read_with_its_header_lines_skipped(tmp_path):
    cols = _good(2000)
    body = "source_id,ra,dec\n" + "".join(f"{i},{float(r)!r},{float(d)!r}\n" for i, r, d in
                                          zip(cols["id"], cols["coord_ra"], cols["coord_dec"]))
    head = "# %ECSV 1.0\n# ---\n# delimiter: ','\n# datatype:\n# - {name: source_id, datatype: int64}\n" \
           "# - {name: ra, unit: deg, datatype: float64}\n# - {name: dec, unit: deg, datatype: float64}\n"
    gz = tmp_path / "GaiaSource_000000-003111.csv.gz"
    gz.write_bytes(gzip.compress((head + body).encode()))
    out = read(config([gz], columns={"objectId": "source_id", "ra": "ra", "dec": "dec"}), tmp_path / "out")
    assert out["rows"] == 2000 and sorted(rows_of(tmp_path / "out" / "input")[:, 0]) == list(cols["id"])
    bad = tmp_path / "bad.ecsv"
    bad.write_text(head + body.replace("\n17,", "\n,", 1))    # a NULL id on data line 17
    with pytest.raises(SourceError, match=rf"{bad}: row 17 \(line 25\), column 'source_id'"):
        read(config([bad], columns={"objectId": "source_id", "ra": "ra", "dec": "dec"}), tmp_path / "out2")


def test_rows_counted_from_footers_and_a_changed_file_named(tmp_path):
    paths = catalog(tmp_path, np.arange(9000, dtype=np.int64), *sky(9000), 3, "parquet")
    section = config(paths)["index"]["file"]
    assert total_rows(section) == 9000
    was = [{"path": p, "bytes": b, "mtime_ns": m, "crc32": c} for p, b, m, c in fingerprint(sources(section))]
    assert changed(was, fingerprint(sources(section))) == []
    write(pa.table(_good(10)), paths[1], "parquet")
    lines = changed(was, fingerprint(sources(section)))
    assert len(lines) == 1 and str(paths[1]) in lines[0] and "changed" in lines[0]


def test_a_file_rewritten_with_its_size_and_mtime_kept_is_seen_by_its_content(tmp_path):
    """touch -r after an edit: the ctime moved, so the CRC-32 is taken again and differs."""
    path = tmp_path / "a.csv"
    path.write_text("id,coord_ra,coord_dec\n1,10.5,2.25\n2,11.5,3.25\n")
    src = sources({"paths": [str(path)]})
    st = path.stat()
    first = fingerprint(src)
    record = [{"path": first[0][0], "bytes": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns,
               "crc32": first[0][3]}]
    assert fingerprint(src, record) == first and changed(record, first) == []
    path.write_text("id,coord_ra,coord_dec\n1,10.5,2.25\n2,11.5,3.75\n")     # one value, same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))                        # as touch -r does
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    now = fingerprint(src, record)
    assert now != first and "its content: CRC-32" in changed(record, now)[0]


# ---- the study end to end on a real server -----------------------------------------------------------

@pytest.mark.slow
@pytest.mark.server
def test_study_from_own_files_end_to_end(tmp_path):
    """config/own-ids.yaml at a tiny scale on Parquet and CSV files with tract/patch ids:
    the index read from them, the loads of both variants on a real server (checksums equal
    to the input's), the working set predicted from those ids, the tables and the report;
    then a file with a NULL makes the read fail, naming it, with no index input left."""
    disk = Path(tempfile.mkdtemp(prefix="cbown-", dir="/tmp"))   # short: socket paths
    try:
        ra, dec = sky(30_000, seed=21)
        keys, order = tract_patch_ids(ra, dec)
        ra, dec, keys = ra[order], dec[order], keys[order]
        wd = tmp_path / "wd"
        catalog(wd / "cat", keys[:15_000], ra[:15_000], dec[:15_000], 3, "parquet")
        catalog(wd / "cat" / "csv", keys[15_000:], ra[15_000:], dec[15_000:], 2, "csv")
        cfg = yaml.safe_load((REPO / "config" / "own-ids.yaml").read_text())
        cfg.update(run="own", stages=["load_index"], targets={"disk": {"path": str(disk)}})
        cfg["index"]["file"].update(paths=["cat/*.parquet", "cat/csv/*.csv"], columns=COLUMNS, batch_rows=4000)
        cfg["partition"]["index_files"] = 5
        cfg["load"].update(strategies=["one-file-at-a-time", "sorted"], repetitions=1, lookup_count=100,
                           optimize_limit_s=1, sample_interval_s=0.2, chunk_rows=5000, time_limit_s=300)
        cfgfile = tmp_path / "c.yaml"
        cfgfile.write_text(yaml.safe_dump(cfg))
        r = snakemake(wd, cfgfile, "--cores", "2")
        out = r.stdout + r.stderr
        assert r.returncode == 0, out[-5000:]
        res = wd / "results" / "own"
        assert not (res / "catalog").exists() and not (res / "chunks").exists()
        got = rows_of(res / "index" / "input")
        assert len(got) == 30_000 and len(np.unique(got[:, 0])) == 30_000
        assert np.all(np.diff(got[:, 1]) >= 0)                       # index.order: chunk
        assert sorted(got[:, 0].tolist()) == sorted(keys.tolist())
        src = json.loads((res / "index" / "sources.json").read_text())
        assert [f["rows"] for f in src["files"]] == [5000] * 3 + [7500] * 2
        for v in ("char28", "bigint"):
            for s in ("one-file-at-a-time", "sorted"):
                summary = json.loads((res / "load" / "disk" / v / "innodb" / s / "summary.json").read_text())
                assert summary["checksum_ok"] and summary["rows"] == 30_000
        ws = json.loads((res / "index" / "working_set.json").read_text())
        assert ws["id_layout"] == "own" and ws["rows"] == 30_000 and ws["order"] == "chunk"
        assert "index_read" in (res / "tables" / "stages.csv").read_text()
        assert "index.source: file" in (res / "tables" / "summary.md").read_text()
        assert (res / "report" / "index.html").is_file()
        assert not server_procs(disk)
        # a bad row in a new file: the read fails naming it; the old index input does not stay
        bad = wd / "cat" / "csv" / "z.csv"
        bad.write_text("id,coord_ra,coord_dec\n1,10.0,5.0\n2,,6.0\n")
        r = snakemake(wd, cfgfile, "--cores", "2", "index_read")
        out = r.stdout + r.stderr
        log = (res / "logs" / "index" / "read.log").read_text()
        assert r.returncode != 0 and f"{bad}: row 2 (line 3), column 'coord_ra'" in log and "NULL" in log, out[-3000:]
        assert not (res / "index" / "input").exists() and not (res / "index" / "sources.json").exists()
    finally:
        kill_servers(disk)   # only this test's servers, by pid
        shutil.rmtree(disk, ignore_errors=True)


@pytest.mark.slow
def test_missing_column_refused_before_any_job(tmp_path):
    wd = tmp_path / "wd"
    write(pa.table(_good()), wd / "cat" / "a.parquet", "parquet")
    cfg = yaml.safe_load((REPO / "config" / "own-ids.yaml").read_text())
    cfg.update(targets={"disk": {"path": str(tmp_path / "t")}})
    cfg["index"]["file"].update(paths=["cat/*.parquet"], columns={**COLUMNS, "dec": "decl"})
    cfgfile = tmp_path / "c.yaml"
    cfgfile.write_text(yaml.safe_dump(cfg))
    refusal = check(wd, cfgfile, "--cores", "1").refusal
    assert "nothing was started" in refusal
    assert f"{wd / 'cat' / 'a.parquet'}: no column 'decl' (index.file.columns.dec)" in refusal, refusal
    cfg["stages"] = ["load_index", "queries"]
    cfg["index"]["file"]["columns"] = COLUMNS
    cfgfile.write_text(yaml.safe_dump(cfg))
    refusal = check(wd, cfgfile, "--cores", "1").refusal
    assert all(s in refusal for s in ("config key 'index.source': file", "chunk files")), refusal


def test_preset_is_complete_and_plans_the_read_alone(tmp_path):
    """config/own-ids.yaml: a complete config (base null) whose plan reads the files, makes
    no catalog or chunks, and counts the files' rows (from the Parquet footers)."""
    from catbench.core.infra.config import layered
    from catbench.core.infra.jobs import plan as cb_plan
    from catbench.core.infra.jobs.sizing import RunSizes
    raw = yaml.safe_load((REPO / "config" / "own-ids.yaml").read_text())
    assert raw["base"] is None and validate(layered(raw, REPO)) == validate(raw)
    catalog(tmp_path, np.arange(1, 7001, dtype=np.int64), *sky(7000), 2, "parquet")
    raw["index"]["file"]["paths"] = [str(tmp_path / "*.parquet")]
    raw["index"]["file"]["columns"] = COLUMNS
    cfg = validate(raw)
    counts = cb_plan.job_counts(RunSizes.of(cfg), loads=6)
    assert counts["index"] == {"index_read": 1} and "catalog" not in counts and "partition" not in counts
    assert cb_plan.plan(RunSizes.of(cfg), [("innodb", True)] * 6, time_limit_s=None)["index_rows"] == 7000
