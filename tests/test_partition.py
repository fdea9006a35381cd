"""Partition stage (map per catalog part, reduce per chunk group, index input) on a small
real catalog: conservation, locations, overlap, TSV round trip, index input files."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from catbench.core.infra.config import validate
from catbench.prepare import catalog as cat_mod
from catbench.prepare import partition as part_mod
from catbench.prepare import staging as staging_mod
from catbench.prepare.chunker import Chunker, CoordinateError
from catbench.prepare.ids import IdLayout
from catbench.prepare.spec import CatalogSpec, PrepareSpec
from support.catalog import (
    GROUPS,
    INDEX_FILES,
    chunk_files,
    part_texts,
    read_tsv,
    run_partition,
    small_config,
    text_paths,
)
from support.faultkit import dead_pid
from support.sky import brute_force_overlap


def read_all(files: dict) -> pa.Table:
    return pa.concat_tables([pq.read_table(p) for _, p in sorted(files.items())])


def test_every_object_in_exactly_one_chunk_at_its_location(partitioned):
    root, objs, ch = partitioned["root"], partitioned["objects"], partitioned["chunker"]
    files = chunk_files(root, "Object", "main")
    assert len(files) > 10
    seen = []
    for cid, p in files.items():
        t = pq.read_table(p)
        assert t.num_rows > 0
        assert t.schema.names[-2:] == ["chunkId", "subChunkId"]
        assert np.all(t["chunkId"].to_numpy() == cid)
        # location = Chunker.locate of the row's own coordinates
        c, s = ch.locate(t["ra_PS"].to_numpy(), t["decl_PS"].to_numpy())
        assert np.array_equal(c, t["chunkId"].to_numpy())
        assert np.array_equal(s, t["subChunkId"].to_numpy())
        seen.append(t["objectId"].to_numpy())
    seen = np.concatenate(seen)
    assert len(seen) == objs.num_rows
    assert len(np.unique(seen)) == len(seen)
    assert set(seen.tolist()) == set(objs["objectId"].to_numpy().tolist())
    # chunk ids are exactly those the catalog's positions locate to
    c, _ = ch.locate(objs["ra_PS"].to_numpy(), objs["decl_PS"].to_numpy())
    assert set(files) == set(np.unique(c).tolist())


def test_chunk_rows_keep_all_columns_and_generation_order(partitioned):
    root, objs = partitioned["root"], partitioned["objects"]
    order = {int(k): i for i, k in enumerate(objs["objectId"].to_numpy())}
    for cid, p in chunk_files(root, "Object", "main").items():
        t = pq.read_table(p)
        idx = np.array([order[int(k)] for k in t["objectId"].to_numpy()])
        assert np.all(np.diff(idx) > 0), f"chunk {cid} not in generation order"
        # the row content is the catalog's row, unchanged
        assert t.drop_columns(["chunkId", "subChunkId"]).equals(objs.take(idx))


def test_sources_conserved_and_follow_their_object(partitioned):
    root, objs, srcs = partitioned["root"], partitioned["objects"], partitioned["sources"]
    obj_chunks = read_all(chunk_files(root, "Object", "main"))
    loc = {int(k): (int(c), int(s)) for k, c, s in zip(obj_chunks["objectId"].to_numpy(),
                                                       obj_chunks["chunkId"].to_numpy(),
                                                       obj_chunks["subChunkId"].to_numpy())}
    files = chunk_files(root, "Source", "main")
    total = 0
    ids = []
    for cid, p in files.items():
        t = pq.read_table(p)
        assert t.schema.names[-2:] == ["chunkId", "subChunkId"]
        assert np.all(t["chunkId"].to_numpy() == cid)
        for o, c, s in zip(t["objectId"].to_numpy(), t["chunkId"].to_numpy(),
                           t["subChunkId"].to_numpy()):
            assert loc[int(o)] == (int(c), int(s))
        total += t.num_rows
        ids.append(t["sourceId"].to_numpy())
    ids = np.concatenate(ids)
    assert total == srcs.num_rows > objs.num_rows
    assert len(np.unique(ids)) == len(ids)
    assert set(ids.tolist()) == set(srcs["sourceId"].to_numpy().tolist())


def test_overlap_files_hold_exactly_the_predicted_rows(partitioned):
    root, objs, ch = partitioned["root"], partitioned["objects"], partitioned["chunker"]
    ra, dec = objs["ra_PS"].to_numpy(), objs["decl_PS"].to_numpy()
    rows, c, s = ch.overlap_locations(ra, dec)  # one call over the whole catalog
    oid = objs["objectId"].to_numpy()
    expect = sorted(zip(oid[rows].tolist(), c.tolist(), s.tolist()))
    assert len(expect) > 100
    files = chunk_files(root, "Object", "overlap")
    got = []
    for cid, p in files.items():
        t = pq.read_table(p)
        assert t.schema.names[-2:] == ["chunkId", "subChunkId"]
        assert np.all(t["chunkId"].to_numpy() == cid)
        got += zip(t["objectId"].to_numpy().tolist(), t["chunkId"].to_numpy().tolist(),
                   t["subChunkId"].to_numpy().tolist())
        # rows are copies of the Object rows (same columns, same values)
        idx = np.searchsorted(oid, t["objectId"].to_numpy(), sorter=np.argsort(oid))
        idx = np.argsort(oid)[idx]
        assert t.drop_columns(["chunkId", "subChunkId"]).equals(objs.take(idx))
    assert sorted(got) == expect  # no row missing, none extra, none twice
    # every chunk with Objects has an overlap file (possibly empty)
    assert set(chunk_files(root, "Object", "main")) <= set(files)
    # overlap wraps around ra = 0: objects at ra ~0 land in chunks near ra 360
    assert any(ch.sub_chunk_box(ci, si)[1] > 350 for _, ci, si in expect)


def test_overlap_rows_agree_with_brute_force_sample(partitioned):
    """Independent check of the per-row overlap on a sample near sub-chunk edges."""
    import lsst.sphgeom as sg
    root, ch = partitioned["root"], partitioned["chunker"]
    cfg = partitioned["cfg"]["partition"]
    ref = sg.Chunker(cfg["num_stripes"], cfg["num_sub_stripes_per_stripe"])
    ov = read_all(chunk_files(root, "Object", "overlap"))
    got = {}
    for o, c, s in zip(ov["objectId"].to_numpy(), ov["chunkId"].to_numpy(),
                       ov["subChunkId"].to_numpy()):
        got.setdefault(int(o), set()).add((int(c), int(s)))
    objs = partitioned["objects"]
    rng = np.random.default_rng(0)
    # half from rows that have overlap, half random
    with_ov = np.flatnonzero(np.isin(objs["objectId"].to_numpy(), list(got)))
    sample = np.r_[rng.choice(with_ov, 150, replace=False),
                   rng.choice(objs.num_rows, 150, replace=False)]
    for i in sample:
        ra, dec = objs["ra_PS"][int(i)].as_py(), objs["decl_PS"][int(i)].as_py()
        expect = brute_force_overlap(ref, ch, ra, dec, cfg["overlap_deg"])
        assert got.get(objs["objectId"][int(i)].as_py(), set()) == expect


def test_tsv_files_parse_back_to_the_parquet_values(partitioned):
    root = partitioned["root"]
    n = 0
    for table, kind in (("Object", "main"), ("Object", "overlap"), ("Source", "main")):
        pqf = chunk_files(root, table, kind)
        tsv = chunk_files(root, table, kind, "tsv")
        assert set(pqf) == set(tsv)
        for cid, p in pqf.items():
            t = pq.read_table(p)
            text = tsv[cid].read_text()
            lines = text.splitlines()
            assert len(lines) == t.num_rows  # no header
            if t.num_rows == 0:
                continue
            assert lines[0].count("\t") == t.num_columns - 1
            assert not lines[0].split("\t")[0].isalpha()
            back = read_tsv(tsv[cid], t.schema)
            assert back.equals(t), f"{tsv[cid]} differs from {p}"
            n += 1
            # and by plain Python float(): doubles round-trip exactly
            first = lines[0].split("\t")
            for k, f in enumerate(t.schema):
                if f.type == pa.float64():
                    assert float(first[k]) == t[k][0].as_py()
    assert n > 20


def test_manifests_count_the_rows(partitioned):
    root = partitioned["root"]
    rows = {"Object": 0, "ObjectOverlap": 0, "Source": 0}
    for g in range(GROUPS):
        lines = (root / f"chunks/groups/group-{g:05d}.tsv").read_text().splitlines()
        assert lines[0].split("\t") == ["chunkId", "table", "rows", "parquet_bytes", "tsv_bytes"]
        for line in lines[1:]:
            cid, table, n, pb, tb = line.split("\t")
            assert part_mod.group_table(PrepareSpec.of(partitioned["cfg"]), GROUPS)[int(cid)] == g
            rows[table] += int(n)
            assert int(pb) > 0
    assert rows["Object"] == partitioned["objects"].num_rows
    assert rows["Source"] == partitioned["sources"].num_rows
    assert rows["ObjectOverlap"] == len(read_all(chunk_files(root, "Object", "overlap")))


def test_groups_are_balanced_ra_wedges(partitioned):
    """Groups are ra wedges of the sky region by chunk centre, cut at equal expected rows:
    monotonic in ra, each holding a fair share of the Objects."""
    cfg, ch = partitioned["cfg"], partitioned["chunker"]
    chunk_id, _ = ch.locate(partitioned["objects"]["ra_PS"].to_numpy(), partitioned["objects"]["decl_PS"].to_numpy())
    groups = part_mod.group_table(PrepareSpec.of(cfg), GROUPS)[chunk_id]
    counts = np.bincount(groups, minlength=GROUPS)
    assert counts.min() > 0.5 * counts.mean(), counts
    ids = np.unique(chunk_id)
    centre, g = ch.chunk_ra_centre(ids), part_mod.group_table(PrepareSpec.of(cfg), GROUPS)[ids]
    for stripe in np.unique(ids // (2 * ch.num_stripes)):
        m = ids // (2 * ch.num_stripes) == stripe
        assert np.all(np.diff(g[m][np.argsort(centre[m])]) >= 0)
    assert np.all(np.diff(g[np.lexsort((ids, centre))]) >= 0)     # one wedge order overall


def test_groups_follow_the_expected_rows_of_a_skewed_sky():
    """With the galactic model, crowded chunks make narrow wedges: every group's expected
    rows are within a chunk's of the mean (not the equal-wedge split)."""
    cfg = small_config()
    cfg["catalog"]["sky"].update(ra_min_deg=80, ra_max_deg=130)   # across the galactic plane
    cfg["catalog"]["density"]["model"] = "galactic"
    rows = part_mod.expected_chunk_rows(PrepareSpec.of(cfg))
    assert rows.sum() == pytest.approx(cat_mod.copy_layout(cfg["catalog"])["keep"].sum() * 4)
    ids = np.flatnonzero(rows)
    assert rows[ids].max() > 1.5 * np.median(rows[ids])               # skewed
    per_group = np.bincount(part_mod.group_table(PrepareSpec.of(cfg), 4)[ids], rows[ids], minlength=4)
    assert np.all(np.abs(per_group - per_group.mean()) <= rows.max()), per_group


