"""The index-only path (issue 15): the same index input as the full catalog path, byte for
byte, without writing a catalog; a row limit; workers do not change a byte."""

import io
import sys
from pathlib import Path

import numpy as np
import pytest
from catbench.core.index_input import list_input, scan_file
from catbench.core.index_table import VARIANTS
from catbench.prepare.index_only import bounds, generate_index
from catbench.prepare.indextext import KEY_WIDTH, IndexText

sys.path.insert(0, str(Path(__file__).parent))
from test_partition import INDEX_FILES, small_config  # noqa: E402
from test_partition import (
    run as run,  # noqa: E402,F401 - the full path's module fixture
)


def _files(folder: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("workers", [1, 2])
def test_same_bytes_as_the_full_path(run, tmp_path, workers):  # noqa: F811
    cfg = small_config()
    r = generate_index(cfg, INDEX_FILES, tmp_path / "input", tmp_path / "input_seed", workers=workers)
    full = run["root"] / "index"
    assert _files(tmp_path / "input") == _files(full / "input")            # manifest included
    assert _files(tmp_path / "input_seed") == _files(full / "input_seed")
    assert r["rows"] == len(run["objects"]) and r["files"] == INDEX_FILES


def test_rows_limit_and_checks(tmp_path):
    cfg = small_config()
    r = generate_index(cfg, 4, tmp_path / "a", tmp_path / "b", rows=10_001)
    files = list_input(tmp_path / "a")
    assert r["rows"] == 10_001 and len(files) == 4
    assert sum(scan_file(f, VARIANTS["qserv"]).rows for f in files) == 10_001
    assert [scan_file(f, VARIANTS["seed"]).rows for f in list_input(tmp_path / "b")] == [2500, 2500, 2500, 2501]
    with pytest.raises(ValueError, match="exceed the catalog"):
        generate_index(cfg, 4, tmp_path / "c", tmp_path / "d", rows=10**9)


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
