-- query_runs.csv: every timed run of every query, one row per target x query engine x query x
-- cache x run (the raw rows behind queries.csv).
-- Input view query_runs = every results/<run>/queries/<target>/<query_engine>/results.parquet (or .json).
SELECT
    target,
    query_engine,
    query,
    cache,
    run,
    round(seconds, 6) AS seconds,
    result_rows,
    digest
FROM query_runs
ORDER BY query, target, query_engine, cache, run