def test_a_chunk_bigger_than_the_bound_partitions_the_same_with_rows_held_bounded(partitioned, tmp_path):
    """max_rows_per_group smaller than a chunk: the reduce takes that chunk in slices
    (its Parquet file a row group at a time), holds at most the bound, and writes the same
    bytes as the unbounded reduce; a row group size below the chunk's rows is exercised."""
    staging = sorted((partitioned["root"] / "staging").glob("part-*"))
    parts = partitioned["parts"]
    texts = [part_texts(o, s) for o, s in parts]
    shared = text_paths(*(p.parent.parent / "patch" / f"{t}.parquet" for p, t in zip(parts[0], ("Object", "Source"))))
    patches = [p.parent.parent / "patch" / f"{t}.parquet" for p, t in zip(parts[0], ("Object", "Source"))]
    out = {}
    for name, bound in (("free", 10 ** 12), ("bounded", 700)):
        root = tmp_path / name
        r = part_mod.reduce_group(staging, parts, 0, root / "chunks", root / "m.tsv", part_mod.FORMATS,
                                  part_mod.Prepared(texts, shared, patches), part_mod.Bound(bound, 256))
        out[name] = (root, r)
    r = out["bounded"][1]
    assert r["largest_chunk_rows"] > 700 and r["passes"] > 1
    assert 0 < r["peak_rows_held"] <= 700
    assert out["free"][1]["peak_rows_held"] > 700
    files = sorted(p.relative_to(out["free"][0]) for p in out["free"][0].rglob("chunk_*"))
    assert files
    for f in files:
        assert (out["bounded"][0] / f).read_bytes() == (out["free"][0] / f).read_bytes(), f
    assert (out["bounded"][0] / "m.tsv").read_bytes() == (out["free"][0] / "m.tsv").read_bytes()
    big = max(files, key=lambda f: pq.ParquetFile(out["free"][0] / f).metadata.num_rows if f.suffix == ".parquet" else 0)
    ref = tmp_path / "ref.parquet"        # one table written at once: the same bytes
    pq.write_table(pq.read_table(out["free"][0] / big), ref, row_group_size=256, use_dictionary=False,
                   compression="none")
    assert pq.ParquetFile(ref).metadata.num_row_groups > 1
    assert ref.read_bytes() == (out["free"][0] / big).read_bytes()


