"""The index-only path (issue 15): the same index input as the full catalog path, byte for
byte, without writing a catalog; a row limit; workers do not change a byte."""

import sys
from pathlib import Path

import pytest
from catbench.core.index_input import list_input, scan_file
from catbench.core.index_table import VARIANTS
from catbench.prepare.index_only import bounds, generate_index

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
