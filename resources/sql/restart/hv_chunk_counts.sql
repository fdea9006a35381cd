-- crash-under-queries HV mini-suite: rows per chunk (a full scan with a GROUP BY).
SELECT `chunkId`, COUNT(*) FROM `{database}`.`{table}` GROUP BY `chunkId` ORDER BY `chunkId`