def test_the_map_records_the_bound_for_the_reduce(partitioned):
    staging = sorted((partitioned["root"] / "staging").glob("part-*"))
    assert staging_mod.recorded_bound(staging) == partitioned["cfg"]["partition"]["max_rows_per_group"]


def test_reduce_needs_the_catalog_part_of_every_staging_dir(partitioned, tmp_path):
    staging = sorted((partitioned["root"] / "staging").glob("part-*"))
    with pytest.raises(ValueError, match="staging dirs but"):
        part_mod.reduce_group(staging, partitioned["parts"][:-1], 0, tmp_path, tmp_path / "m.tsv")
    assert not (tmp_path / "m.tsv").exists()


def test_chunk_files_do_not_depend_on_the_number_of_groups(partitioned, tmp_path):
    other = run_partition(partitioned["cfg"], partitioned["parts"], tmp_path, groups=1)
    for table, kind in (("Object", "main"), ("Object", "overlap"), ("Source", "main")):
        a, b = chunk_files(partitioned["root"], table, kind), chunk_files(other, table, kind)
        assert set(a) == set(b)
        for cid in a:
            assert pq.read_table(a[cid]).equals(pq.read_table(b[cid]))
            ta = chunk_files(partitioned["root"], table, kind, "tsv")[cid].read_bytes()
            assert ta == chunk_files(other, table, kind, "tsv")[cid].read_bytes()


