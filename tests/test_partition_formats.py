"""Chunk file formats (config partition.formats) and how TSV lines are made: glued from the
text the catalog stage wrote (each value formatted once) or formatted in the reduce, the
same bytes either way; a job that partitions imports neither pandas nor polars."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from catbench.core.infra.config import ConfigError, validate
from catbench.prepare import partition as part_mod
from catbench.prepare.rowtext import TextWriter, column_text
from catbench.prepare.spec import PrepareSpec
from support.catalog import (
    build_catalog,
    chunk_files,
    part_texts,
    run_partition,
    small_config,
    text_paths,
)
from support.paths import ENV, VENV_BIN

GROUPS = 2
KINDS = (("Object", "main"), ("Object", "overlap"), ("Source", "main"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("formats")
    cfg = small_config()
    parts = build_catalog(cfg, root / "catalog")
    both = ("Object", "Source")
    out = {name: run_partition(cfg, parts, root / name, GROUPS, formats, text, tables)
           for name, formats, text, tables in (
               ("glued", ("tsv", "parquet"), True, both),
               ("formatted", ("tsv", "parquet"), False, both),
               # Sources without part text: their varying columns formatted by the reduce
               ("source_formatted", ("tsv", "parquet"), True, ("Object",)),
               ("source_formatted_tsv", ("tsv",), True, ("Object",)),
               ("tsv", ("tsv",), True, both), ("parquet", ("parquet",), True, both))}
    # Every column decoded from the parts, none taken from the patch (SharedRows)
    out["decoded"] = run_partition(cfg, parts, root / "decoded", GROUPS, patch=False)
    out["decoded_formatted"] = run_partition(cfg, parts, root / "decoded_formatted", GROUPS,
                                             text=False, patch=False)
    return {"cfg": cfg, "parts": parts, **out}


def manifest(root: Path):
    rows = []
    for g in range(GROUPS):
        lines = (root / f"chunks/groups/group-{g:05d}.tsv").read_text().splitlines()
        rows += [dict(zip(lines[0].split("\t"), line.split("\t"))) for line in lines[1:]]
    return rows


@pytest.mark.parametrize("other", ["formatted", "source_formatted", "source_formatted_tsv"])
def test_glued_text_is_the_formatted_text_byte_for_byte(runs, other):
    for table, kind in KINDS:
        glued = chunk_files(runs["glued"], table, kind, "tsv")
        formatted = chunk_files(runs[other], table, kind, "tsv")
        assert set(glued) == set(formatted) and len(glued) > 5
        for cid, path in glued.items():
            assert path.read_bytes() == formatted[cid].read_bytes(), path.name
        parquet = chunk_files(runs[other], table, kind)
        assert set(parquet) == (set() if other.endswith("_tsv") else set(glued))
        for cid, path in parquet.items():
            assert path.read_bytes() == chunk_files(runs["glued"], table, kind)[cid].read_bytes()


def test_one_format_writes_only_that_format(runs):
    full = runs["glued"]
    for fmt, other in (("tsv", "parquet"), ("parquet", "tsv")):
        root = runs[fmt]
        for table, kind in KINDS:
            assert not chunk_files(root, table, kind, other), f"{fmt} only wrote {other} files"
            mine, ref = chunk_files(root, table, kind, fmt), chunk_files(full, table, kind, fmt)
            assert set(mine) == set(ref)
            for cid, path in mine.items():
                assert path.read_bytes() == ref[cid].read_bytes()
        # the manifest counts the same rows; the format that is off has 0 bytes
        rows, ref = manifest(root), manifest(full)
        assert [(r["chunkId"], r["table"], r["rows"]) for r in rows] == \
               [(r["chunkId"], r["table"], r["rows"]) for r in ref]
        assert all(r[f"{other}_bytes"] == "0" and int(r[f"{fmt}_bytes"]) >= 0 for r in rows)
        assert any(int(r[f"{fmt}_bytes"]) > 0 for r in rows)


def test_text_files_of_another_patch_are_refused(runs, tmp_path):
    parts = runs["parts"]
    bad = tmp_path / "Object.text.arrow"
    patch = pq.read_table(parts[0][0]).slice(0, 10)
    with TextWriter(bad, 3, 10) as w:  # a 10-row "patch": not the one the parts repeat
        w.write(column_text(patch.column(5)))
    staging = sorted((runs["glued"] / "staging").glob("part-*"))
    shared = text_paths(*(p.parent.parent / "patch" / f"{t}.parquet" for p, t in zip(parts[0], ("Object", "Source"))))
    with pytest.raises(ValueError, match="do not describe the same patch"):
        part_mod.reduce_group(staging, parts, 0, tmp_path / "chunks", tmp_path / "m.tsv", ("tsv",),
                              part_mod.Prepared([part_texts(o, s) for o, s in parts], [bad, shared[1]]))
    assert not (tmp_path / "m.tsv").exists()
    assert not list((tmp_path / "chunks").rglob("*.tmp-*"))  # no temporary file left
    # the text of another part (other row count) is refused too
    texts = [part_texts(o, s) for o, s in parts]
    texts[0], texts[-1] = texts[-1], texts[0]
    assert pq.ParquetFile(parts[0][0]).metadata.num_rows != pq.ParquetFile(parts[-1][0]).metadata.num_rows
    with pytest.raises(ValueError, match="holds the text of"):
        part_mod.reduce_group(staging, parts, 0, tmp_path / "c2", tmp_path / "m.tsv", ("tsv",),
                              part_mod.Prepared(texts, shared))


def test_queries_stage_needs_both_formats():
    for formats, missing in ((["parquet"], "tsv"), (["tsv"], "parquet")):
        with pytest.raises(ConfigError, match=f"config key 'partition.formats'.*lacks {missing}"):
            validate({"partition": {"formats": formats}, "stages": ["queries"]})
        assert validate({"partition": {"formats": formats}, "stages": ["fio"]})["partition"]["formats"] == formats
    assert validate({})["partition"]["formats"] == ["tsv", "parquet"]


def test_a_jobs_config_slice_with_one_format_is_valid(tmp_path):
    """A rule gives its job only the sections it reads (no `stages`): the run's own
    validation judged formats against stages, so a map job with formats [tsv] starts."""
    with pytest.raises(ConfigError, match="lacks parquet"):
        validate({"partition": {"formats": ["tsv"]}})          # a whole config: default stages
    assert validate({"partition": {"formats": ["tsv"]}}, whole=False)["partition"]["formats"] == ["tsv"]
    with pytest.raises(ConfigError, match="lacks parquet"):   # a slice that has stages is checked
        validate({"partition": {"formats": ["tsv"]}, "stages": ["queries"]}, whole=False)
    r = subprocess.run([str(VENV_BIN / "catbench"), "validate", "--config",
                        json.dumps({"partition": {"formats": ["tsv"]}, "catalog": {}})],
                       capture_output=True, text=True, env=ENV)
    assert r.returncode == 0, r.stderr


def _imports_after_partitioning(cfg, parts, tmp_path, texts) -> list[list[str]]:
    """Which of pandas, polars, pyarrow.compute (and the MySQL client, numpy.ma, psutil,
    0.02-0.07 s each) a fresh process has imported after the map,
    the index input and a reduce that glues the catalog's text, and then after a reduce
    without text files (which formats every value); both reduces' manifests must agree."""
    o, s = parts[1]
    code = f"""
import json, sys
from catbench.prepare import partition as p
from catbench.prepare.spec import PrepareSpec
def loaded():
    print(sorted(m for m in ("pandas", "polars", "pyarrow.compute", "mysql.connector", "numpy.ma",
                             "psutil") if m in sys.modules))
cfg = json.loads({repr(__import__("json").dumps(cfg))})
p.map_part(PrepareSpec.of(cfg), {str(o)!r}, {str(s)!r}, {str(tmp_path / "st")!r}, 1)
p.write_index_input([{str(tmp_path / "st")!r}], 2, {str(tmp_path / "i")!r}, {str(tmp_path / "j")!r})
p.reduce_group([{str(tmp_path / "st")!r}], [({str(o)!r}, {str(s)!r})], 0, {str(tmp_path / "ch")!r},
               {str(tmp_path / "m.tsv")!r}, prepared=p.Prepared(texts=[{[t and str(t) for t in texts]!r}],
               shared_texts={[str(x) for x in text_paths(o.parent.parent / "patch/Object.parquet",
                                                         s.parent.parent / "patch/Source.parquet")]!r}))
loaded()
p.reduce_group([{str(tmp_path / "st")!r}], [({str(o)!r}, {str(s)!r})], 0, {str(tmp_path / "ch2")!r},
               {str(tmp_path / "m2.tsv")!r})  # no text files: polars formats every value
loaded()
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "m.tsv").read_text() == (tmp_path / "m2.tsv").read_text()
    return [eval(line) for line in r.stdout.splitlines()]


def test_partition_jobs_import_neither_pandas_nor_polars(runs, tmp_path):
    """pyarrow imports pandas on its first array made from or turned into numpy (0.3 CPU-s
    a job start) and pyarrow.compute builds 300 wrappers on import: partitioning uses
    neither (prepare/arrays.py), nor polars when it only glues the catalog's text (Object
    rows); a table without part text files has its varying columns formatted, by polars."""
    o, s = runs["parts"][1]
    glued, formatted = _imports_after_partitioning(runs["cfg"], runs["parts"], tmp_path / "all",
                                                   part_texts(o, s, ("Object", "Source")))
    assert (glued, formatted) == ([], ["polars"])
    glued, _ = _imports_after_partitioning(runs["cfg"], runs["parts"], tmp_path / "obj",
                                           part_texts(o, s, ("Object",)))
    assert glued == ["polars"]


def test_lines_made_in_batches_are_the_same_bytes(runs, tmp_path, monkeypatch):
    monkeypatch.setattr(part_mod, "TEXT_BATCH", 777)  # batches end inside chunks and tables
    monkeypatch.setattr(part_mod, "PATCH_ROWS_PER_BATCH", 0)
    for text, tables in ((True, ("Object", "Source")), (True, ("Object",)), (False, ())):
        root = run_partition(runs["cfg"], runs["parts"], tmp_path / f"{text}{len(tables)}", GROUPS,
                             ("tsv",), text, tables)
        for table, kind in KINDS:
            ref = chunk_files(runs["glued"], table, kind, "tsv")
            mine = chunk_files(root, table, kind, "tsv")
            assert set(mine) == set(ref)
            assert all(p.read_bytes() == ref[c].read_bytes() for c, p in mine.items())


def test_parts_mapped_on_threads_are_the_same_bytes(runs, tmp_path, monkeypatch):
    """Parts mapped 2 at a time write the staging, and so every chunk file and manifest,
    byte for byte as parts mapped one after the other."""
    monkeypatch.setattr(part_mod, "TEXT_BATCH", 777)  # many text batches, appended in turn
    monkeypatch.setattr(part_mod, "PATCH_ROWS_PER_BATCH", 0)
    cfg, parts = runs["cfg"], runs["parts"]
    part_mod.map_parts(PrepareSpec.of(cfg), parts, tmp_path / "staging", GROUPS, threads=2)
    staging = [tmp_path / "staging" / Path(o).stem for o, _ in parts]
    texts = [part_texts(o, s, ("Object", "Source")) for o, s in parts]
    shared = text_paths(*(p.parent.parent / "patch" / f"{t}.parquet"
                          for p, t in zip(parts[0], ("Object", "Source"))))
    for g in range(GROUPS):
        part_mod.reduce_group(staging, parts, g, tmp_path / "chunks",
                              tmp_path / f"chunks/groups/group-{g:05d}.tsv",
                              part_mod.FORMATS, part_mod.Prepared(texts, shared))
    ref = runs["glued"]
    files = sorted(p.relative_to(ref) for p in (ref / "chunks").rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(tmp_path) for p in (tmp_path / "chunks").rglob("*") if p.is_file())
    assert all((tmp_path / f).read_bytes() == (ref / f).read_bytes() for f in files)


@pytest.mark.parametrize("patched, decoded", [("glued", "decoded"), ("formatted", "decoded_formatted")])
def test_shared_columns_from_the_patch_are_the_decoded_bytes(runs, patched, decoded):
    """Taking a part's shared columns from the patch writes the bytes of decoding them."""
    for table, kind in KINDS:
        for fmt in ("parquet", "tsv"):
            mine, ref = chunk_files(runs[patched], table, kind, fmt), chunk_files(runs[decoded], table, kind, fmt)
            assert set(mine) == set(ref) and len(mine) > 5
            assert all(p.read_bytes() == ref[c].read_bytes() for c, p in mine.items()), (table, kind, fmt)


