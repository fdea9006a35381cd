-- restart.csv: server restart / crash-recovery phases, one row per target x kind x
-- buffer-pool mode x phase, over the repetitions (the raw rows are restart_runs.csv).
-- Input view restart_phases = every results/<run>/restart/<target>/<kind>.json
--   (target, kind, repetition, phase, seconds, rows_expected, rows_found, rows_lost,
--    redo_bytes, recovery_MBps, buffer_pool_load).
-- seconds and recovery_MBps are medians; _ci_low/_ci_high the report.confidence interval of the
-- typical value (empty where the repetitions cannot bound it: n < 3 or an upper end over 10x the lower; _ci_note says so in words), _values the raw repetitions (report/stats.py); rows_lost is the sum over the repetitions.
SELECT
    target,
    kind,
    CAST(buffer_pool_load AS BOOLEAN)        AS buffer_pool_load,
    phase,
    count(seconds)                           AS n,
    round(median(seconds), 4)                AS seconds,
    round(min(seconds), 4)                   AS seconds_min,
    round(max(seconds), 4)                   AS seconds_max,
    round(ci_low(list(seconds)), 4)          AS seconds_ci_low,
    round(ci_high(list(seconds)), 4)         AS seconds_ci_high,
    ci_note(list(seconds))                   AS seconds_ci_note,
    vals(list(seconds))                      AS seconds_values,
    sum(rows_lost)                           AS rows_lost,
    CAST(round(median(redo_bytes)) AS BIGINT) AS redo_bytes,
    round(median(recovery_MBps), 3)          AS recovery_MBps,
    round(ci_low(list(recovery_MBps)), 3)    AS recovery_MBps_ci_low,
    round(ci_high(list(recovery_MBps)), 3)   AS recovery_MBps_ci_high,
    ci_note(list(recovery_MBps))             AS recovery_MBps_ci_note,
    vals(list(recovery_MBps))                AS recovery_MBps_values
FROM restart_phases
GROUP BY target, kind, buffer_pool_load, phase
ORDER BY target, kind, buffer_pool_load NULLS FIRST, min(phase_order), phase