def index_rows(folder: Path):
    files = sorted(folder.glob("part-*.tsv"))
    rows = [line.split("\t") for f in files for line in f.read_text().splitlines()]
    return files, rows


def test_index_input_files(partitioned):
    root, objs, ch = partitioned["root"], partitioned["objects"], partitioned["chunker"]
    oid = objs["objectId"].to_numpy()
    c, s = ch.locate(objs["ra_PS"].to_numpy(), objs["decl_PS"].to_numpy())
    files, rows = index_rows(root / "index/input")
    assert [f.name for f in files] == [f"part-{k:05d}.tsv" for k in range(INDEX_FILES)]
    sizes = [len(f.read_text().splitlines()) for f in files]
    assert max(sizes) - min(sizes) <= 1  # evenly split
    assert all(len(r) == 3 for r in rows)
    # concatenated in file order = the catalog's objects in generation order
    assert [int(r[0]) for r in rows] == oid.tolist()
    assert [int(r[1]) for r in rows] == c.tolist()
    assert [int(r[2]) for r in rows] == s.tolist()
    char28_files, char28_rows = index_rows(root / "index/input_char28")
    assert [f.name for f in char28_files] == [f.name for f in files]
    assert all(len(r[0]) == 28 and r[0].isdigit() for r in char28_rows)
    assert [int(r[0]) for r in char28_rows] == oid.tolist()
    assert [r[1:] for r in char28_rows] == [r[1:] for r in rows]
    assert char28_rows[0][0] == f"{oid[0]:028d}"


