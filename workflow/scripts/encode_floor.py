#!/usr/bin/env python3
"""The CPU floor of a run's partition outputs on this machine: re-encode every chunk file
(TSV with polars, Parquet with snappy) and every catalog part (Parquet) from tables
already in memory, on one thread, writing to a RAM scratch dir. Compare the total with
the end-to-end wall time x cores to see how much of a partition run is pure encoding.
This is the floor of formatting every value of every chunk row (polars, the fastest
formatter here); the workflow instead formats each catalog value once in the catalog
stage and glues chunk lines from that text (prepare/rowtext.py).

    POLARS_MAX_THREADS=1 python workflow/scripts/encode_floor.py results/bench-partition
"""

import argparse
import glob
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq
from catbench.core.infra.files import (  # Parquet: the partition jobs' writer
    write_parquet,
    write_tsv,
)

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("run_dir", help="results/<run> of a finished partition stage")
ap.add_argument("--scratch", default="/dev/shm", help="where the throw-away copies go (RAM)")
a = ap.parse_args()
pa.set_cpu_count(1)
cpu = {"tsv": 0.0, "chunk_parquet": 0.0, "catalog_parquet": 0.0}
rows = 0
with tempfile.TemporaryDirectory(dir=a.scratch) as tmp:
    for f in sorted(glob.glob(f"{a.run_dir}/chunks/*/chunk_*.parquet")):
        t = pq.ParquetFile(f).read()
        rows += t.num_rows
        t0 = time.process_time()
        write_tsv(t, f"{tmp}/x.tsv")
        t1 = time.process_time()
        write_parquet(t, f"{tmp}/x.parquet")
        cpu["tsv"] += t1 - t0
        cpu["chunk_parquet"] += time.process_time() - t1
    for f in sorted(glob.glob(f"{a.run_dir}/catalog/*/part-*.parquet")):
        t = pq.ParquetFile(f).read()
        t0 = time.process_time()
        write_parquet(t, f"{tmp}/x.parquet")
        cpu["catalog_parquet"] += time.process_time() - t0
if not rows:
    raise SystemExit(f"no chunk files under {a.run_dir}/chunks: run the partition stage first")
print(f"chunk rows {rows:,}: " + ", ".join(f"{k} {v:.1f} CPU-s" for k, v in cpu.items())
      + f", total {sum(cpu.values()):.1f} CPU-s")
