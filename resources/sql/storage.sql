-- storage.csv: fio results, one row per storage target and fio test, over its repetitions.
-- Input view fio_runs = every results/<run>/fio/<target>/fio.csv
--   (target, test, repetition, MBps, iops, clat_p50_us, clat_p99_us, direct, numjobs, ...).
-- Figures are medians over the repetitions; ci_low/ci_high = the report.confidence interval of
-- the typical value and _values the raw repetitions (catbench functions, see report/stats.py;
-- the interval is empty where the repetitions cannot bound it: n < 3 or an upper end over 10x the lower; _ci_note says so in words). The raw repetitions are storage_runs.csv. Columns: resources/report/columns.md.
SELECT
    target,
    test,
    count(*)                            AS n,
    round(median(MBps), 3)              AS MBps,
    round(min(MBps), 3)                 AS MBps_min,
    round(max(MBps), 3)                 AS MBps_max,
    round(ci_low(list(MBps)), 3)        AS MBps_ci_low,
    round(ci_high(list(MBps)), 3)       AS MBps_ci_high,
    ci_note(list(MBps))                 AS MBps_ci_note,
    vals(list(MBps))                    AS MBps_values,
    round(median(iops), 1)              AS iops,
    round(min(iops), 1)                 AS iops_min,
    round(max(iops), 1)                 AS iops_max,
    round(ci_low(list(iops)), 1)        AS iops_ci_low,
    round(ci_high(list(iops)), 1)       AS iops_ci_high,
    ci_note(list(iops))                 AS iops_ci_note,
    vals(list(iops))                    AS iops_values,
    round(median(clat_p50_us), 3)       AS clat_p50_us,
    round(median(clat_p99_us), 3)       AS clat_p99_us,
    bool_and(direct)                    AS direct,
    max(numjobs)                        AS numjobs
FROM fio_runs
GROUP BY target, test
ORDER BY target,
         -- the order fio runs them in: sequential first, then random
         CASE test WHEN 'seq-write' THEN 1 WHEN 'seq-read' THEN 2
                   WHEN 'rand-read' THEN 3 WHEN 'rand-write' THEN 4 ELSE 5 END,
         test
