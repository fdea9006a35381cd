"""The sort before a `sorted` or `bulk` load's first row, alone, at several row counts: DuckDB's
ORDER BY over read_csv of random BIGINT index lines (the query load/sorted_stream.py runs), its
seconds to the first row and to the last, each size twice. What predict/fitted.py pre_line rests on.

    python workflow/scripts/sort_rate.py DIR [--rows 1000000 4000000 16000000] [--memory 4GB]
"""

import argparse
import shutil
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

QUERY = ("SELECT k, c, s FROM read_csv($files, delim='\t', header=false, quote='', escape='', auto_detect=false, "
         "columns={'k': 'BIGINT', 'c': 'INTEGER', 's': 'INTEGER'}) ORDER BY k")


def lines(path: Path, rows: int) -> None:
    rng = np.random.default_rng(rows)
    pacsv.write_csv(pa.table({"k": rng.integers(0, 2**62, rows, dtype=np.int64),
                              "c": rng.integers(0, 300_000, rows, dtype=np.int32),
                              "s": rng.integers(0, 10**6, rows, dtype=np.int32)}),
                    path, pacsv.WriteOptions(include_header=False, delimiter="\t"))


def sort_once(path: Path, spill: Path, memory: str) -> tuple[float, float, int]:
    con = duckdb.connect(config={"memory_limit": memory, "temp_directory": str(spill), "threads": 2,
                                 "preserve_insertion_order": True})
    t0 = time.monotonic()
    first, n = None, 0
    for batch in con.sql(QUERY, params={"files": [str(path)]}).to_arrow_reader(50_000):
        first = first or time.monotonic()
        n += batch.num_rows
    con.close()
    return first - t0, time.monotonic() - t0, n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", type=Path, help="a scratch folder on the disk to sort on (removed after)")
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 4_000_000, 16_000_000])
    ap.add_argument("--memory", default="4GB")
    a = ap.parse_args()
    a.dir.mkdir(parents=True, exist_ok=False)
    try:
        for rows in a.rows:
            lines(a.dir / f"in{rows}.tsv", rows)
        for rep in (1, 2):
            for rows in a.rows:
                first, last, n = sort_once(a.dir / f"in{rows}.tsv", a.dir / "spill", a.memory)
                print(f"{n:>12,} rows, repetition {rep}: first row {first:.2f} s ({1e9 * first / n:.0f} ns a row), "
                      f"last {last:.2f} s", flush=True)
    finally:
        shutil.rmtree(a.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
