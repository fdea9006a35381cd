-- bulk on MyRocks: its bulk-load path writes SST files directly, bypassing the memtable and
-- the unique check; rows must come in key order (the sorted stream: a repeated or
-- out-of-order key is refused with error 4054, and the stream has named any repeated key
-- before). allow_unsorted stays off: sorting is the sorted stream's job.
SET SESSION rocksdb_bulk_load_allow_unsorted = 0, rocksdb_bulk_load = 1
