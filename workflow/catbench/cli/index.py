"""CLI sub-commands of the index input: written from the partition's staging files, generated
straight from the catalog generator (parts, then merged), read from the user's own files,
the generator's positions, and the insert working set against the loads' pool."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from ..core.infra.metrics import JobTimer, summarise
from ..prepare import partition as partition_mod
from ..prepare.index_order import ORDERS
from ..prepare.spec import PoolSetup, PrepareSpec
from .common import command, read_config

log = logging.getLogger("catbench")
COMMANDS = ("index-input", "index-generate", "index-merge", "index-read", "index-positions", "index-working-set")


def cmd_index_input(args):
    from ..prepare.index_order import written_in_order
    with JobTimer("index_input", args.metrics) as t:
        r = written_in_order(args.order, lambda num, char: partition_mod.write_index_input(
            args.staging, args.files, num, char), args.out, args.out_char28, args.sort_memory)
        t.extra.update(**r)


def cmd_index_generate(args):
    """The index input straight from the catalog generator (no catalog, no chunk files)."""
    from ..prepare.index_only import generate_index
    spec = PrepareSpec.of(read_config(args.config))
    with JobTimer("index_generate", args.metrics) as t:
        r = generate_index(spec, args.files or spec.partition.index_files, args.out, args.out_char28,
                           rows=args.rows, workers=args.workers, part=args.part, parts=args.parts)
        t.extra.update(r, part=args.part, parts=args.parts)


def cmd_index_merge(args):
    """The index parts' files linked into one folder per variant, with one manifest each."""
    from ..prepare.index_order import written_in_order
    from ..prepare.index_only import merge_parts
    r = written_in_order(args.order, lambda num, char: merge_parts(args.staging, num, char), args.out,
                         args.out_char28, args.sort_memory)
    log.info("index input: %d files, %d rows in %s and %s", r["files"], r["rows"], args.out, args.out_char28)
    if args.job_metrics:
        summarise(args.job_metrics, args.summary, rows_stage="index_generate")


def cmd_index_read(args):
    """The index input from the user's own files (index.source: file; prepare/own/index.py)."""
    from ..core.infra.sources import sources
    from ..prepare.own.index import read_index, setup_from
    spec = PrepareSpec.of(read_config(args.config))
    setup = setup_from(spec, sources(spec.index.file.section), args.threads)
    with JobTimer("index_read", args.metrics) as t:
        r = read_index(setup, args.out, args.out_char28, args.sources)
        t.extra.update(r)
    log.info("index input: %d files, %d rows from %d source files in %s and %s", r["files"], r["rows"],
             r["source_files"], args.out, args.out_char28)
    if args.summary:
        summarise([args.metrics], args.summary, rows_stage="index_read")


def cmd_index_positions(args):
    """The generator's objectId, ra, dec as Parquet files (a catalog to read with index.source: file)."""
    from ..prepare.index_only import write_positions
    spec = PrepareSpec.of(read_config(args.config))
    with JobTimer("index_positions", args.metrics or Path(args.out) / "positions.json") as t:
        t.extra.update(write_positions(spec, args.files, args.out, args.workers))


def cmd_index_working_set(args):
    """The insert working set of the index input against the loads' buffer pool (JSON)."""
    from ..prepare.working_set import write
    doc = write(args.input, PoolSetup(**json.loads(args.setup)), args.out)
    for v, w in doc["variants"].items():
        log.info("%s: working set %d pages, pool %d pages (x%.2f)", v, w["working_set_pages"],
                 doc["pool_pages"], w["working_set_over_pool"])


def add_subcommands(sub) -> None:
    def add(name, fn, *flags):
        command(sub, name, fn, *flags, config=name not in ("index-input", "index-merge", "index-working-set"))

    arrival = (("--order", {"choices": ORDERS, "default": "generation", "required": False,
                            "help": "the rows' order in the files (index.order)"}),
               ("--sort-memory", {"default": "1GB", "required": False,
                                  "help": "chunk order: DuckDB's memory limit (index.sort_memory)"}))
    add("index-input", cmd_index_input, ("--staging", {"nargs": "+"}),
        ("--files", {"type": int}), "--out", "--out-char28", "--metrics", *arrival)
    add("index-generate", cmd_index_generate, "--out", "--out-char28", "--metrics",
        ("--files", {"type": int, "required": False, "help": "default: partition.index_files"}),
        ("--rows", {"type": int, "required": False, "help": "the first N rows (default: all)"}),
        ("--workers", {"type": int, "default": 1, "required": False}),
        ("--part", {"type": int, "default": 0, "required": False, "help": "this job's share of the files"}),
        ("--parts", {"type": int, "default": 1, "required": False, "help": "jobs the files are split over"}))
    add("index-merge", cmd_index_merge, ("--staging", {"nargs": "+"}), "--out", "--out-char28", *arrival,
        ("--job-metrics", {"nargs": "+", "required": False}),
        ("--summary", {"required": False, "help": "stage summary of the parts' job metrics"}))
    add("index-read", cmd_index_read, "--out", "--out-char28", "--metrics",
        ("--sources", {"help": "write each source file's path, bytes, mtime, CRC-32 and rows here (JSON)"}),
        ("--summary", {"required": False, "help": "stage summary of this job's metrics"}),
        ("--threads", {"type": int, "default": 1, "required": False, "help": "DuckDB's threads"}))
    add("index-positions", cmd_index_positions, "--out", ("--files", {"type": int}),
        ("--workers", {"type": int, "default": 1, "required": False}),
        ("--metrics", {"required": False, "help": "default: <out>/positions.json"}))
    add("index-working-set", cmd_index_working_set, ("--input", {"help": "index input folder (numeric keys)"}),
        ("--setup", {"help": "JSON: pool_bytes, page_bytes, id_layout, order (prepare/spec.py PoolSetup)"}),
        "--out")
