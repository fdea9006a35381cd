"""What catbench reads from a running server: its global status counters (for metrics) and
variables (for provenance)."""

from __future__ import annotations

STATUS_COUNTERS = (
    "Innodb_buffer_pool_reads", "Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_write_requests",
    "Innodb_buffer_pool_pages_dirty", "Innodb_buffer_pool_pages_data", "Innodb_buffer_pool_pages_total",
    "Innodb_buffer_pool_pages_flushed", "Innodb_data_read", "Innodb_data_written", "Innodb_data_fsyncs",
    "Innodb_os_log_written", "Innodb_log_waits", "Innodb_pages_written", "Innodb_rows_read",
    "Innodb_checkpoint_age",
    # rows written by every engine so far, running statements included: a load's progress
    # inside one file (the scale model's rate windows, predict/runs.py)
    "Handler_write",
    # MyRocks (load.engines rocksdb; None on a server without it): what its LSM tree writes
    # (WAL, memtable flushes, compactions) and how its block cache serves reads.
    "Rocksdb_wal_bytes", "Rocksdb_flush_write_bytes", "Rocksdb_compact_write_bytes",
    "Rocksdb_compact_read_bytes", "Rocksdb_block_cache_hit", "Rocksdb_block_cache_miss",
    # and when its write controller held the writers back (L0 files, pending compaction bytes,
    # memtables): stops, slowdowns and the microseconds they took
    "Rocksdb_stall_micros", "Rocksdb_stall_total_stops", "Rocksdb_stall_total_slowdowns",
    # an SST's index block the block cache lost (each miss reads and decompresses the whole
    # block: one larger than a cache shard, capacity / 64, is lost again at once, so every key
    # check re-reads it)
    "Rocksdb_block_cache_index_miss", "Rocksdb_block_cache_index_bytes_insert",
    # MyISAM's key cache (load.engines myisam): index block reads and writes, requested and
    # done on disk (its data blocks go through the OS, which the device counters see).
    "Key_reads", "Key_read_requests", "Key_writes", "Key_write_requests",
)

PROVENANCE_VARIABLES = (
    "version", "version_comment", "innodb_buffer_pool_size", "innodb_log_file_size",
    "innodb_flush_log_at_trx_commit", "innodb_doublewrite", "innodb_flush_method", "innodb_page_size",
    "innodb_io_capacity", "datadir", "tmpdir", "rocksdb_block_cache_size", "rocksdb_max_row_locks",
    "key_buffer_size", "myisam_sort_buffer_size",
)


def status_counters(conn, names=STATUS_COUNTERS) -> dict[str, int | None]:
    """Global status counters as ints (None where the server lacks one)."""
    cur = conn.cursor()
    cur.execute(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({', '.join(['%s'] * len(names))})", tuple(names))
    got = {k.lower(): v for k, v in cur.fetchall()}
    out = {}
    for n in names:
        v = got.get(n.lower())
        try:
            out[n] = int(v) if v is not None else None
        except (TypeError, ValueError):
            out[n] = None
    return out


def variables(conn, names=PROVENANCE_VARIABLES) -> dict[str, str | None]:
    """Global server variables (for provenance)."""
    cur = conn.cursor()
    cur.execute("SHOW GLOBAL VARIABLES")
    got = {k.lower(): (v.decode() if isinstance(v, (bytes, bytearray)) else v) for k, v in cur.fetchall()}
    return {n: got.get(n.lower()) for n in names}
