-- MyRocks: write the memtable to SST files, so that the table's bytes on disk (the SST
-- files of #rocksdb/) hold all its rows when they are measured after a load.
SET GLOBAL rocksdb_force_flush_memtable_now = 1
