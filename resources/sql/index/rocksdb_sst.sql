-- MyRocks: its SST files after the flush (the table's column family, 0): the data and index
-- blocks' bytes. An SST's index block is one block; larger than a block-cache shard (the cache
-- / 64) it is read again whole at every key check, so predict compares the largest with it.
SELECT COUNT(*) AS files, SUM(ENTRIES) AS entries, SUM(DATA_BLOCK_SIZE) AS data_bytes,
       SUM(INDEX_BLOCK_SIZE) AS index_bytes, MAX(INDEX_BLOCK_SIZE) AS largest_index_bytes
FROM information_schema.ROCKSDB_SST_PROPS
WHERE COLUMN_FAMILY = 0
