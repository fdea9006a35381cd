-- chunk_load_chunks.csv: loading the chunk tables, per target and chunk: the chunk's rows
-- (Object, Source and overlap files together), its files' load time summed, rows/s, and its
-- share of the target's summed load time (the largest chunk's share shows what the skew costs).
-- Input view chunk_load_files = results/<run>/queries/<target>/mysql/chunk_loads.parquet.
-- Measured once per target (n = 1).
WITH per AS (
    SELECT target, chunkId, sum(rows) AS rows, sum(bytes) AS bytes, sum(seconds) AS seconds
    FROM chunk_load_files GROUP BY target, chunkId
), tot AS (
    SELECT target, sum(seconds) AS seconds, max(rows) AS largest_rows, median(rows) AS median_rows
    FROM per GROUP BY target
)
SELECT
    p.target,
    p.chunkId,
    p.rows,
    round(p.bytes / 1e6, 3)                               AS tsv_MB,
    round(p.seconds, 4)                                   AS seconds,
    round(p.rows / nullif(p.seconds, 0))                  AS rows_per_s,
    round(p.seconds / nullif(t.seconds, 0), 4)            AS time_share,
    round(p.rows / nullif(t.median_rows, 0), 3)           AS rows_vs_median,
    p.rows = t.largest_rows                               AS largest
FROM per AS p JOIN tot AS t USING (target)
ORDER BY p.target, p.rows DESC, p.chunkId
