-- load_time.csv: one row per secondary-index load (target x variant x engine x strategy), over its
-- repetitions (the raw rows are load_runs.csv).
-- Input view load_runs = summary.json "repetitions" of every results/<run>/load/<t>/<v>/<e>/<s>/.
-- seconds is the median; _ci_low/_ci_high the report.confidence interval of the typical value
-- (empty where the repetitions cannot bound it: n < 3 or an upper end over 10x the lower; _ci_note says so in words), seconds_values the raw repetitions. speedup_vs_one_file_at_a_time = seconds
-- of `one-file-at-a-time` (same target, variant and engine) / seconds of this load, as a ratio of
-- geometric means with its interval (ratio_gm, ratio_ci_low/ratio_ci_high: catbench
-- functions, report/stats.py). speedup_vs_innodb (a load on another engine) = seconds of the
-- same strategy on InnoDB (same target and variant) / seconds of this load, likewise.
-- buffer_pool_bytes is the engine's cache: InnoDB's buffer pool, MyRocks' block cache. stopped:
-- the load reached load.time_limit_s and did not finish (rows, seconds, rows_per_s until then).
-- resumed: a repetition was interrupted and resumed after its committed files; neither a stopped
-- nor a resumed load is a like-for-like time, so neither gets a speedup.
-- server_cpu_s / job_cpu_s: CPU-s of the server and of the loading job over the load (which
-- side bounds it); server_bound_rows_per_s: rows / (server CPU-s / host CPUs).
WITH g AS (
    SELECT target, variant, engine, strategy,
           max(files)                       AS files,
           max(rows)                        AS rows,
           count(seconds)                   AS n,
           list(seconds)                    AS secs,
           median(seconds)                  AS seconds,
           min(seconds)                     AS seconds_min,
           max(seconds)                     AS seconds_max,
           ci_low(list(seconds))            AS seconds_ci_low,
           ci_high(list(seconds))           AS seconds_ci_high,
           ci_note(list(seconds))           AS seconds_ci_note,
           median(table_bytes)              AS table_bytes,
           min(table_bytes)                 AS table_bytes_min,
           max(table_bytes)                 AS table_bytes_max,
           max(buffer_pool_bytes)           AS buffer_pool_bytes,
           median(lookup_p50_s)             AS lookup_p50_s,
           median(lookup_p99_s)             AS lookup_p99_s,
           median(optimize_seconds)         AS optimize_seconds,
           median(sort_seconds)             AS sort_seconds,
           median(server_cpu_s)             AS server_cpu_s,
           median(job_cpu_s)                AS job_cpu_s,
           max(host_cpus)                   AS host_cpus,
           median(lookup_qps)               AS lookup_qps,
           bool_and(checksum_ok)            AS checksum_ok,
           bool_or(optimize_stopped)        AS optimize_stopped,
           bool_or(coalesce(stopped, false)) AS stopped,
           bool_or(coalesce(resumed_at_file, 0) > 0) AS resumed,
           max(time_limit_s)                AS time_limit_s
    FROM load_runs
    GROUP BY target, variant, engine, strategy
)
SELECT
    l.target,
    l.variant,
    l.engine,
    l.strategy,
    l.files,
    l.rows,
    l.n,
    round(l.seconds, 4)                                AS seconds,
    round(l.seconds_min, 4)                            AS seconds_min,
    round(l.seconds_max, 4)                            AS seconds_max,
    round(l.seconds_ci_low, 4)                         AS seconds_ci_low,
    round(l.seconds_ci_high, 4)                        AS seconds_ci_high,
    l.seconds_ci_note                                  AS seconds_ci_note,
    vals(l.secs)                                       AS seconds_values,
    round(l.rows / nullif(l.seconds, 0), 1)            AS rows_per_s,
    -- a load stopped at load.time_limit_s did not finish: no speedup against or for it
    CASE WHEN NOT (l.stopped OR s.stopped OR l.resumed OR s.resumed) THEN round(ratio_gm(s.secs, l.secs), 3) END AS speedup_vs_one_file_at_a_time,
    CASE WHEN NOT (l.stopped OR s.stopped OR l.resumed OR s.resumed) THEN round(ratio_ci_low(s.secs, l.secs), 3) END AS speedup_ci_low,
    CASE WHEN NOT (l.stopped OR s.stopped OR l.resumed OR s.resumed) THEN round(ratio_ci_high(s.secs, l.secs), 3) END AS speedup_ci_high,
    CAST(round(l.table_bytes) AS BIGINT)               AS table_bytes,
    l.table_bytes_min,
    l.table_bytes_max,
    l.buffer_pool_bytes,
    round(l.table_bytes / nullif(l.buffer_pool_bytes, 0), 2) AS table_over_pool,
    round(l.lookup_p50_s * 1000, 4)                    AS lookup_p50_ms,
    round(l.lookup_p99_s * 1000, 4)                    AS lookup_p99_ms,
    round(l.optimize_seconds, 4)                       AS optimize_seconds,
    round(l.sort_seconds, 4)                           AS sort_seconds,
    round(l.server_cpu_s, 3)                           AS server_cpu_s,
    round(l.job_cpu_s, 3)                              AS job_cpu_s,
    round(l.server_cpu_s * 1e6 / nullif(l.rows, 0), 3) AS server_cpu_us_per_row,
    -- the rate the server's own CPU allows with every core of the host: a load at it is server-bound
    round(l.rows * l.host_cpus / nullif(l.server_cpu_s, 0), 1) AS server_bound_rows_per_s,
    round(l.lookup_qps, 1)                             AS lookup_qps,
    l.checksum_ok,
    l.optimize_stopped,
    l.stopped,
    l.resumed,
    l.time_limit_s,
    CASE WHEN NOT (l.stopped OR i.stopped OR l.resumed OR i.resumed) THEN round(ratio_gm(i.secs, l.secs), 3) END AS speedup_vs_innodb,
    CASE WHEN NOT (l.stopped OR i.stopped OR l.resumed OR i.resumed) THEN round(ratio_ci_low(i.secs, l.secs), 3) END AS speedup_vs_innodb_ci_low,
    CASE WHEN NOT (l.stopped OR i.stopped OR l.resumed OR i.resumed) THEN round(ratio_ci_high(i.secs, l.secs), 3) END AS speedup_vs_innodb_ci_high
FROM g AS l
LEFT JOIN g AS s
       ON s.target = l.target AND s.variant = l.variant AND s.engine = l.engine AND s.strategy = 'one-file-at-a-time'
LEFT JOIN g AS i
       ON i.target = l.target AND i.variant = l.variant AND i.strategy = l.strategy AND i.engine = 'innodb'
      AND l.engine <> 'innodb'
ORDER BY l.target, l.variant, l.engine, l.seconds, l.strategy
