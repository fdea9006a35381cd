-- layouts.csv: what each query engine reads on each target, what building it took and the bytes it
-- keeps there: mysql the InnoDB chunk tables (overlaps included) and the secondary index, lsdb
-- the HATS collections (tiles, margins, objectId index) built by hats-import, duckdb the
-- partition's Parquet chunk files (no build of their own). rows: the catalog's Object and Source
-- rows served. Input view layout_loads = results/<run>/queries/<target>/<query_engine>/summary.json "load".
-- Measured once per target and engine (n = 1: no interval; compare runs with `catbench compare`).
SELECT
    target,
    query_engine,
    layout,
    1                                                    AS n,
    rows,
    round(seconds, 3)                                    AS build_s,
    round(index_seconds, 3)                              AS index_s,
    round(rows / nullif(seconds, 0))                     AS rows_per_s,
    round((bytes + coalesce(index_bytes, 0)) / 2^20, 1)  AS MiB,
    round((bytes + coalesce(index_bytes, 0)) / nullif(rows, 0), 1) AS bytes_per_row
FROM layout_loads
ORDER BY target, query_engine
