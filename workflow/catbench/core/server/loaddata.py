"""``LOAD DATA LOCAL INFILE`` with the check every loader here needs.

With ``LOCAL`` the server turns errors into warnings and silently skips duplicate keys,
so a file counts as loaded only when the rows affected equal its rows and the server
gave no warning (Qserv's ``IngestFileSvc::loadDataIntoTable`` treats any warning as a
failure too). The error names the file and, where the server says, the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


# the table is full, the disk is full, a write or the engine failed: a full target, mostly
STORE_FAILED = (3, 1021, 1030, 1114)


class LoadError(RuntimeError):
    """A load did not put exactly the input into the table; the message names file and line."""


@dataclass(frozen=True)
class LoadDestination:
    """Where a LOAD DATA puts its rows: ``database.table``, into ``columns`` (None: all of
    them in order), with a ``SET`` clause when given."""
    database: str
    table: str
    columns: tuple[str, ...] | None = None
    set_sql: str | None = None


def load_data(conn, path, rows: int, into: LoadDestination, *, what: str | None = None, escaped: bool = False,
              explain_duplicate: Callable[[str, str, str], str] | None = None) -> int:
    """Load ``path`` into ``into``; returns the rows affected (== ``rows``).

    ``escaped=False`` takes the data literally (``ESCAPED BY ''``, latin1), as the index
    checksum does. ``explain_duplicate(head, key, key_name)`` words a duplicate-key error."""
    import mysql.connector  # here: a job that only writes chunk files never loads the client

    cur = conn.cursor()
    cols = f" ({', '.join(f'`{c}`' for c in into.columns)})" if into.columns else ""
    literal = " CHARACTER SET latin1" if not escaped else " CHARACTER SET utf8mb4"   # escaped: catalog text
    escape = " ESCAPED BY ''" if not escaped else ""
    try:
        cur.execute(f"LOAD DATA LOCAL INFILE %s INTO TABLE `{into.database}`.`{into.table}`{literal} "
                    f"FIELDS TERMINATED BY '\\t'{escape} LINES TERMINATED BY '\\n'{cols}"
                    + (f" SET {into.set_sql}" if into.set_sql else ""), (str(path),))
    except mysql.connector.Error as exc:
        if exc.errno in STORE_FAILED:   # the caller knows the target and says whether it is full
            raise LoadError(f"{what or path}: the server could not store its rows ({exc.errno}: {exc.msg})") from exc
        raise
    affected = cur.rowcount
    cur.execute("SHOW WARNINGS")
    warnings = cur.fetchall()
    if affected == rows and not warnings:
        return affected
    head = f"{what or path}: loaded {affected} of {rows} rows"
    raise LoadError(explain_warnings(head, warnings, explain_duplicate))


def explain_warnings(head: str, warnings, explain_duplicate=None) -> str:
    for level, code, msg in warnings:
        m = re.search(r"Duplicate entry '(.*)' for key '?([^']*)'?", msg)
        if m:
            if explain_duplicate:
                return explain_duplicate(head, m.group(1), m.group(2))
            return f"{head}: duplicate key {m.group(1)!r}"
        m = re.search(r"at row (\d+)", msg)
        if m:
            return f"{head}: line {m.group(1)}: {level} {code}: {msg}"
    if warnings:
        level, code, msg = warnings[0]
        more = f" (+{len(warnings) - 1} more warnings)" if len(warnings) > 1 else ""
        return f"{head}: {level} {code}: {msg}{more}"
    return f"{head} and the server gave no warning; check the file for empty lines"


def line_count(path: Path) -> int:
    n = 0
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            n += block.count(b"\n")
    return n
