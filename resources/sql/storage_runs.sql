-- storage_runs.csv: every fio repetition, one row per target x test x repetition (the raw
-- rows behind storage.csv). Input view fio_runs = every results/<run>/fio/<target>/fio.csv.
SELECT
    target,
    test,
    repetition,
    round(MBps, 3)        AS MBps,
    round(iops, 1)        AS iops,
    round(clat_p50_us, 3) AS clat_p50_us,
    round(clat_p99_us, 3) AS clat_p99_us,
    direct,
    numjobs
FROM fio_runs
ORDER BY target,
         CASE test WHEN 'seq-write' THEN 1 WHEN 'seq-read' THEN 2
                   WHEN 'rand-read' THEN 3 WHEN 'rand-write' THEN 4 ELSE 5 END,
         test, repetition