def test_a_part_that_is_not_made_of_the_patch_is_refused(runs, tmp_path):
    """A catalog part whose rows are not whole copies of the patch given is named, with
    what to do, before anything is written (its shared columns would be wrong)."""
    parts = runs["parts"]
    patch = pq.read_table(parts[0][0].parent.parent / "patch/Object.parquet")
    short = tmp_path / "patch/Object.parquet"
    short.parent.mkdir()
    pq.write_table(patch.slice(1), short)
    staging = [runs["glued"] / f"staging/part-{k:05d}" for k in range(len(parts))]
    # the patch it should copy and its rows, the stage that rewrites it
    with pytest.raises(ValueError, match=rf"{re.escape(str(short))} \({patch.num_rows - 1} rows\).*catalog stage"):
        part_mod.reduce_group(staging, parts, 0, tmp_path / "chunks", tmp_path / "m.tsv",
                              ("parquet",), part_mod.Prepared(patches=[short, parts[0][1].parent.parent / "patch/Source.parquet"]))
    assert not (tmp_path / "m.tsv").exists()
    assert not list((tmp_path / "chunks").rglob("*.parquet"))


@pytest.mark.parametrize("slots", [1 << 20, 0])  # a slot per pair, or pairs sorted
@pytest.mark.parametrize("chunks, subs", [
    ([7, 7, 7, 9, 9, 7, 3], [0, 5, 0, 1, 1, 5, 2]),
    ([0, 0, 5000, 5000, 9000, 17000], [4000, 0, 4000, 1, 0, 4000]),
])
def test_location_text_is_each_rows_chunk_and_sub_chunk(chunks, subs, slots, monkeypatch):
    import numpy as np
    from catbench.prepare import rowtext

    monkeypatch.setattr(rowtext, "DENSE_SLOTS", slots)
    text, index = rowtext.location_text(np.array(chunks), np.array(subs))
    got = [text[int(i)].as_py() for i in index]
    assert got == [f"\t{c}\t{s}\n" for c, s in zip(chunks, subs)]
    assert len(text) == len(set(zip(chunks, subs)))
