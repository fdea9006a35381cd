-- trans-partitioned: the unique key holds per partition only, so keys repeated across
-- partitions are found here (at most `limit` of them).
SELECT `{key}`, COUNT(*) FROM `{database}`.`{table}`
GROUP BY `{key}` HAVING COUNT(*) > 1 LIMIT {limit}
