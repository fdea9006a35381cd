"""The secondary ("director") index table: objectId -> (chunkId, subChunkId).

One owner for what every stage that builds or reads the index needs: the schema
variants and their behaviour (key type, key order and equality, DDL, checksum, point
lookup), the storage engines it can live in (InnoDB, MyRocks, MyISAM), and the
one-file-at-a-time loading loop. Input files are read and checked by ``index_input``; rows reach the server only
through ``loaddata.load_data``.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path

import mysql.connector

from ..infra.resources import read_sql
from ..server.loaddata import LoadDestination, LoadError, load_data
from .engines import ENGINES, Engine
from .input import explain_duplicate, scan_file, shared_key

log = logging.getLogger(__name__)

DATABASE = "secondary_index"
ER_LOCK_DEADLOCK = 1213
COLUMNS = ("chunkId", "subChunkId")


@dataclass(frozen=True)
class Variant:
    """A schema of the index table and how its keys behave."""
    name: str
    key: str                 # key column
    key_sql: str             # SQL type of the key
    duckdb_type: str         # the key's type when DuckDB reads the input
    nullable_ints: bool      # the CHAR(28) table allows NULL chunkId/subChunkId
    text_key: bool           # CHAR key: latin1_swedish_ci, compared case-insensitively
    line: re.Pattern         # one valid input line; failures get a reason from index_input
    # index_input's fast path: whole blocks of well-formed lines of at most 18/9 digits (no
    # range check needed) and, checked there, no leading zeros or "-0"; anything else is
    # scanned line by line
    block: re.Pattern
    folder: str              # its input's folder under results/<run>/index/

    @property
    def row_bytes(self) -> int:
        """A row's logical bytes: the key (BIGINT 8, CHAR(n) latin1 n) and two INTs. Device
        bytes written ÷ these is the load's write amplification (load_io.csv)."""
        m = re.fullmatch(r"CHAR\((\d+)\)", self.key_sql)
        return (int(m.group(1)) if m else 8) + 8

    def columns_ddl(self, primary_key: bool = True) -> str:
        null = "DEFAULT NULL" if self.nullable_ints else "NOT NULL"
        cols = f"`{self.key}` {self.key_sql} NOT NULL, `chunkId` INT {null}, `subChunkId` INT {null}"
        return cols + (f", PRIMARY KEY (`{self.key}`)" if primary_key else "")

    def ddl(self, table: str, database: str = DATABASE, engine: str = "InnoDB", primary_key: bool = True) -> str:
        return (f"CREATE TABLE `{database}`.`{table}` ({self.columns_ddl(primary_key)}) "
                f"ENGINE={engine} DEFAULT CHARSET=latin1")

    def key_value(self, raw):
        """The key as the table compares it: upper-cased text (the collation is
        case-insensitive) or an int."""
        if isinstance(raw, (bytes, bytearray)):
            raw = raw.decode("latin1")
        return raw.upper() if self.text_key else int(raw)

    def parse_key(self, raw: bytes):
        """The key as a client sends it in a query."""
        return raw.decode() if self.text_key else int(raw)

    def sort_expr(self, column: str = "k") -> str:
        """DuckDB ORDER BY expression giving the table's key order."""
        return f"upper({column})" if self.text_key else column

    def checksum_sql(self, table: str, database: str = DATABASE) -> str:
        """COUNT(*) and the order-independent checksum that index_input computes per file."""
        return read_sql("index", "checksum.sql").format(key=self.key, database=database, table=table)

    def lookup_sql(self, table: str, database: str = DATABASE) -> str:
        return read_sql("index", "lookup.sql").format(key=self.key, database=database, table=table)

    def load_columns(self) -> tuple[str, ...]:
        return (self.key, *COLUMNS)


VARIANTS = {
    # The 2017 storage study's table, exactly (CHAR(28) keys, nullable ints, latin1).
    "char28": Variant("char28", "source_id", "CHAR(28)", "VARCHAR", True, True,
                      re.compile(rb"([!-~]{1,28})\t(-?[0-9]{1,10})\t(-?[0-9]{1,10})\n?"),
                      re.compile(rb"(?:[!-~]{1,28}\t-?[0-9]{1,9}\t-?[0-9]{1,9}\n)*"), "input_char28"),
    # Today's Qserv director index: the object id's own type.
    "bigint": Variant("bigint", "objectId", "BIGINT", "BIGINT", False, False,
                      re.compile(rb"(-?[0-9]{1,19})\t(-?[0-9]{1,10})\t(-?[0-9]{1,10})\n?"),
                      re.compile(rb"(?:-?[0-9]{1,18}\t-?[0-9]{1,9}\t-?[0-9]{1,9}\n)*"), "input"),
}


def get_variant(name: str) -> Variant:
    try:
        return VARIANTS[name]
    except KeyError:
        raise LoadError(f"unknown schema variant {name!r}; choose one of {sorted(VARIANTS)}") from None


