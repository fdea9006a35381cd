"""InnoDB: one .ibd file per table (innodb_file_per_table, partitions included); the redo log
is not counted."""

from . import Engine

NAME = "innodb"
ORDER = 1

ENGINE = Engine(name=NAME, sql_name="InnoDB", plugin=None, settings={}, table_files="{database}/{table}*.ibd",
                bulk_sql=("bulk_session_begin.sql", "bulk_session_end.sql"),
                cache_variable="innodb_buffer_pool_size", miss_counter="Innodb_buffer_pool_reads",
                label="InnoDB", cache_words="buffer pool", marker="o", curve_style=("-", "."))
