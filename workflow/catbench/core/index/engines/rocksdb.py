"""MyRocks: an LSM tree. Its data is in the SST files of #rocksdb/ (shared by the server's
MyRocks tables: a load's server holds one), after the memtable is flushed; the WAL is not
counted. A file (or sorted chunk) is one transaction, as with InnoDB: MyRocks refuses more than
1 M row locks per transaction by default. Its bulk path writes SST files directly from
key-ordered rows and ingests them when the session leaves bulk mode (no transactions)."""

from . import Engine

NAME = "rocksdb"
ORDER = 2

ENGINE = Engine(name=NAME, sql_name="ROCKSDB", plugin="rocksdb", settings={"rocksdb_max_row_locks": 1073741824},
                table_files="#rocksdb/*.sst", flush_sql="rocksdb_flush.sql",
                bulk_sql=("rocksdb_bulk_begin.sql", "rocksdb_bulk_end.sql"), bulk_transactions=False,
                cache_variable="rocksdb_block_cache_size", miss_counter="Rocksdb_block_cache_miss",
                files_sql="rocksdb_sst.sql", lsm=True,
                label="MyRocks", cache_words="rocksdb block cache", marker="^", curve_style=("-.", "^"))
