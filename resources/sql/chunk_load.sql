-- chunk_load.csv: loading the chunk tables (Object_<id>, Source_<id>,
-- ObjectFullOverlap_<id>) and the secondary index into each target's server before the
-- query suite; one row per target. A storage figure: same data, different disks.
-- Input view chunk_loads = results/<run>/queries/<target>/mysql/summary.json "load".
-- Measured once per target (n = 1: no interval; compare runs with `catbench compare`).
SELECT
    target,
    1                                  AS n,
    chunks,
    files,
    rows,
    round(bytes / 1e6, 1)              AS tsv_MB,
    round(seconds, 3)                  AS seconds,
    round(rows / nullif(seconds, 0))   AS rows_per_s,
    round(bytes / 1e6 / nullif(seconds, 0), 2) AS input_MBps,
    connections,
    index_rows,
    round(index_seconds, 3)            AS index_seconds
FROM chunk_loads
ORDER BY target
