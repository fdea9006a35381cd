"""A small real catalog over several chunks, partitioned in-process as the workflow's steps do,
for the query stage's tests (tests/test_queries.py, tests/test_query_workers.py)."""

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from catbench.core.infra.config import section, validate
from catbench.prepare import partition as part_mod
from catbench.prepare.spec import PrepareSpec
from support.catalog import build_catalog

SHV1_BOX = {"ra_min": 1.0, "ra_max": 5.5, "dec_min": -1.9, "dec_max": 1.9}  # crosses chunk and stripe edges


def small_config():
    cfg = validate({
        "run": "qtest", "seed": 7,
        "catalog": {"patch": {"objects": 2000}, "sources_per_object": 3, "max_objects_per_part": 8000,
                    "sky": {"ra_min_deg": 0, "ra_max_deg": 8, "dec_min_deg": -2, "dec_max_deg": 2}},
        "partition": {"index_files": 4},
        "server": {"settings": {"innodb_buffer_pool_size": "64M"}},
    })
    cfg["queries"] = section("queries", {"repetitions": 1, "connections": 3, "load_connections": 2,
                                         "concurrency": {"streams": 1, "seconds": 1.0, "lv1_interval_s": 0.05},
                                         "parameters": {"SHV1": dict(SHV1_BOX)}})
    return cfg


def build(cfg, root: Path):
    staging = []
    parts = build_catalog(cfg, root / "catalog")
    for k, (o, s) in enumerate(parts):
        d = root / f"staging/part-{k:05d}"
        part_mod.map_part(PrepareSpec.of(cfg), o, s, d, 2)
        staging.append(d)
    manifests = []
    for g in range(2):
        m = root / f"chunks/groups/group-{g:05d}.tsv"
        part_mod.reduce_group(staging, parts, g, root / "chunks", m)
        manifests.append(m)
    part_mod.write_index_input(staging, cfg["partition"]["index_files"], root / "index/input",
                               root / "index/input_char28")
    # chunks.tsv as the chunk-list step writes it
    import duckdb
    duckdb.connect().sql("""
        SELECT chunkId,
               SUM(rows) FILTER (WHERE "table" = 'Object')        AS object_rows,
               SUM(rows) FILTER (WHERE "table" = 'Source')        AS source_rows,
               SUM(rows) FILTER (WHERE "table" = 'ObjectOverlap') AS overlap_rows,
               SUM(parquet_bytes) AS parquet_bytes, SUM(tsv_bytes) AS tsv_bytes
        FROM read_csv($files, delim='\t', header=true) GROUP BY chunkId ORDER BY chunkId""",
                         params={"files": [str(m) for m in manifests]}
                         ).write_csv(str(root / "chunks/chunks.tsv"), sep="\t", header=True)
    objects = pa.concat_tables([pq.read_table(p) for p in sorted((root / "catalog/Object").glob("*.parquet"))])
    return objects


