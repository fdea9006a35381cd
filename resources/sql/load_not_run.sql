-- load_not_run.csv: the pairs of load.engines x load.strategies that were not run, and why
-- (a strategy's registry entry names the engines it cannot run on). Input view load_not_run =
-- results/<run>/load/not_run.json, written by load_compare (empty when every pair ran).
SELECT engine, strategy, reason
FROM load_not_run
ORDER BY engine, strategy
