-- chunks.csv: rows and bytes per chunk, with the size skew against the median chunk.
-- Input view chunk_stats = results/<run>/chunks/chunks.tsv
--   (chunkId, object_rows, source_rows, overlap_rows, parquet_bytes, tsv_bytes, ra_centre, dec_centre).
-- Chunks holding only overlap rows have empty object_rows/source_rows (counted as 0 rows here).
WITH med AS (
    SELECT median(tsv_bytes) AS tsv_bytes,
           median(coalesce(object_rows, 0) + coalesce(source_rows, 0)) AS rows
    FROM chunk_stats
)
SELECT
    c.chunkId,
    c.object_rows,
    c.source_rows,
    c.overlap_rows,
    c.parquet_bytes,
    c.tsv_bytes,
    c.ra_centre,
    c.dec_centre,
    round(c.tsv_bytes / nullif(med.tsv_bytes, 0), 4)                       AS tsv_bytes_vs_median,
    round((coalesce(c.object_rows, 0) + coalesce(c.source_rows, 0)) / nullif(med.rows, 0), 4) AS rows_vs_median
FROM chunk_stats AS c CROSS JOIN med
ORDER BY c.chunkId
