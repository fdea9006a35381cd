-- crash-under-queries HV mini-suite: aggregates over every column.
SELECT COUNT(DISTINCT `chunkId`), SUM(`subChunkId`), MIN(`{key}`), MAX(`{key}`) FROM `{database}`.`{table}`
