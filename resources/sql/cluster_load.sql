-- cluster_load.csv: the workload around one node restart of a Galera cluster, one row per target
-- x kind x window (before / during / transfer / after the restart) x node role (insert, restarted,
-- donor, other; a node with several is e.g. insert+donor), over the repetitions.
-- Input view cluster_load = the "load" of every results/<run>/cluster/<target>/<kind>.json
--   (target, kind, repetition, window, window_s, node, role, lookups_ok, lookups_failed,
--    lookups_per_s, lookup_p50_ms, lookup_p99_ms, insert_rows, inserts_per_s,
--    insert_max_latency_s, insert_failures).
-- inserts_per_s and lookups_per_s are medians with the report.confidence interval of the typical
-- value (empty where the repetitions cannot bound it: n < 3 or an upper end over 10x the lower; _ci_note says so in words) and the raw repetitions; counts are summed over the repetitions.
SELECT
    target,
    kind,
    "window",
    role,
    string_agg(DISTINCT node, ';' ORDER BY node) AS nodes,
    count(window_s)                           AS n,
    round(median(window_s), 4)                AS window_s,
    round(median(inserts_per_s), 2)           AS inserts_per_s,
    round(min(inserts_per_s), 2)              AS inserts_per_s_min,
    round(max(inserts_per_s), 2)              AS inserts_per_s_max,
    round(ci_low(list(inserts_per_s)), 2)     AS inserts_per_s_ci_low,
    round(ci_high(list(inserts_per_s)), 2)    AS inserts_per_s_ci_high,
    ci_note(list(inserts_per_s))              AS inserts_per_s_ci_note,
    vals(list(inserts_per_s))                 AS inserts_per_s_values,
    round(max(insert_max_latency_s), 4)       AS insert_max_latency_s,
    sum(insert_rows)                          AS insert_rows,
    sum(insert_failures)                      AS insert_failures,
    round(median(lookups_per_s), 2)           AS lookups_per_s,
    round(min(lookups_per_s), 2)              AS lookups_per_s_min,
    round(max(lookups_per_s), 2)              AS lookups_per_s_max,
    round(ci_low(list(lookups_per_s)), 2)     AS lookups_per_s_ci_low,
    round(ci_high(list(lookups_per_s)), 2)    AS lookups_per_s_ci_high,
    ci_note(list(lookups_per_s))              AS lookups_per_s_ci_note,
    vals(list(lookups_per_s))                 AS lookups_per_s_values,
    round(median(lookup_p50_ms), 3)           AS lookup_p50_ms,
    round(median(lookup_p99_ms), 3)           AS lookup_p99_ms,
    sum(lookups_ok)                           AS lookups_ok,
    sum(lookups_failed)                       AS lookups_failed
FROM cluster_load
GROUP BY target, kind, "window", role
ORDER BY target,
    CASE kind WHEN 'node-restart-ist' THEN 0 WHEN 'node-restart-sst' THEN 1 WHEN 'node-crash' THEN 2 ELSE 3 END,
    kind,
    CASE "window" WHEN 'before' THEN 0 WHEN 'during' THEN 1 WHEN 'transfer' THEN 2 WHEN 'after' THEN 3 ELSE 4 END,
    role