def test_index_files_capped_by_rows_and_split_across_parts(tmp_path):
    """Fewer rows than files: one row per file; files may span staging parts."""
    dirs = []
    for k, ids in enumerate(([5, 9], [], [7, 1, 3], [2, 8])):
        d = tmp_path / f"st{k}"
        d.mkdir()
        staging_mod.write_table(pa.table({"objectId": pa.array(ids, pa.int64()),
                                        "chunkId": pa.array([k] * len(ids), pa.int32()),
                                        "subChunkId": pa.array([10 + k] * len(ids), pa.int32())}),
                              d / staging_mod.INDEX)
        dirs.append(d)
    r = part_mod.write_index_input(dirs, 20, tmp_path / "a", tmp_path / "b")
    assert r == {"files": 7, "rows": 7}
    files, rows = index_rows(tmp_path / "a")
    assert len(files) == 7 and all(len(f.read_text().splitlines()) == 1 for f in files)
    assert rows == [["5", "0", "10"], ["9", "0", "10"], ["7", "2", "12"], ["1", "2", "12"],
                    ["3", "2", "12"], ["2", "3", "13"], ["8", "3", "13"]]
    r = part_mod.write_index_input(dirs, 3, tmp_path / "c", tmp_path / "d")
    files, rows3 = index_rows(tmp_path / "c")
    assert [len(f.read_text().splitlines()) for f in files] == [2, 2, 3]
    assert rows3 == rows
    _, char28 = index_rows(tmp_path / "d")
    assert char28[0] == ["0" * 27 + "5", "0", "10"]


def write_bad_part(tmp_path, bad_row: int):
    cfg = small_config()
    cat = cfg["catalog"]
    patch = cat_mod.generate_patch(CatalogSpec.of(cfg))
    o, s = cat_mod.duplicate(patch, cat_mod.copy_layout(cat), 0, IdLayout(PrepareSpec.of(cfg)))
    dec = o["decl_PS"].to_numpy().copy()
    dec[bad_row] = np.nan
    o = o.set_column(2, "decl_PS", pa.array(dec))
    po, ps = tmp_path / "Object-part-00003.parquet", tmp_path / "Source-part-00003.parquet"
    pq.write_table(o, po)
    pq.write_table(s, ps)
    return cfg, po, ps


def test_nan_coordinates_name_the_file_and_row(tmp_path):
    cfg, po, ps = write_bad_part(tmp_path, 1234)
    with pytest.raises(CoordinateError) as e:
        part_mod.map_part(PrepareSpec.of(cfg), po, ps, tmp_path / "staging", 2)
    assert str(po) in str(e.value) and "row 1234" in str(e.value)
    assert not (tmp_path / "staging" / "Object.parquet").exists()


