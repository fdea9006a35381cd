"""What one row of an InnoDB table may hold, for the chunk tables' DDL (the SQL types below, as
``query/chunk_tables.py`` declares them; InnoDB's default DYNAMIC rows on 16 KiB pages).
MariaDB refuses the CREATE TABLE past any of three limits, so a patch is measured against them
before any job:

- at most 1017 columns;
- the server's row: each column's largest size (a ``VARCHAR(255)`` of utf8mb4 1,020 bytes and
  2 length bytes) and a bit per nullable column, at most 65,535 bytes;
- the row on its page (``innodb_strict_mode``, on by default): a 5-byte header, a bit per
  nullable column, the 13 bytes of the transaction id and undo pointer, each fixed-size column,
  and 21 bytes for each such VARCHAR (InnoDB may move its text off the page: a 20-byte pointer
  and a length byte), under 8,126 bytes, half a page.

Measured on MariaDB 10.11: 1012 INT columns beside the chunk table's five fit, 1013 do not;
a row of 65,535 bytes fits, 65,536 not; 8,125 bytes on the page fit, 8,126 not.
"""

from __future__ import annotations

import pyarrow as pa

from ..infra.sources import TEXT_WIDTH

TEXT = f"VARCHAR({TEXT_WIDTH}) CHARACTER SET utf8mb4"
SQL_TYPES = {pa.int64(): "BIGINT", pa.int32(): "INT", pa.int16(): "SMALLINT", pa.int8(): "TINYINT",
             pa.float64(): "DOUBLE", pa.float32(): "FLOAT", pa.bool_(): "BOOLEAN", pa.string(): TEXT}
NOT_NULL = ("objectId", "sourceId", "chunkId", "subChunkId")   # the keys; every other column may be NULL
MAX_COLUMNS = 1017
MAX_ROW_BYTES = 65_535
MAX_PAGE_ROW_BYTES = 8_126   # a row on its page stays under this
_SIZES = {"BIGINT": 8, "INT": 4, "SMALLINT": 2, "TINYINT": 1, "DOUBLE": 8, "FLOAT": 4, "BOOLEAN": 1}
_TEXT_ROW = 4 * TEXT_WIDTH + 2    # utf8mb4's 4 bytes a character, 2 length bytes
_TEXT_PAGE = 20 + 1               # off the page: its pointer and a length byte
_PAGE_OVERHEAD = 5 + 6 + 7        # record header, transaction id, undo pointer


def too_wide(schema: pa.Schema) -> str | None:
    """Why a chunk table of ``schema``'s columns (Arrow types of ``SQL_TYPES``) cannot be
    created, naming the limit; None when it can."""
    types = [SQL_TYPES[f.type] for f in schema]
    if len(types) > MAX_COLUMNS:
        return f"{len(types)} columns; an InnoDB table holds at most {MAX_COLUMNS}"
    null_bytes = (sum(f.name not in NOT_NULL for f in schema) + 7) // 8
    texts = types.count(TEXT)
    fixed = sum(_SIZES.get(t, 0) for t in types)
    row = null_bytes + fixed + texts * _TEXT_ROW
    if row > MAX_ROW_BYTES:
        return (f"a row of up to {row:,} bytes ({texts} text columns of {_TEXT_ROW:,} bytes each: {TEXT}); "
                f"MariaDB's rows hold at most {MAX_ROW_BYTES:,} bytes")
    page = _PAGE_OVERHEAD + null_bytes + fixed + texts * _TEXT_PAGE
    if page >= MAX_PAGE_ROW_BYTES:
        return (f"a row of {page:,} bytes on its InnoDB page ({len(types)} columns: numbers of 1 to 8 bytes, "
                f"{_TEXT_PAGE} bytes a text column); InnoDB keeps a row under {MAX_PAGE_ROW_BYTES:,} bytes, "
                "half a 16 KiB page")
    return None
