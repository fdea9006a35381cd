"""The benchmark of index.source: file against the generator (make bench-own-ids): rows,
input files, seconds, rows/s and peak RSS of each step, from the runs' Snakemake
benchmark files (the whole process tree) and job metrics, as a Markdown table."""

import csv
import json
import sys
from pathlib import Path


def _bench(path: Path) -> dict:
    with open(path) as f:
        return next(csv.DictReader(f, delimiter="\t"))


def main(read_run: str, gen_run: str, files_dir: str) -> None:
    read, gen = Path(read_run), Path(gen_run)
    r = json.loads((read / "metrics" / "jobs" / "index_read.json").read_text())
    g = json.loads((gen / "metrics" / "index.json").read_text())["stages"]["index_generate"]
    rb = _bench(read / "benchmarks" / "index" / "read.tsv")
    gb = [_bench(p) for p in sorted((gen / "benchmarks" / "index").glob("generate-*.tsv"))]
    n_files = len(list(Path(files_dir).glob("*.parquet")))
    print("| step | rows | files read | seconds | rows/s | peak RSS (MiB) |")
    print("|---|---:|---:|---:|---:|---:|")
    print(f"| read and chunk (index.source: file; reading alone {r['read_rows_per_s']:,.0f} rows/s) | "
          f"{r['rows']:,} | {n_files} Parquet | {float(rb['s']):.1f} | {r['rows'] / float(rb['s']):,.0f} | "
          f"{float(rb['max_rss']):,.0f} |")
    gs = sum(float(b["s"]) for b in gb)
    print(f"| generator (index.source: generate) | {g['rows']:,} | - | {gs:.1f} | {g['rows'] / gs:,.0f} | "
          f"{max(float(b['max_rss']) for b in gb):,.0f} |")


if __name__ == "__main__":
    main(*sys.argv[1:4])
