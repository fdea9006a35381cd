-- load_runs.csv: every repetition of every secondary-index load, one row per
-- target x variant x engine x strategy x repetition (the raw rows behind load_time.csv).
-- Input view load_runs = summary.json "repetitions" of every results/<run>/load/<t>/<v>/<e>/<s>/
-- (a summary without them is one repetition, number 0).
SELECT
    target,
    variant,
    engine,
    strategy,
    repetition,
    files,
    rows,
    round(seconds, 4)                          AS seconds,
    round(rows / nullif(seconds, 0), 1)        AS rows_per_s,
    round(sort_seconds, 4)                     AS sort_seconds,
    round(server_cpu_s, 3)                     AS server_cpu_s,
    round(job_cpu_s, 3)                        AS job_cpu_s,
    table_bytes,
    buffer_pool_bytes,
    round(lookup_p50_s * 1000, 4)              AS lookup_p50_ms,
    round(lookup_p99_s * 1000, 4)              AS lookup_p99_ms,
    round(lookup_qps, 1)                       AS lookup_qps,
    round(optimize_seconds, 4)                 AS optimize_seconds,
    checksum_ok,
    optimize_stopped,
    coalesce(stopped, false)                   AS stopped,
    resumed_at_file
FROM load_runs
ORDER BY target, variant, engine, strategy, repetition
