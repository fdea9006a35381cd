-- load_time.csv: one row per secondary-index load (target x variant x strategy).
-- Input view load_summaries = every results/<run>/load/<target>/<variant>/<strategy>/summary.json
--   (target, variant, strategy, files, rows, seconds, rows_per_s, sort_seconds, table_bytes,
--    lookup_qps, lookup_p50_s, lookup_p99_s, optimize_seconds, optimize_stopped, checksum_ok, ...).
-- speedup_vs_sequential compares with the `sequential` strategy of the same target and variant
-- (empty when that load is not in the run).
SELECT
    l.target,
    l.variant,
    l.strategy,
    l.files,
    l.rows,
    round(l.seconds, 4)                        AS seconds,
    round(l.rows_per_s, 1)                     AS rows_per_s,
    round(s.seconds / l.seconds, 3)            AS speedup_vs_sequential,
    l.table_bytes,
    round(l.lookup_p50_s * 1000, 4)            AS lookup_p50_ms,
    round(l.lookup_p99_s * 1000, 4)            AS lookup_p99_ms,
    round(l.optimize_seconds, 4)               AS optimize_seconds,
    round(l.sort_seconds, 4)                   AS sort_seconds,
    round(l.lookup_qps, 1)                     AS lookup_qps,
    l.checksum_ok,
    l.optimize_stopped
FROM load_summaries AS l
LEFT JOIN load_summaries AS s
       ON s.target = l.target AND s.variant = l.variant AND s.strategy = 'sequential'
ORDER BY l.target, l.variant, l.seconds, l.strategy
