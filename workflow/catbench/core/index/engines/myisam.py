"""MyISAM: Qserv's other director-index engine (controller.director-index-engine). Rows in
<table>.MYD, the B-tree in <table>.MYI (partitions: <table>#P#<p>.MY?); only index blocks are
cached by the server (key_buffer_size), data blocks by the OS. No transactions: a statement's
rows stay when it fails, so resume checks the table (load_index._prepare_table)."""

from . import Engine

NAME = "myisam"
ORDER = 3

ENGINE = Engine(name=NAME, sql_name="MyISAM", plugin=None, settings={}, table_files="{database}/{table}*.MY[DI]",
                flush_sql="myisam_flush.sql", cache_variable="key_buffer_size", miss_counter="Key_reads",
                transactional=False,
                label="MyISAM", cache_words="MyISAM key cache", marker="s", curve_style=(":", "s"))
