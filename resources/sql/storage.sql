-- storage.csv: fio results, one row per storage target and fio test.
-- Input view fio_runs = every results/<run>/fio/<target>/fio.csv
--   (target, test, MBps, iops, clat_p50_us, clat_p99_us, direct, numjobs, size_bytes, runtime_s).
-- Columns are documented in resources/report/columns.md.
SELECT
    target,
    test,
    round(MBps, 3)        AS MBps,
    round(iops, 1)        AS iops,
    round(clat_p50_us, 3) AS clat_p50_us,
    round(clat_p99_us, 3) AS clat_p99_us,
    direct,
    numjobs
FROM fio_runs
ORDER BY target,
         -- the order fio runs them in: sequential first, then random
         CASE test WHEN 'seq-write' THEN 1 WHEN 'seq-read' THEN 2
                   WHEN 'rand-read' THEN 3 WHEN 'rand-write' THEN 4 ELSE 5 END,
         test
