-- Row count and order-independent checksum of an index table: the table-side twin of
-- index_input.scan_file (CRC32 of "key\tchunkId\tsubChunkId" per row, summed).
SELECT COUNT(*), COALESCE(SUM(CRC32(CONCAT_WS('\t', `{key}`, `chunkId`, `subChunkId`))), 0)
FROM `{database}`.`{table}`
