-- Every row the restart workload inserted ({where}), to check them against the client's
-- own log of acknowledged inserts: none missing, none changed, none it never sent.
SELECT `{key}`, `chunkId`, `subChunkId`
FROM `{database}`.`{table}`
WHERE {where}
