-- cluster_restart.csv: one node of a Galera cluster restarted under load, one row per target x
-- kind (node-restart-ist, node-restart-sst, node-crash) x phase, over the repetitions.
-- Input view cluster_phases = the "rows" of every results/<run>/cluster/<target>/<kind>.json
--   (target, kind, repetition, node, phase, seconds, clock, transfer, transfer_bytes, transfer_MBps,
--    donor, acked_inserts, acked_lost, checksums_equal, failed).
-- seconds and transfer_MBps are medians; _ci_low/_ci_high the report.confidence interval of the
-- typical value (empty where the repetitions cannot bound it: n < 3 or an upper end over 10x the lower; _ci_note says so in words), _values the raw repetitions (report/stats.py).
-- acked_inserts / acked_lost are checked after each repetition over every insert acknowledged so far:
-- the largest over the repetitions; acked_lost must be 0.
SELECT
    target,
    kind,
    phase,
    string_agg(DISTINCT transfer, ';' ORDER BY transfer) AS transfer,
    count(seconds)                           AS n,
    round(median(seconds), 4)                AS seconds,
    round(min(seconds), 4)                   AS seconds_min,
    round(max(seconds), 4)                   AS seconds_max,
    round(ci_low(list(seconds)), 4)          AS seconds_ci_low,
    round(ci_high(list(seconds)), 4)         AS seconds_ci_high,
    ci_note(list(seconds))                   AS seconds_ci_note,
    vals(list(seconds))                      AS seconds_values,
    CAST(round(median(transfer_bytes)) AS BIGINT) AS transfer_bytes,
    round(median(transfer_MBps), 3)          AS transfer_MBps,
    round(ci_low(list(transfer_MBps)), 3)    AS transfer_MBps_ci_low,
    round(ci_high(list(transfer_MBps)), 3)   AS transfer_MBps_ci_high,
    ci_note(list(transfer_MBps))             AS transfer_MBps_ci_note,
    vals(list(transfer_MBps))                AS transfer_MBps_values,
    string_agg(DISTINCT donor, ';' ORDER BY donor) AS donors,
    max(acked_inserts)                       AS acked_inserts,
    max(acked_lost)                          AS acked_lost,
    bool_and(checksums_equal)                AS checksums_equal,
    max(failed)                              AS failed
FROM cluster_phases
GROUP BY target, kind, phase
-- kinds in the stage's order (restart/cluster/options.py KINDS), phases in the file's order
ORDER BY target,
    CASE kind WHEN 'node-restart-ist' THEN 0 WHEN 'node-restart-sst' THEN 1 WHEN 'node-crash' THEN 2 ELSE 3 END,
    kind, min(phase_order), phase
