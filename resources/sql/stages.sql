-- stages.csv: the data-preparation stages (patch, catalog, partition, index input).
-- Input view stage_metrics = results/<run>/metrics/partition.json -> "stages"
--   (stage, jobs, rows, wall_seconds, busy_seconds, rows_per_s, peak_rss_mb).
SELECT
    stage,
    jobs,
    rows,
    round(wall_seconds, 4)  AS wall_seconds,
    round(busy_seconds, 4)  AS busy_seconds,
    round(rows_per_s, 1)    AS rows_per_s,
    peak_rss_mb             AS peak_rss_MB
FROM stage_metrics
ORDER BY start_epoch_s, stage
