"""The index-only path: the same index input as the full catalog path, byte for
byte, without writing a catalog; a row limit; workers do not change a byte."""

import io
from pathlib import Path

import numpy as np
import pytest
from catbench.core.index.input import list_input, scan_file
from catbench.core.index.table import VARIANTS
from catbench.prepare.index_only import bounds, generate_index
from catbench.prepare.rowtext import KEY_WIDTH, IndexText
from catbench.prepare.spec import PrepareSpec

from support.catalog import INDEX_FILES, build_catalog, small_config


def _files(folder: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("workers", [1, 2])
def test_same_bytes_as_the_full_path(partitioned, tmp_path, workers):
    cfg = small_config()
    r = generate_index(PrepareSpec.of(cfg), INDEX_FILES, tmp_path / "input", tmp_path / "input_char28", workers=workers)
    full = partitioned["root"] / "index"
    assert _files(tmp_path / "input") == _files(full / "input")            # manifest included
    assert _files(tmp_path / "input_char28") == _files(full / "input_char28")
    assert r["rows"] == len(partitioned["objects"]) and r["files"] == INDEX_FILES


def test_rows_limit_and_checks(tmp_path):
    cfg = small_config()
    r = generate_index(PrepareSpec.of(cfg), 4, tmp_path / "a", tmp_path / "b", rows=10_001)
    files = list_input(tmp_path / "a")
    assert r["rows"] == 10_001 and len(files) == 4
    assert sum(scan_file(f, VARIANTS["bigint"]).rows for f in files) == 10_001
    assert [scan_file(f, VARIANTS["char28"]).rows for f in list_input(tmp_path / "b")] == [2500, 2500, 2500, 2501]
    with pytest.raises(ValueError, match="exceed the catalog"):
        generate_index(PrepareSpec.of(cfg), 4, tmp_path / "c", tmp_path / "d", rows=10**9)


def test_bounds_split_evenly():
    assert bounds(10, 4) == [0, 2, 5, 7, 10]
    assert bounds(3, 8) == [0, 1, 2, 3]


def _polars_lines(keys, chunk, sub) -> tuple[bytes, bytes]:
    """The index input's bytes as polars' CSV writer made them before IndexText."""
    import polars as pl
    df = pl.DataFrame({"objectId": keys, "chunkId": chunk, "subChunkId": sub})
    num, char = io.BytesIO(), io.BytesIO()
    df.write_csv(num, separator="\t", include_header=False)
    df.with_columns(pl.col("objectId").cast(pl.String).str.pad_start(KEY_WIDTH, "0")) \
      .write_csv(char, separator="\t", include_header=False)
    return num.getvalue(), char.getvalue()


def test_index_text_same_bytes_as_polars_at_the_edges():
    # int64 keys have at most 19 digits: a 28-digit key cannot reach the formatter
    edges = [0, 1, 9, 10, 99, 100, 9999, 10000, 99_999_999, 100_000_000, 10**12 - 1, 10**12,
             10**18 - 1, 10**18, 2**62, 2**63 - 1, 10485760000, 10485760999]
    rng = np.random.default_rng(1)
    keys = np.array(edges + list(rng.integers(0, 2**63 - 1, 5000)) + list(rng.integers(0, 10**6, 5000)), np.int64)
    max_chunk, max_sub = 2**31 - 1, 8982  # a chunk range over 2^20: id_table takes the unique ids
    chunk = np.resize(np.array([0, 1, 9, 10, 99, 100, 9999, 10000, max_chunk], np.int32), len(keys))
    sub = np.resize(np.array([max_sub, 0, 1, 9, 10, 99, 100, 999, 1000, 8981], np.int32), len(keys))
    text = IndexText(len(keys))
    for n in (len(keys), 1, 7, 0):   # the buffers are reused: a shorter call after a longer one
        got = tuple(bytes(b) for b in text.lines(keys[:n], chunk[:n], sub[:n]))
        assert got == _polars_lines(keys[:n], chunk[:n], sub[:n]) if n else got == (b"", b"")


def test_index_text_refuses_what_it_cannot_write():
    text = IndexText(4)
    with pytest.raises(ValueError, match="negative"):
        text.lines(np.array([5, -1]), np.zeros(2, np.int32), np.zeros(2, np.int32))
    with pytest.raises(ValueError, match="at most 4"):
        text.lines(np.arange(5), np.zeros(5, np.int32), np.zeros(5, np.int32))


def test_index_text_keeps_its_id_tables_right_as_their_range_grows():
    text = IndexText(100)
    keys = np.arange(100, dtype=np.int64) * 977
    for first in (50, 40, 45, 1000, 0):
        chunk = np.arange(first, first + 100, dtype=np.int32)
        sub = chunk[::-1].copy()
        assert tuple(bytes(b) for b in text.lines(keys, chunk, sub)) == _polars_lines(keys, chunk, sub)


def _full_path_index(cfg, root: Path) -> Path:
    """The full path's index input alone: catalog parts, partition maps, index files."""
    from catbench.prepare import partition as part_mod
    parts = build_catalog(cfg, root / "catalog")
    staging = []
    for k, (o, s) in enumerate(parts):
        part_mod.map_part(PrepareSpec.of(cfg), o, s, root / f"staging/part-{k:05d}", 2)
        staging.append(root / f"staging/part-{k:05d}")
    part_mod.write_index_input(staging, cfg["partition"]["index_files"], root / "index/input",
                               root / "index/input_char28")
    return root / "index"


def _keys(*files: Path) -> np.ndarray:
    return np.concatenate([np.loadtxt(p, dtype=np.int64, ndmin=2) for p in files])


@pytest.mark.parametrize("id_layout", ["random", "spatial", "interleaved"])
def test_every_id_layout_same_bytes_unique_and_deterministic(tmp_path, id_layout):
    cfg = small_config()
    cfg["catalog"]["id_layout"] = id_layout
    full = _full_path_index(cfg, tmp_path / "full")
    generate_index(PrepareSpec.of(cfg), INDEX_FILES, tmp_path / "a/input", tmp_path / "a/input_char28", workers=1)
    assert _files(tmp_path / "a/input") == _files(full / "input")
    assert _files(tmp_path / "a/input_char28") == _files(full / "input_char28")
    generate_index(PrepareSpec.of(cfg), INDEX_FILES, tmp_path / "b/input", tmp_path / "b/input_char28", workers=2)
    assert _files(tmp_path / "b/input") == _files(full / "input")       # deterministic
    rows = _keys(*sorted((full / "input").glob("part-*.tsv")))
    keys = rows[:, 0]
    assert keys.min() > 0 and len(np.unique(keys)) == len(keys)
    if id_layout == "spatial":   # the high bits are the row's sky cell, in order
        from catbench.prepare.ids import IdLayout
        ids = IdLayout(PrepareSpec.of(cfg))
        assert np.array_equal(keys >> ids.low, rows[:, 1] * ids.cells + rows[:, 2])
    if id_layout == "random":    # spread over the key space: every file a sample of it
        first = _keys(full / "input" / "part-00000.tsv")[:, 0]
        assert first.min() < np.quantile(keys, 0.05) and first.max() > np.quantile(keys, 0.95)


def test_random_ids_depend_on_the_seed_only():
    from catbench.prepare.ids import IdLayout
    cfg = small_config()
    a, b = IdLayout(PrepareSpec.of(cfg)), IdLayout(PrepareSpec.of(cfg))
    local = np.arange(1, 2001)
    assert np.array_equal(a.ids(local, 3), b.ids(local, 3))
    other = small_config()
    other["seed"] = 43
    assert not np.array_equal(a.ids(local, 3), IdLayout(PrepareSpec.of(other)).ids(local, 3))
    # a bijection of the k-bit space: every dense number gets its own id
    every = np.concatenate([a.ids(local, c) for c in range(a.copies)])
    assert len(np.unique(every)) == len(every) and every.max() <= 1 << a.bits


def test_spatial_ids_refuse_a_catalog_too_large_for_int64():
    from catbench.prepare.ids import IdLayout
    cfg = small_config(num_stripes=5000, num_sub_stripes_per_stripe=1)
    cfg["catalog"]["id_layout"] = "spatial"
    cfg["catalog"]["patch"]["objects"] = 10**12
    with pytest.raises(ValueError, match="catalog.id_layout"):
        IdLayout(PrepareSpec.of(cfg))


@pytest.mark.parametrize("id_layout", ["random", "spatial"])
def test_chunk_order_same_bytes_from_both_paths(tmp_path, id_layout):
    from catbench.prepare import partition as part_mod
    from catbench.prepare.index_order import written_in_order
    cfg = small_config()
    cfg["catalog"]["id_layout"] = id_layout
    gen = _full_path_index(cfg, tmp_path / "full")
    staging = sorted((tmp_path / "full/staging").iterdir())
    full = tmp_path / "full_chunk"
    written_in_order("chunk", lambda n, c: part_mod.write_index_input(staging, INDEX_FILES, n, c),
                     full / "input", full / "input_char28", "64MB")
    only = tmp_path / "only_chunk"
    written_in_order("chunk", lambda n, c: generate_index(PrepareSpec.of(cfg), INDEX_FILES, n, c, workers=2),
                     only / "input", only / "input_char28", "64MB")
    assert _files(only / "input") == _files(full / "input")
    assert _files(only / "input_char28") == _files(full / "input_char28")
    assert not list(tmp_path.glob("*/.arrival-*"))            # the work folder is gone
    before = _keys(*sorted((gen / "input").glob("part-*.tsv")))
    after = _keys(*sorted((full / "input").glob("part-*.tsv")))
    # chunks in chunkId order, each chunk's rows in generation order, the same rows
    assert np.array_equal(after, before[np.argsort(before[:, 1], kind="stable")])
    sizes = [scan_file(f, VARIANTS["char28"]).rows for f in list_input(full / "input_char28")]
    assert len(sizes) == INDEX_FILES and max(sizes) - min(sizes) <= 1


def galactic_config(id_layout: str):
    """small_config on a sky crossing the galactic plane, thinned and thickened copies."""
    cfg = small_config()
    cfg["catalog"]["sky"].update(ra_min_deg=275, ra_max_deg=295)
    cfg["catalog"]["density"]["model"] = "galactic"
    cfg["catalog"]["id_layout"] = id_layout
    return cfg


@pytest.mark.parametrize("id_layout", ["random", "spatial", "interleaved"])
def test_galactic_density_same_bytes_as_the_full_path(tmp_path, id_layout):
    from catbench.core.sky.copies import copy_layout, placements
    cfg = galactic_config(id_layout)
    layout, n = copy_layout(cfg["catalog"]), cfg["catalog"]["patch"]["objects"]
    assert (layout["keep"] < n).any() and len(layout) > len(placements(cfg["catalog"]))
    full = _full_path_index(cfg, tmp_path / "full")
    r = generate_index(PrepareSpec.of(cfg), INDEX_FILES, tmp_path / "a/input", tmp_path / "a/input_char28", workers=2)
    assert _files(tmp_path / "a/input") == _files(full / "input")
    assert _files(tmp_path / "a/input_char28") == _files(full / "input_char28")
    keys = _keys(*sorted((full / "input").glob("part-*.tsv")))[:, 0]
    assert r["rows"] == len(keys) == layout["keep"].sum() and len(np.unique(keys)) == len(keys)
    part = generate_index(PrepareSpec.of(cfg), INDEX_FILES, tmp_path / "b/input", tmp_path / "b/input_char28",
                          rows=int(layout["keep"][:3].sum()) + 7)   # a row limit inside a thinned copy
    assert part["rows"] == int(layout["keep"][:3].sum()) + 7


def _chunk_sorted(tmp_path, id_layout: str) -> None:
    """The chunk-sorted input of small_config's ``id_layout``: the generation order's rows,
    chunks in chunkId order, each chunk's keys ascending."""
    from catbench.prepare.index_order import written_in_order
    cfg = small_config()
    cfg["catalog"]["id_layout"] = id_layout
    gen, out = tmp_path / id_layout / "gen", tmp_path / id_layout / "sorted"
    generate_index(PrepareSpec.of(cfg), INDEX_FILES, gen / "input", gen / "input_char28")
    written_in_order("chunk-sorted", lambda n, c: generate_index(PrepareSpec.of(cfg), INDEX_FILES, n, c),
                     out / "input", out / "input_char28", "64MB")
    before = _keys(*sorted((gen / "input").glob("part-*.tsv")))
    after = _keys(*sorted((out / "input").glob("part-*.tsv")))
    # chunks in chunkId order, each chunk's rows by key: the same rows
    assert np.array_equal(after, before[np.lexsort((before[:, 0], before[:, 1]))])
    sizes = [scan_file(f, VARIANTS["char28"]).rows for f in list_input(out / "input_char28")]
    assert len(sizes) == INDEX_FILES and max(sizes) - min(sizes) <= 1
    same = np.diff(after[:, 1]) == 0
    assert np.all(np.diff(after[:, 0])[same] > 0) and np.any(same)
    if id_layout == "spatial":    # a chunk's ids all lie below the next chunk's: the input ascends
        assert np.all(np.diff(after[:, 0]) > 0)
    else:
        assert not np.all(np.diff(after[:, 0]) > 0)


@pytest.mark.parametrize("id_layout", ["random", "spatial"])
def test_chunk_sorted_order_sorts_each_chunk_by_its_keys(tmp_path, id_layout):
    _chunk_sorted(tmp_path, id_layout)
