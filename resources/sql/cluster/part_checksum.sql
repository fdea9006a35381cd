-- Row count and checksum (as index/checksum.sql) of one part of a cluster's index table:
-- {where} selects the rows the restart workload inserted, NOT ({where}) the loaded index.
SELECT COUNT(*), COALESCE(SUM(CRC32(CONCAT_WS('\t', `{key}`, `chunkId`, `subChunkId`))), 0)
FROM `{database}`.`{table}`
WHERE {where}
