-- load_rate.csv: the 2017 storage study's load-rate table, one row per load, repetition and time interval.
-- Input view load_intervals = every results/<run>/load/<target>/<variant>/<engine>/<strategy>/intervals.parquet
--   (or intervals.csv): (target, variant, engine, strategy, repetition, interval, start_s, end_s, files,
--    rows, rows_per_s, input_read_MBps, target_write_MBps, innodb_write_MBps, table_bytes).
-- Intervals are counted from the start of the load; the last one may be shorter.
SELECT
    target,
    variant,
    engine,
    strategy,
    "interval",
    round(end_s - start_s, 4)        AS interval_s,
    files                            AS files_loaded,
    rows                             AS rows_loaded,
    round(input_read_MBps, 3)        AS input_read_MBps,
    round(target_write_MBps, 3)      AS target_write_MBps,
    table_bytes                      AS table_bytes_end,
    round(start_s, 4)                AS start_s,
    round(end_s, 4)                  AS end_s,
    round(rows / nullif(end_s - start_s, 0), 1) AS rows_per_s,
    round(innodb_write_MBps, 3)      AS innodb_write_MBps,
    repetition
FROM load_intervals
ORDER BY target, variant, engine, strategy, repetition, "interval"
