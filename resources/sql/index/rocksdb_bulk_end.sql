-- bulk on MyRocks: leaving bulk mode ingests the SST files written so far; the rows become
-- visible only now (the strategy's final commit).
SET SESSION rocksdb_bulk_load = 0