def test_nan_coordinates_cli_exit_status(tmp_path):
    import json
    cfg, po, ps = write_bad_part(tmp_path, 7)
    catbench = Path(sys.executable).parent / "catbench"
    r = subprocess.run([str(catbench), "partition-map", "--config", json.dumps(cfg),
                        "--objects", str(po), "--sources", str(ps), "--out",
                        str(tmp_path / "st"), "--groups", "2", "--metrics",
                        str(tmp_path / "m.json")], capture_output=True, text=True)
    assert r.returncode != 0
    assert str(po) in r.stderr and "row 7" in r.stderr
    assert not (tmp_path / "m.json").exists()  # a failed job writes no metrics


def test_orphan_source_is_an_error(tmp_path):
    cfg = small_config()
    patch = cat_mod.generate_patch(CatalogSpec.of(cfg))
    o, s = cat_mod.duplicate(patch, cat_mod.copy_layout(cfg["catalog"]), 0, IdLayout(PrepareSpec.of(cfg)))
    po, ps = tmp_path / "o.parquet", tmp_path / "s.parquet"
    pq.write_table(o.slice(1), po)  # drop the first Object, keep its Sources
    pq.write_table(s, ps)
    with pytest.raises(ValueError, match="has no Object"):
        part_mod.map_part(PrepareSpec.of(cfg), po, ps, tmp_path / "st", 2)


def test_map_jobs_take_runs_of_parts_up_to_max_rows_per_map():
    from catbench.core.sky.copies import map_batches, part_copies
    cfg = small_config()
    parts = part_copies(cfg["catalog"])
    part_rows = 4 * 2000 * (1 + 3)  # 4 copies of 2000 Objects with 3 Sources each
    rows = [part_rows] * 6 + [3 * 2000 * (1 + 3)]   # the last part holds the 3 copies left
    assert len(parts) == 7
    # 3 parts fit under 3 x part_rows - 1 when one of them is the smaller last part
    for limit, jobs in ((1, 7), (part_rows, 7), (2 * part_rows, 4), (3 * part_rows - 1, 3),
                        (10**9, 1)):
        cfg["partition"]["max_rows_per_map"] = limit
        batches = map_batches(cfg)
        assert len(batches) == jobs, (limit, batches)
        assert [p for b in batches for p in b] == list(range(len(parts)))  # each once, in order
        sizes = [len(b) for b in batches]
        assert max(sizes) - min(sizes) <= 1  # balanced
        assert all(sum(rows[b.start:b.stop]) <= limit or len(b) == 1 for b in batches)
    assert validate({})["partition"]["max_rows_per_map"] == 30_000_000


def test_a_map_job_of_several_parts_writes_each_part_s_staging(partitioned, tmp_path):
    r = part_mod.map_parts(PrepareSpec.of(partitioned["cfg"]), partitioned["parts"], tmp_path, GROUPS)
    assert r["objects"] == partitioned["objects"].num_rows and r["sources"] == partitioned["sources"].num_rows
    for k, (o, _) in enumerate(partitioned["parts"]):
        mine, ref = tmp_path / o.stem, partitioned["root"] / f"staging/part-{k:05d}"
        for name in ("Object", "ObjectOverlap", "Source", "index"):
            assert staging_mod.read_table(mine / f"{name}.parquet").equals(staging_mod.read_table(ref / f"{name}.parquet"))
    with pytest.raises(ValueError, match="same file name"):
        part_mod.map_parts(PrepareSpec.of(partitioned["cfg"]), [partitioned["parts"][0]] * 2, tmp_path / "twice", GROUPS)


def test_partition_map_cli_needs_a_source_file_per_object_file(partitioned, tmp_path):
    import json
    catbench = Path(sys.executable).parent / "catbench"
    (o0, s0), (o1, _) = partitioned["parts"][:2]
    r = subprocess.run([str(catbench), "partition-map", "--config", json.dumps(partitioned["cfg"]),
                        "--objects", str(o0), str(o1), "--sources", str(s0), "--out",
                        str(tmp_path / "st"), "--groups", "2", "--metrics",
                        str(tmp_path / "m.json")], capture_output=True, text=True)
    assert r.returncode == 1 and "2 --objects but 1 --sources" in r.stderr
    assert not (tmp_path / "m.json").exists()


