-- queries.csv: query latency, one row per target x query engine x query x cache state, over the
-- runs of the query (the raw runs are query_runs.csv).
-- Input view query_runs = every results/<run>/queries/<target>/<query_engine>/results.parquet (or .json)
--   (target, query_engine, query, cache ['cold'|'warm'|...], run, seconds, result_rows, answer, digest).
-- p50_s is the median; ci_low_s/ci_high_s the report.confidence interval of the typical value
-- (empty where the repetitions cannot bound it: n < 3 or an upper end over 10x the lower; _ci_note says so in words); values_s the raw runs (report/stats.py).
-- `agrees` is true when every run of the query, on every target and query engine, returned the same
-- result (same digest -- or same answer where no digest was recorded -- and same row count).
WITH per_query AS (
    SELECT query,
           count(DISTINCT coalesce(digest, answer)) AS results,
           count(DISTINCT result_rows)              AS row_counts
    FROM query_runs
    GROUP BY query
)
SELECT
    r.target,
    r.query_engine,
    r.query,
    r.cache,
    count(*)                                    AS n,
    round(quantile_cont(r.seconds, 0.5), 6)     AS p50_s,
    round(min(r.seconds), 6)                    AS min_s,
    round(max(r.seconds), 6)                    AS max_s,
    round(ci_low(list(r.seconds)), 6)           AS ci_low_s,
    round(ci_high(list(r.seconds)), 6)          AS ci_high_s,
    ci_note(list(r.seconds))                    AS ci_note_s,
    vals(list(r.seconds))                       AS values_s,
    round(quantile_cont(r.seconds, 0.95), 6)    AS p95_s,
    max(r.result_rows)                          AS result_rows,
    mode(r.answer)                              AS answer,
    mode(r.digest)                              AS digest,
    any_value(q.results <= 1 AND q.row_counts <= 1) AS agrees
FROM query_runs AS r
JOIN per_query AS q USING (query)
GROUP BY r.target, r.query_engine, r.query, r.cache
ORDER BY r.query, r.target, r.query_engine, r.cache
