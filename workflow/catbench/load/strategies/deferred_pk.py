"""Load without the primary key (files in parallel), then ADD PRIMARY KEY; a duplicate fails
the ALTER."""

from __future__ import annotations

import re
import time

import mysql.connector

from ...core.index.input import duplicate_message
from ...core.index.table import Engine
from ...core.server.loaddata import LoadError
from ..job import LoadJob, Outcome
from . import parallel
from .base import INNODB, BytesPerRow, Strategy, sql

NAME = "deferred-pk"   # the config's load.strategies value
ORDER = 5   # its place in the registry


def load(job: LoadJob) -> Outcome:
    out = parallel.load(job)
    t1 = time.time()
    try:
        job.conn.cursor().execute(sql("add_primary_key", job))
    except mysql.connector.Error as exc:
        m = re.search(r"Duplicate entry '(.*)' for key", str(exc))
        if m:
            raise LoadError(duplicate_message(m.group(1), job.files, job.variant,
                                              "ALTER TABLE ADD PRIMARY KEY failed: ")) from None
        raise LoadError(f"ALTER TABLE {job.table} ADD PRIMARY KEY failed: {exc}") from None
    out.phase("index_build", t1, time.time())
    return out


def table_without_pk(variant, database: str, table: str, engine: Engine = INNODB) -> str:
    return variant.ddl(table, database, engine.sql_name, primary_key=False)


STRATEGY = Strategy(NAME, load, table_without_pk, bytes_per_row={"char28": BytesPerRow(60.3, 127.8),
                                                              "bigint": BytesPerRow(36.4, 80.0)},
                    steady=True, unsupported={
    "rocksdb": "MyRocks builds the primary key by copying the table in one transaction that holds "
               "every row in server memory (measured: 1.7 GB for 2.9 M rows, 4.6x the load's time), "
               "so it cannot reach the index's size; rocksdb_commit_in_the_middle bounds the memory "
               "but gives up the ALTER's atomicity and was slower still"})