def test_chunker_from_config(partitioned):
    ch = partitioned["chunker"]
    assert isinstance(ch, Chunker)
    assert (ch.num_stripes, ch.num_sub_stripes, ch.overlap) == (85, 12, 0.01667)


@pytest.mark.parametrize("fault", ["emptied", "truncated", "missing", "added"])
def test_index_input_is_checked_against_its_manifest(partitioned, tmp_path, fault):
    # an emptied file was once loaded "successfully" (33,750 of 36,000 rows, checksum ok):
    # every change to what the partition stage wrote must fail, naming the file
    import shutil

    from catbench.core.index.input import list_input
    from catbench.core.server.loaddata import LoadError
    folder = tmp_path / "input"
    shutil.copytree(partitioned["root"] / "index/input", folder)
    victim = folder / "part-00002.tsv"
    if fault == "emptied":
        victim.write_text("")
    elif fault == "truncated":
        victim.write_text("".join(victim.read_text().splitlines(keepends=True)[:-1]))
    elif fault == "missing":
        victim.unlink()
    else:
        victim = folder / "part-00099.tsv"
        victim.write_text("1\t2\t3\n")
    with pytest.raises(LoadError, match=re.escape(str(victim))):
        list_input(folder)
    assert len(list_input(partitioned["root"] / "index/input")) == INDEX_FILES  # the untouched one passes


def test_scanned_rows_are_checked_against_the_manifest(partitioned, tmp_path):
    # same bytes, other rows (a line split in two would keep the size): scan_file catches it
    import shutil

    from catbench.core.index.input import scan_file
    from catbench.core.index.table import VARIANTS
    from catbench.core.server.loaddata import LoadError
    folder = tmp_path / "input"
    shutil.copytree(partitioned["root"] / "index/input", folder)
    victim = folder / "part-00001.tsv"
    lines = victim.read_text().splitlines(keepends=True)
    victim.write_text("".join(lines[:-2]) + lines[-2][:-1] + "\t" + lines[-1])  # joins two lines
    with pytest.raises(LoadError):  # 4 fields on one line: the line check names it
        scan_file(victim, VARIANTS["bigint"])
    # one line fewer, one more elsewhere: sizes and lines valid, only the counts differ
    a, b = folder / "part-00003.tsv", folder / "part-00004.tsv"
    la, lb = a.read_text().splitlines(keepends=True), b.read_text().splitlines(keepends=True)
    a.write_text("".join(la[:-1]))
    b.write_text("".join(lb + la[-1:]))
    with pytest.raises(LoadError, match=r"part-00003\.tsv: \d+ rows, .*manifest\.json says"):
        scan_file(a, VARIANTS["bigint"])


def test_a_reduce_removes_what_a_killed_reduce_left_and_keeps_a_running_ones(tmp_path):
    """SIGKILL leaves `.chunk_*.tsv.tmp-<pid>` files; the next reduce of the run removes those of
    dead processes (a reduce running beside it keeps its own)."""
    import os
    from catbench.core.infra.files import remove_stale_temps
    from catbench.prepare.chunkfiles import ChunkFiles
    d = tmp_path / "chunks" / "Object"
    d.mkdir(parents=True)
    dead = dead_pid()
    left = [d / f".chunk_{c}.tsv.tmp-{dead}" for c in (1, 2, 3)]
    mine = d / f".chunk_9.tsv.tmp-{os.getpid()}"
    for p in [*left, mine]:
        p.write_text("partial")
    (d / "chunk_5.tsv").write_text("done\n")
    ChunkFiles(tmp_path / "chunks", ("tsv",))
    assert not any(p.exists() for p in left) and mine.exists() and (d / "chunk_5.tsv").exists()
    assert remove_stale_temps(d) == 0
