-- load_curve.csv: the load rate against the table's size relative to the buffer pool, one
-- row per load, repetition and input file (in the order the files finished): the 2017
-- study's "load rate per interval", smoothed over a window of files and placed on the table size.
-- Input views load_trace (per file: start, end, rows, cumulative_rows), load_samples (table
-- bytes every sample_interval_s) and load_summaries (the server's innodb_buffer_pool_size).
-- rows_per_s = rows of the last window_files files / time since the end of the file before
-- them (the load's first file start for the first window); window_files = files / 16,
-- at least 1. table_bytes = rows loaded x bytes per row of the table at the end of that
-- repetition (load_runs): the index's size as it grows. file_bytes = the sampled size of the
-- table's files, interpolated between the samples around the file's end (from an empty
-- table at the first file's start); InnoDB extends files in steps of up to several MB, so
-- early in a load it runs ahead of the data. Sorting time before the first file is not in
-- the rate (load_time.csv has end-to-end seconds).
-- Per window, the 2017 study's iostat view and the Insert Benchmark's cost per row: the
-- device's MB/s and requests/s, and per row (at the window's rows_per_s) its KiB read and
-- written, the server's CPU µs and InnoDB's buffer-pool misses; from the samples (load_samples)
-- enclosing the window (the last at or before its start, the first at or after its end), last
-- less first over their span: a window shorter than load.sample_interval_s shares its samples'
-- figures with its neighbours. Empty where the target has no device (tmpfs).
WITH f AS (
    SELECT target, variant, engine, strategy, repetition, "end", rows, cumulative_rows,
           row_number() OVER (PARTITION BY target, variant, engine, strategy, repetition
                              ORDER BY "end", cumulative_rows)                AS i,
           count(*) OVER (PARTITION BY target, variant, engine, strategy, repetition) AS nfiles,
           min(start) OVER (PARTITION BY target, variant, engine, strategy, repetition) AS t0
    FROM load_trace
),
w AS (
    SELECT *, greatest(1, CAST(ceil(nfiles / 16.0) AS BIGINT)) AS win FROM f
),
anchors AS (   -- position 0 of every load: its start, no rows yet
    SELECT DISTINCT target, variant, engine, strategy, repetition, t0 AS "end", 0 AS cumulative_rows, 0 AS i
    FROM w
    UNION ALL
    SELECT target, variant, engine, strategy, repetition, "end", cumulative_rows, i FROM w
),
r AS (
    SELECT a.target, a.variant, a.engine, a.strategy, a.repetition, a.i, a.win, a.t0, a."end",
           a.cumulative_rows, b."end" AS w_start,
           (a.cumulative_rows - b.cumulative_rows) / nullif(a."end" - b."end", 0) AS rows_per_s
    FROM w AS a
    JOIN anchors AS b
      ON b.target = a.target AND b.variant = a.variant AND b.engine = a.engine AND b.strategy = a.strategy
     AND b.repetition = a.repetition AND b.i = a.i - a.win
),
s AS (
    SELECT target, variant, engine, strategy, repetition, "time", table_bytes
    FROM load_samples WHERE table_bytes IS NOT NULL
),
before AS (
    SELECT r.*, s."time" AS t_a, s.table_bytes AS b_a
    FROM r ASOF LEFT JOIN s
      ON s.target = r.target AND s.variant = r.variant AND s.engine = r.engine AND s.strategy = r.strategy
     AND s.repetition = r.repetition AND r."end" >= s."time"
),
sized AS (
    SELECT b.*, s."time" AS t_b, s.table_bytes AS b_b
    FROM before AS b ASOF LEFT JOIN s
      ON s.target = b.target AND s.variant = b.variant AND s.engine = b.engine AND s.strategy = b.strategy
     AND s.repetition = b.repetition AND b."end" <= s."time"
),
bytes AS (
    SELECT *,
           CASE WHEN b_a IS NULL AND t_b > t0 THEN b_b * ("end" - t0) / (t_b - t0)   -- empty at the start
                WHEN b_a IS NULL THEN b_b WHEN b_b IS NULL OR t_b <= t_a THEN b_a
                ELSE b_a + (b_b - b_a) * ("end" - t_a) / (t_b - t_a) END AS tb
    FROM sized
),
c AS (
    SELECT target, variant, engine, strategy, repetition, "time", dev_read_bytes, dev_write_bytes,
           dev_read_ios, dev_write_ios, server_user_s + server_sys_s AS cpu_s,
           Innodb_buffer_pool_reads AS misses
    FROM load_samples
),
first_in AS (   -- the sample at or before the window's start
    SELECT x.*, c."time" AS c0_t, c.dev_read_bytes AS c0_rb, c.dev_write_bytes AS c0_wb,
           c.dev_read_ios AS c0_ri, c.dev_write_ios AS c0_wi, c.cpu_s AS c0_cpu, c.misses AS c0_m
    FROM bytes AS x ASOF LEFT JOIN c
      ON c.target = x.target AND c.variant = x.variant AND c.engine = x.engine AND c.strategy = x.strategy
     AND c.repetition = x.repetition AND x.w_start >= c."time"
),
spanned AS (    -- and the one at or after its end: the counters' span over the window
    SELECT x.*, c."time" - x.c0_t AS span,
           c.dev_read_bytes - x.c0_rb AS d_rb, c.dev_write_bytes - x.c0_wb AS d_wb,
           c.dev_read_ios - x.c0_ri AS d_ri, c.dev_write_ios - x.c0_wi AS d_wi,
           c.cpu_s - x.c0_cpu AS d_cpu, c.misses - x.c0_m AS d_m
    FROM first_in AS x ASOF LEFT JOIN c
      ON c.target = x.target AND c.variant = x.variant AND c.engine = x.engine AND c.strategy = x.strategy
     AND c.repetition = x.repetition AND x."end" <= c."time"
),
per AS (
    SELECT *, CASE WHEN span > 0 THEN span END AS span_s,
              CASE WHEN span > 0 THEN span * rows_per_s END AS span_rows
    FROM spanned
)
SELECT
    x.target,
    x.variant,
    x.engine,
    x.strategy,
    x.repetition,
    x.i                                             AS files_done,
    x.cumulative_rows                               AS rows_loaded,
    round(x."end" - x.t0, 4)                        AS elapsed_s,
    x.win                                           AS window_files,
    round(x.rows_per_s, 1)                          AS rows_per_s,
    CAST(round(x.cumulative_rows * u.table_bytes / nullif(u.rows, 0)) AS BIGINT) AS table_bytes,
    CAST(round(x.tb) AS BIGINT)                     AS file_bytes,
    l.buffer_pool_bytes,
    round(x.cumulative_rows * u.table_bytes / nullif(u.rows, 0) / nullif(l.buffer_pool_bytes, 0), 4)
                                                    AS table_over_pool,
    round(x.d_rb / x.span_s / 1e6, 3)              AS read_MBps,
    round(x.d_wb / x.span_s / 1e6, 3)              AS write_MBps,
    round(x.d_ri / x.span_s, 1)                    AS read_iops,
    round(x.d_wi / x.span_s, 1)                    AS write_iops,
    round(x.d_rb / x.span_rows / 1024, 4)          AS read_kb_per_row,
    round(x.d_wb / x.span_rows / 1024, 4)          AS write_kb_per_row,
    round(x.d_cpu * 1e6 / x.span_rows, 3)          AS server_cpu_us_per_row,
    round(x.d_m / x.span_rows, 5)                  AS innodb_misses_per_row
FROM per AS x
LEFT JOIN load_summaries AS l
       ON l.target = x.target AND l.variant = x.variant AND l.engine = x.engine AND l.strategy = x.strategy
LEFT JOIN load_runs AS u
       ON u.target = x.target AND u.variant = x.variant AND u.engine = x.engine AND u.strategy = x.strategy
      AND u.repetition = x.repetition
ORDER BY x.target, x.variant, x.engine, x.strategy, x.repetition, x.i
