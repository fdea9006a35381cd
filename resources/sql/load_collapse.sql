-- load_collapse.csv: where a load's rate fell below half its initial rate, one row per
-- load (target x variant x engine x strategy), over its repetitions. Input: table load_curve
-- (load_curve.csv, registered as table_load_curve). Initial rate = the highest rate among
-- the windows ending within the first three windows' worth of files (a cold start can make
-- the very first one slow); the half point = the first later window below half of it.
-- Figures are medians over the repetitions that reached it (_ci_low/_ci_high: the
-- report.confidence interval of the typical value, empty when fewer than 2 did; _values the raw ones).
WITH first_w AS (
    SELECT target, variant, engine, strategy, repetition,
           max(rows_per_s) FILTER (WHERE files_done <= 3 * window_files)              AS initial_rows_per_s,
           arg_max(files_done, rows_per_s) FILTER (WHERE files_done <= 3 * window_files) AS first_files,
           arg_max(rows_per_s, files_done)                                             AS final_rows_per_s
    FROM table_load_curve
    GROUP BY target, variant, engine, strategy, repetition
),
per_rep AS (
    SELECT c.target, c.variant, c.engine, c.strategy, c.repetition,
           any_value(w.initial_rows_per_s) AS initial_rows_per_s,
           any_value(w.final_rows_per_s)   AS final_rows_per_s,
           min(c.files_done) FILTER (WHERE c.files_done > w.first_files
                                       AND c.rows_per_s < 0.5 * w.initial_rows_per_s) AS half_files,
           max(c.table_over_pool)          AS final_table_over_pool
    FROM table_load_curve AS c
    JOIN first_w AS w USING (target, variant, engine, strategy, repetition)
    GROUP BY c.target, c.variant, c.engine, c.strategy, c.repetition
),
at_half AS (
    SELECT p.*, c.table_over_pool, c.table_bytes, c.rows_loaded
    FROM per_rep AS p
    LEFT JOIN table_load_curve AS c
           ON c.target = p.target AND c.variant = p.variant AND c.engine = p.engine AND c.strategy = p.strategy
          AND c.repetition = p.repetition AND c.files_done = p.half_files
)
SELECT
    target,
    variant,
    engine,
    strategy,
    count(*)                                         AS n,
    count(half_files)                                AS n_halved,
    round(median(initial_rows_per_s), 1)             AS initial_rows_per_s,
    round(median(final_rows_per_s), 1)               AS final_rows_per_s,
    round(median(final_rows_per_s / nullif(initial_rows_per_s, 0)), 4) AS final_over_initial,
    round(median(table_over_pool), 3)                AS half_table_over_pool,
    round(min(table_over_pool), 3)                   AS half_table_over_pool_min,
    round(max(table_over_pool), 3)                   AS half_table_over_pool_max,
    round(ci_low(list(table_over_pool)), 3)          AS half_table_over_pool_ci_low,
    round(ci_high(list(table_over_pool)), 3)         AS half_table_over_pool_ci_high,
    ci_note(list(table_over_pool))                   AS half_table_over_pool_ci_note,
    vals(list(table_over_pool))                      AS half_table_over_pool_values,
    CAST(round(median(table_bytes)) AS BIGINT)       AS half_table_bytes,
    CAST(round(median(rows_loaded)) AS BIGINT)       AS half_rows_loaded,
    round(median(final_table_over_pool), 3)          AS final_table_over_pool,
    -- what index/working_set.json predicted for the variant's input (prepare/working_set.md)
    any_value(w.id_layout)                           AS id_layout,
    any_value(w.arrival_order)                       AS arrival_order,
    any_value(w.ws_pages)                            AS predicted_working_set_pages,
    any_value(w.ws_over_pool)                        AS predicted_working_set_over_pool,
    any_value(w.collapse_expected)                   AS collapse_expected
FROM at_half
LEFT JOIN (SELECT variant, id_layout, "order" AS arrival_order, working_set_pages AS ws_pages,
                  working_set_over_pool AS ws_over_pool, collapse_expected FROM working_set) AS w
       USING (variant)
GROUP BY target, variant, engine, strategy
ORDER BY target, variant, engine, strategy
