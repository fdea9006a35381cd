"""What every loading strategy shares: the :class:`Strategy` entry a strategy module declares,
the plain CREATE TABLE, its SQL from ``resources/sql/index/`` and loading files over several
connections."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ...core.index.table import ENGINES, Engine, IndexDestination
from ...core.infra.resources import read_sql
from ..job import LoadJob, Outcome
from ..connections import load_files_parallel

INNODB = ENGINES["innodb"]


def plain_table(variant, database: str, table: str, engine: Engine = INNODB) -> str:
    return variant.ddl(table, database, engine.sql_name)


@dataclass(frozen=True)
class BytesPerRow:
    """Bytes per index row (slopes over rows, so a table's fixed first extents do not count;
    fitted to measured loads: load/estimate.md)."""
    table: float    # the final table's files
    peak: float     # the target at the load's peak beyond the server's own files: the table
    #                 plus what the load holds beside it (partitions before REMOVE PARTITIONING,
    #                 the table without its key during ADD PRIMARY KEY, sorted chunks)


@dataclass(frozen=True)
class Strategy:
    name: str
    load: Callable[[LoadJob], Outcome]
    table_ddl: Callable = plain_table    # (variant, database, table, engine) -> CREATE TABLE
    # The plan's space model (load/estimate.py): index variant -> its BytesPerRow
    bytes_per_row: dict = field(default_factory=dict, hash=False)
    scratch_copies: int = 0              # input-sized copies on the target: sorted chunks + DuckDB spill
    # Its rate holds as the table grows (key-ordered or unindexed appends), so a short load
    # tells its time (the plan's calibration); a random-order load's rate collapses past the pool.
    steady: bool = False
    # It inserts in the input's order, one row at a time into the final key: the B-tree pays a
    # page miss per insert once its working set outgrows the pool (the scale model's `misses` form;
    # written into the load's summary.json, which predict reads).
    in_file_order: bool = False
    # File by file with a ledger (load/ledger.py): an interrupted load resumes, and
    # load.time_limit_s stops it between files. The others load in one sorted stream or
    # end with one ALTER, so they can neither stop cleanly halfway nor resume.
    resumable: bool = False
    # Storage engines (core.index.table.ENGINES) it does not run on -> why; every one else it does.
    unsupported: dict = field(default_factory=dict, hash=False)

    def supports(self, engine: str) -> bool:
        return engine in ENGINES and engine not in self.unsupported


def sql(name: str, job: LoadJob, **kw) -> str:
    return read_sql("index", f"{name}.sql").format(database=job.database, table=job.table,
                                                   key=job.variant.key, **kw)


def parallel_files(job: LoadJob, files=None, trans_id: int | None = None, progress=None):
    into = IndexDestination(job.table, job.variant, tuple(job.files), job.database, trans_id)
    return load_files_parallel(job.server, into, job.todo if files is None else files, job.opts.connections,
                               progress=progress, stop=job.stop, record=job.record)
