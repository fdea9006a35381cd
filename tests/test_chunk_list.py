"""The partition's chunk list read once, strictly, by the query stage and `catbench predict
--chunk-rows`: an empty count is 0 (an overlap-only chunk), anything else not a whole count is
named with its line."""

from __future__ import annotations

import re

import pytest
from catbench.core.sky.chunk_list import ChunkListError, ChunkRows, parse_chunk_list
from catbench.predict.queries.runs import read_user_chunks
from catbench.query.chunk_tables import ChunkLoadError, read_chunk_list

HEAD = "chunkId\tobject_rows\tsource_rows\toverlap_rows\tparquet_bytes\n"


def test_an_overlap_only_chunk_has_empty_counts_read_as_zero(tmp_path):
    (tmp_path / "chunks.tsv").write_text(HEAD + "7\t10\t30\t2\t99\n8\t\t\t5\t10\n")
    assert parse_chunk_list((tmp_path / "chunks.tsv").read_text(), "x") == [ChunkRows(7, 10, 30, 2), ChunkRows(8, 0, 0, 5)]
    assert [c.chunk_id for c in read_chunk_list(tmp_path)] == [7]          # no query starts from chunk 8
    assert read_user_chunks(tmp_path / "chunks.tsv") == {"Object": {7: 10.0, 8: 0.0}, "Source": {7: 30.0, 8: 0.0}}


@pytest.mark.parametrize("body,line,what", [
    ("7\t10\t30\t2\t1\n7\t1\t1\t1\t1\n", 3, "chunk 7 is given twice"),
    ("7\t1.5\t30\t2\t1\n", 2, "is not a chunk's whole counts"),
    ("7\t-1\t30\t2\t1\n", 2, "a count below 0"),
    ("x\t1\t30\t2\t1\n", 2, "is not a chunk's whole counts"),
])
def test_both_readers_name_the_file_and_line_of_a_bad_row(tmp_path, body, line, what):
    path = tmp_path / "chunks.tsv"
    path.write_text(HEAD + body)
    with pytest.raises(ChunkListError, match=f"line {line}: .*{re.escape(what)}"):
        parse_chunk_list(path.read_text(), str(path))
    with pytest.raises(ChunkLoadError) as err:
        read_chunk_list(tmp_path)
    assert f"{path} line {line}" in str(err.value) and what in str(err.value)
    with pytest.raises(ValueError) as err:
        read_user_chunks(path)
    assert f"--chunk-rows {path} line {line}" in str(err.value) and what in str(err.value)


def test_the_query_stage_needs_every_count_column(tmp_path):
    (tmp_path / "chunks.tsv").write_text("chunkId\tobject_rows\n7\t10\n")
    with pytest.raises(ChunkLoadError, match="line 1 lacks source_rows or overlap_rows"):
        read_chunk_list(tmp_path)
    assert read_user_chunks(tmp_path / "chunks.tsv") == {"Object": {7: 10.0}}     # Sources from the rungs' ratio
