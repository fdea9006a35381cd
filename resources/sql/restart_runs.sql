-- restart_runs.csv: every restart phase of every repetition, one row per target x kind x
-- repetition x phase (the raw rows behind restart.csv).
-- Input view restart_phases = every results/<run>/restart/<target>/<kind>.json
--   (target, kind, repetition, phase, seconds, rows_expected, rows_found, rows_lost,
--    redo_bytes, recovery_MBps, buffer_pool_load).
SELECT
    target,
    kind,
    repetition,
    phase,
    round(seconds, 4)        AS seconds,
    rows_lost,
    redo_bytes,
    round(recovery_MBps, 3)  AS recovery_MBps,
    rows_expected,
    rows_found,
    CAST(buffer_pool_load AS BOOLEAN) AS buffer_pool_load
FROM restart_phases
ORDER BY target, kind, repetition, phase_order, phase
