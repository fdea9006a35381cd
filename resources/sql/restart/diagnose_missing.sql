-- crash-during-load diagnosis: rows of the committed files (loaded again into {expected})
-- that the recovered table {table} lacks.
SELECT COUNT(*) FROM `{database}`.`{expected}` e LEFT JOIN `{database}`.`{table}` t
  ON t.`{key}` = e.`{key}` AND t.`chunkId` = e.`chunkId` AND t.`subChunkId` = e.`subChunkId`
WHERE t.`{key}` IS NULL
