-- load_io.csv: why a load is fast or slow, per inserted row, as the Insert Benchmark reports it:
-- one row per load (target x variant x engine x strategy), the median over its repetitions (n)
-- with the smallest and largest where the spread matters. Input views load_samples (cumulative
-- counters every load.sample_interval_s over the load: the target's block device from
-- /proc/diskstats, the server's CPU and the engine's status counters), load_trace (each
-- statement: one input file), load_runs (rows, seconds, the loading job's CPU) and
-- load_summaries (row_bytes: a row's logical bytes). A counter's figure is its last sample less
-- its first in each repetition; the device is the whole disk, so other work on it counts too
-- (isolation.csv says whether the job ran alone); on tmpfs there is no device (empty).
-- write_amp = device bytes written / (rows x row_bytes); space_amp = table bytes / (rows x
-- row_bytes). rocksdb_stalls: MyRocks' write stops and slowdowns; stall_us_per_row and stall_share:
-- the time its write controller held the writers, a row and a share of the load's seconds.
-- block_misses_per_row: MyRocks' block-cache misses (data and index); index_misses_per_row and
-- index_kb_per_row: SST index blocks it lost and read again whole (an index block larger than a
-- cache shard is read on every key check: docs/results/2026-11-28-myrocks-index-blocks.md).
-- stmt_*: one statement's seconds. longest_stall_s: the longest run of samples in
-- which no row was written (Handler_write still), a phase after the rows (a key build) included.
WITH d AS (
    SELECT target, variant, engine, strategy, repetition,
           max(dev_read_bytes) - min(dev_read_bytes)                       AS dev_read_bytes,
           max(dev_write_bytes) - min(dev_write_bytes)                     AS dev_write_bytes,
           max(dev_read_ios) - min(dev_read_ios)                           AS dev_read_ios,
           max(dev_write_ios) - min(dev_write_ios)                         AS dev_write_ios,
           max(server_user_s) - min(server_user_s)                         AS server_user_s,
           max(server_sys_s) - min(server_sys_s)                           AS server_sys_s,
           max(Innodb_data_read) - min(Innodb_data_read)                   AS innodb_read_bytes,
           max(Innodb_data_written) - min(Innodb_data_written)             AS innodb_written_bytes,
           max(Innodb_buffer_pool_reads) - min(Innodb_buffer_pool_reads)   AS innodb_misses,
           max(Innodb_buffer_pool_pages_flushed) - min(Innodb_buffer_pool_pages_flushed) AS innodb_pages_flushed,
           max(Innodb_os_log_written) - min(Innodb_os_log_written)         AS redo_bytes,
           max(Rocksdb_wal_bytes) - min(Rocksdb_wal_bytes)                 AS wal_bytes,
           max(Rocksdb_flush_write_bytes) - min(Rocksdb_flush_write_bytes) AS flush_bytes,
           max(Rocksdb_compact_read_bytes) - min(Rocksdb_compact_read_bytes) AS compact_read_bytes,
           max(Rocksdb_compact_write_bytes) - min(Rocksdb_compact_write_bytes) AS compact_write_bytes,
           max(Rocksdb_stall_micros) - min(Rocksdb_stall_micros)           AS stall_micros,
           max(Rocksdb_stall_total_stops) - min(Rocksdb_stall_total_stops)
             + max(Rocksdb_stall_total_slowdowns) - min(Rocksdb_stall_total_slowdowns) AS stalls,
           max(Rocksdb_block_cache_miss) - min(Rocksdb_block_cache_miss)   AS block_misses,
           max(Rocksdb_block_cache_index_miss) - min(Rocksdb_block_cache_index_miss) AS index_misses,
           max(Rocksdb_block_cache_index_bytes_insert)
             - min(Rocksdb_block_cache_index_bytes_insert)                 AS index_bytes,
           max(Key_reads) - min(Key_reads)                                 AS key_reads,
           max(Key_writes) - min(Key_writes)                               AS key_writes
    FROM load_samples
    GROUP BY target, variant, engine, strategy, repetition
),
st AS (
    SELECT target, variant, engine, strategy, repetition,
           quantile_cont("end" - start, 0.5)  AS stmt_p50_s,
           quantile_cont("end" - start, 0.99) AS stmt_p99_s,
           max("end" - start)                 AS stmt_max_s
    FROM load_trace
    GROUP BY target, variant, engine, strategy, repetition
),
prog AS (
    SELECT target, variant, engine, strategy, repetition, "time",
           Handler_write - lag(Handler_write) OVER w AS dw,
           "time" - lag("time") OVER w               AS dt
    FROM load_samples
    WHERE Handler_write IS NOT NULL
    WINDOW w AS (PARTITION BY target, variant, engine, strategy, repetition ORDER BY "time")
),
islands AS (   -- a run of samples without a written row shares its group number
    SELECT *, sum(CASE WHEN dw > 0 THEN 1 ELSE 0 END)
                  OVER (PARTITION BY target, variant, engine, strategy, repetition ORDER BY "time"
                        ROWS UNBOUNDED PRECEDING) AS grp
    FROM prog
),
stall AS (
    SELECT target, variant, engine, strategy, repetition, max(still) AS longest_stall_s
    FROM (SELECT target, variant, engine, strategy, repetition, grp,
                 coalesce(sum(dt) FILTER (WHERE dw = 0), 0) AS still
          FROM islands GROUP BY target, variant, engine, strategy, repetition, grp)
    GROUP BY target, variant, engine, strategy, repetition
),
r AS (
    SELECT d.*, st.stmt_p50_s, st.stmt_p99_s, st.stmt_max_s, stall.longest_stall_s,
           l.rows, l.seconds, l.job_cpu_s, l.table_bytes, s.row_bytes
    FROM d
    JOIN load_runs AS l USING (target, variant, engine, strategy, repetition)
    LEFT JOIN st USING (target, variant, engine, strategy, repetition)
    LEFT JOIN stall USING (target, variant, engine, strategy, repetition)
    LEFT JOIN load_summaries AS s USING (target, variant, engine, strategy)
    WHERE l.rows > 0
)
SELECT
    target, variant, engine, strategy,
    count(*)                                                           AS n,
    max(row_bytes)                                                     AS row_bytes,
    round(median(dev_read_bytes / rows) / 1024, 4)                     AS read_kb_per_row,
    round(min(dev_read_bytes / rows) / 1024, 4)                        AS read_kb_per_row_min,
    round(max(dev_read_bytes / rows) / 1024, 4)                        AS read_kb_per_row_max,
    round(median(dev_write_bytes / rows) / 1024, 4)                    AS write_kb_per_row,
    round(min(dev_write_bytes / rows) / 1024, 4)                       AS write_kb_per_row_min,
    round(max(dev_write_bytes / rows) / 1024, 4)                       AS write_kb_per_row_max,
    round(median(dev_read_ios / rows), 5)                              AS reads_per_row,
    round(median(dev_write_ios / rows), 5)                             AS writes_per_row,
    round(median((server_user_s + server_sys_s) * 1e6 / rows), 3)      AS server_cpu_us_per_row,
    round(min((server_user_s + server_sys_s) * 1e6 / rows), 3)         AS server_cpu_us_per_row_min,
    round(max((server_user_s + server_sys_s) * 1e6 / rows), 3)         AS server_cpu_us_per_row_max,
    round(median(server_user_s * 1e6 / rows), 3)                       AS server_user_us_per_row,
    round(median(server_sys_s * 1e6 / rows), 3)                        AS server_sys_us_per_row,
    round(median(job_cpu_s * 1e6 / rows), 3)                           AS client_cpu_us_per_row,
    round(median(dev_write_bytes / (rows * row_bytes)), 2)             AS write_amp,
    round(min(dev_write_bytes / (rows * row_bytes)), 2)                AS write_amp_min,
    round(max(dev_write_bytes / (rows * row_bytes)), 2)                AS write_amp_max,
    round(median(table_bytes / (rows * row_bytes)), 2)                 AS space_amp,
    round(median(innodb_read_bytes / rows) / 1024, 4)                  AS innodb_read_kb_per_row,
    round(median(innodb_written_bytes / rows) / 1024, 4)               AS innodb_write_kb_per_row,
    round(median(innodb_misses / rows), 5)                             AS innodb_misses_per_row,
    round(median(innodb_pages_flushed / rows), 5)                      AS innodb_pages_flushed_per_row,
    round(median(redo_bytes / rows), 1)                                AS redo_bytes_per_row,
    round(median(wal_bytes / rows), 1)                                 AS wal_bytes_per_row,
    round(median(flush_bytes / rows), 1)                               AS flush_bytes_per_row,
    round(median(compact_read_bytes / rows), 1)                        AS compact_read_bytes_per_row,
    round(median(compact_write_bytes / rows), 1)                       AS compact_write_bytes_per_row,
    round(median(stalls), 0)                                           AS rocksdb_stalls,
    round(median(stall_micros / rows), 3)                              AS stall_us_per_row,
    round(median(stall_micros / 1e6 / seconds), 4)                     AS stall_share,
    round(median(block_misses / rows), 4)                              AS block_misses_per_row,
    round(median(index_misses / rows), 4)                              AS index_misses_per_row,
    round(median(index_bytes / rows) / 1024, 3)                        AS index_kb_per_row,
    round(median(key_reads / rows), 5)                                 AS key_reads_per_row,
    round(median(key_writes / rows), 5)                                AS key_writes_per_row,
    round(median(stmt_p50_s), 4)                                       AS stmt_p50_s,
    round(median(stmt_p99_s), 4)                                       AS stmt_p99_s,
    round(max(stmt_max_s), 4)                                          AS stmt_max_s,
    round(max(longest_stall_s), 3)                                     AS longest_stall_s
FROM r
GROUP BY target, variant, engine, strategy
ORDER BY target, variant, engine, strategy
