-- crash-during-load diagnosis: rows of the recovered table {table} that are in no
-- committed file (e.g. part of the file the kill interrupted).
SELECT COUNT(*) FROM `{database}`.`{table}` t LEFT JOIN `{database}`.`{expected}` e
  ON t.`{key}` = e.`{key}`
WHERE e.`{key}` IS NULL