def files_figures(conn, engine: Engine) -> dict | None:
    """The engine's figures of the table's files (``files_sql``: MyRocks' SST data and index
    bytes), numbers as ints; None for an engine without them."""
    if not engine.files_sql:
        return None
    cur = conn.cursor()
    cur.execute(read_sql("index", engine.files_sql))
    row = cur.fetchone()
    return {c[0]: (int(v) if v is not None else None) for c, v in zip(cur.description, row)}


def get_engine(name: str) -> Engine:
    try:
        return ENGINES[name]
    except KeyError:
        raise LoadError(f"unknown storage engine {name!r} (config key load.engines); choose one of "
                        f"{sorted(ENGINES)}") from None


def create_table(conn, variant: Variant, table: str, database: str = DATABASE):
    """An empty index table (dropped first if it exists)."""
    cur = conn.cursor()
    cur.execute(f"CREATE DATABASE IF NOT EXISTS `{database}`")
    cur.execute(f"DROP TABLE IF EXISTS `{database}`.`{table}`")
    cur.execute(variant.ddl(table, database))


def table_checksum(conn, variant: Variant, table: str, database: str = DATABASE) -> tuple[int, int]:
    cur = conn.cursor()
    cur.execute(variant.checksum_sql(table, database))
    n, total = cur.fetchone()
    return int(n), int(total)


@dataclass(frozen=True)
class IndexDestination:
    """Where index files load: ``database.table`` of ``variant``, the whole input ``files``
    (in load order: a duplicate key is named in them), each row's ``qserv_trans_id`` when given."""
    table: str
    variant: Variant
    files: tuple
    database: str = DATABASE
    trans_id: int | None = None


def load_file(conn, into: IndexDestination, path: Path, rows: int, *, what: str | None = None, record=None) -> int:
    """``load_data`` one index file; a duplicate key is named with its file(s) and line(s)
    among ``into.files``. With ``record(cursor, rows)``
    the file's rows and whatever ``record`` writes commit together or not at all (the
    resumable loads' ledger)."""
    variant, input_files = into.variant, list(into.files)
    set_sql = f"`qserv_trans_id` = {int(into.trans_id)}" if into.trans_id is not None else None

    def explain(head: str, key: str, key_name: str) -> str:
        if key_name == "trans_key":  # "<trans_id>-<key>"
            key = key.split("-", 1)[1]
        return explain_duplicate(head, key, Path(path), input_files, variant)

    def load() -> int:
        try:
            return load_data(conn, path, rows, LoadDestination(into.database, into.table, variant.load_columns(), set_sql),
                             what=what, explain_duplicate=explain)
        except mysql.connector.Error as exc:
            # MyRocks: another connection committed one of this file's keys after this
            # statement's snapshot (a key repeated across files loaded at once); it says
            # "snapshot conflict" but not which key
            if exc.errno != ER_LOCK_DEADLOCK or "snapshot conflict" not in str(exc):
                raise
            key = shared_key(Path(path), [f for f in input_files if f != Path(path)], variant)
            if key is None:
                raise
            raise LoadError(explain_duplicate(f"{what or path}: {exc.msg}", key, Path(path), input_files,
                                              variant)) from None

    if record is None:
        return load()
    conn.start_transaction()
    try:
        n = load()
        record(conn.cursor(), n)
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    return n


def _fmt_eta(s: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(max(0, s)))


def load_files(conn, table: str, files: list[Path], variant: Variant, database: str = DATABASE, *,
               stop=None, record=None):
    """The one-file-at-a-time protocol: one connection, one LOAD DATA per file in order, each file
    validated while the previous one loads. ``stop()`` is asked before each file (a time
    limit: the files after it are not loaded); ``record(cursor, info, start, end)`` commits
    with each file (see ``load_file``). Returns (trace rows, FileInfo per loaded file)."""
    into = IndexDestination(table, variant, tuple(files), database)
    trace, infos = [], []
    cumulative, t_start, last_log = 0, time.time(), 0.0
    with cf.ThreadPoolExecutor(1, thread_name_prefix="catbench-scan") as ex:
        nxt = ex.submit(scan_file, files[0], variant) if files else None
        for i, path in enumerate(files):
            info = nxt.result()
            if stop is not None and stop():
                break
            if i + 1 < len(files):
                nxt = ex.submit(scan_file, files[i + 1], variant)
            start = time.time()
            rec = None if record is None else (lambda cur, n, info=info, start=start:
                                               record(cur, info, start, time.time()))
            rows = load_file(conn, into, path, info.rows, record=rec)
            end = time.time()
            cumulative += rows
            infos.append(info)
            trace.append({"file": str(path), "rows": rows, "bytes": info.bytes, "start": start, "end": end,
                          "seconds": end - start, "cumulative_rows": cumulative})
            if end - last_log >= 5 or i + 1 == len(files):
                last_log = end
                rate = cumulative / max(end - t_start, 1e-9)
                left = (end - t_start) / (i + 1) * (len(files) - i - 1)
                log.info("loaded %d/%d files, %d rows, %.0f rows/s, ETA %s", i + 1, len(files), cumulative,
                         rate, _fmt_eta(left))
    return trace, infos
