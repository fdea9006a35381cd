"""``catbench`` command line: one sub-command per workflow step. The Snakemake rules
call these; they work the same by hand (``catbench --help``)."""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import signal
import sys
import threading
from pathlib import Path

from ..core.infra.files import atomic_path, read_parquet, write_parquet
from ..core.infra.metrics import JobTimer, Progress, setup_logging, summarise
from ..prepare import catalog as catalog_mod
from ..prepare import partition as partition_mod
from ..prepare.ids import IdLayout
from .common import config_arg, interrupted, on_signal

log = logging.getLogger("catbench")


# core.infra.config (jsonschema), core.infra.targets (psutil) and load.comparison are imported by the
# commands that use them: a partition job starts 0.1 CPU-s faster (22 jobs at bench scale).


def _config(text: str) -> dict:
    """--config takes a JSON object (the sections a rule gives its job) or a path to a
    YAML/JSON file (a user's config, over its ``base`` as the workflow reads it)."""
    from ..core.infra.config import load, validate
    if text.lstrip().startswith("{"):
        return validate(config_arg(text), whole=False)
    return load(text)


def cmd_validate(a):
    from ..core.infra.config import estimated_rows, n_groups
    cfg = _config(a.config)
    print(json.dumps({"run": cfg["run"], "copies": catalog_mod.n_copies(cfg["catalog"]),
                      "parts": len(catalog_mod.part_copies(cfg["catalog"])),
                      "groups": n_groups(cfg), "estimated_rows": estimated_rows(cfg)}))


def cmd_patch(a):
    cfg = _config(a.config)
    IdLayout(cfg)  # the id layout fits int64 (catalog.id_layout), before any work
    with JobTimer("patch", a.metrics) as t:
        patch = catalog_mod.generate_patch(cfg["catalog"], cfg["seed"])
        for table, path in ((patch.objects, a.objects), (patch.sources, a.sources)):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            write_parquet(table, path)
        if a.text:  # the TSV text of the columns every copy shares (partition.formats: tsv)
            catalog_mod.write_shared_text(patch, *a.text)
        t.extra.update(rows=patch.objects.num_rows + patch.sources.num_rows,
                       objects=patch.objects.num_rows, sources=patch.sources.num_rows)


def cmd_catalog_part(a):
    cfg = _config(a.config)
    patch = catalog_mod.Patch(read_parquet(a.patch_objects), read_parquet(a.patch_sources))
    copies = catalog_mod.part_copies(cfg["catalog"])[a.part]
    layout = catalog_mod.copy_layout(cfg["catalog"])
    for p in (a.objects, a.sources):
        Path(p).parent.mkdir(parents=True, exist_ok=True)
    with JobTimer("catalog", a.metrics) as t:
        prog = Progress(f"catalog part {a.part} (copies)", len(copies))
        texts = {t: p for t, p in (("Object", a.text_objects), ("Source", a.text_sources)) if p}
        counts = catalog_mod.write_part(patch, layout, copies, a.objects, a.sources, IdLayout(cfg),
                                        prog, texts)
        t.extra.update(rows=counts["objects"] + counts["sources"], part=a.part, **counts)


def cmd_partition_map(a):
    cfg = _config(a.config)
    with JobTimer("partition_map", a.metrics) as t:
        if len(a.objects) != len(a.sources):
            raise ValueError(f"{len(a.objects)} --objects but {len(a.sources)} --sources: give "
                             f"each catalog part's pair, in the same order")
        r = partition_mod.map_parts(cfg, list(zip(a.objects, a.sources)), a.out, a.groups,
                                     a.threads)
        t.extra.update(rows=r["objects"] + r["sources"], **r)


def cmd_partition_reduce(a):
    with JobTimer("partition_reduce", a.metrics) as t:
        n = len(a.objects)  # a table without part text files has its varying text made here
        texts = list(zip(a.text_objects or [None] * n, a.text_sources or [None] * n))
        r = partition_mod.reduce_group(a.staging, list(zip(a.objects, a.sources)), a.group, a.chunks,
                                       a.manifest, a.formats, partition_mod.Prepared(texts, a.patch_text, a.patch))
        t.extra.update(group=a.group, **r)


def cmd_index_input(a):
    from ..prepare.arrival import written_in_order
    with JobTimer("index_input", a.metrics) as t:
        r = written_in_order(a.order, lambda num, char: partition_mod.write_index_input(
            a.staging, a.files, num, char), a.out, a.out_char28, a.sort_memory)
        t.extra.update(**r)


def cmd_index_generate(a):
    """The index input straight from the catalog generator (no catalog, no chunk files)."""
    from ..prepare.index_only import generate_index
    cfg = _config(a.config)
    with JobTimer("index_generate", a.metrics) as t:
        r = generate_index(cfg, a.files or cfg["partition"]["index_files"], a.out, a.out_char28,
                           rows=a.rows, workers=a.workers, part=a.part, parts=a.parts)
        t.extra.update(r, part=a.part, parts=a.parts)


def cmd_index_merge(a):
    """The index parts' files linked into one folder per variant, with one manifest each."""
    from ..prepare.arrival import written_in_order
    from ..prepare.index_only import merge_parts
    r = written_in_order(a.order, lambda num, char: merge_parts(a.staging, num, char), a.out,
                         a.out_char28, a.sort_memory)
    log.info("index input: %d files, %d rows in %s and %s", r["files"], r["rows"], a.out, a.out_char28)
    if a.job_metrics:
        summarise(a.job_metrics, a.summary, rows_stage="index_generate")


def cmd_index_read(a):
    """The index input from the user's own files (index.source: file; prepare/own_ids.py)."""
    from ..core.infra.files import sources
    from ..prepare.own_ids import read_index, setup_from
    cfg = _config(a.config)
    setup = setup_from(cfg, sources(cfg["index"]["file"]), a.threads)
    with JobTimer("index_read", a.metrics) as t:
        r = read_index(setup, a.out, a.out_char28, a.sources)
        t.extra.update(r)
    log.info("index input: %d files, %d rows from %d source files in %s and %s", r["files"], r["rows"],
             r["source_files"], a.out, a.out_char28)
    if a.summary:
        summarise([a.metrics], a.summary, rows_stage="index_read")


def cmd_index_positions(a):
    """The generator's objectId, ra, dec as Parquet files (a catalog to read with index.source: file)."""
    from ..prepare.index_only import write_positions
    cfg = _config(a.config)
    with JobTimer("index_positions", a.metrics or Path(a.out) / "positions.json") as t:
        t.extra.update(write_positions(cfg, a.files, a.out, a.workers))


def cmd_index_working_set(a):
    """The insert working set of the index input against the loads' buffer pool (JSON)."""
    from ..prepare.working_set import write
    doc = write(a.input, json.loads(a.setup), a.out)
    for v, w in doc["variants"].items():
        log.info("%s: working set %d pages, pool %d pages (x%.2f)", v, w["working_set_pages"],
                 doc["pool_pages"], w["working_set_over_pool"])


def cmd_estimate(a):
    """What the run will need on each target (input, tables, scratch), before it starts."""
    from ..load.driver import calibrate
    from ..load.estimate import estimate, fit_tables, lines, time_lines
    if a.fit:   # refit the model's table figures from loads of several sizes (estimate.md)
        print(json.dumps(fit_tables(a.fit), indent=1))
        return
    if not a.config:
        raise ValueError("give --config (the run to estimate) or --fit (loads to refit the model from)")
    cfg = _config(a.config)
    est = estimate(cfg, Path(a.results) if a.results else None)
    for line in lines(est):
        print(line)
    if a.calibrate:
        import tempfile
        if not a.results:
            raise ValueError("--calibrate loads the run's index input: give --results results/<run>")
        from ..core.server.loaddata import LoadError
        from ..core.server.tools import ServerError
        with tempfile.TemporaryDirectory(prefix="catbench-calibrate-") as tmp:
            try:
                est["time"] = calibrate(cfg, a.calibrate, Path(a.results), a.calibrate_files, Path(tmp))
            except (LoadError, ServerError) as exc:   # named, not a traceback
                raise ValueError(f"calibration load on target {a.calibrate}: {exc}") from None
        for line in time_lines(est["time"]):
            print(line)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(a.out) as tmp:
            tmp.write_text(json.dumps(est, indent=1) + "\n")


def cmd_chunk_list(a):
    """chunks.tsv: rows and bytes per chunk from the reduces' manifests, with each chunk's
    centre on the sky (for the report's map of chunk rows)."""
    import duckdb
    import pyarrow as pa
    from ..prepare.chunker import Chunker
    part = _config(a.config)["partition"]
    con = duckdb.connect()
    # The relation API reads and writes the files: no path is pasted into SQL text.
    con.read_csv([str(m) for m in a.manifests], delimiter="\t", header=True).create_view("manifests")
    ids = con.sql("SELECT DISTINCT chunkId::BIGINT AS chunkId FROM manifests ORDER BY 1").fetchnumpy()["chunkId"]
    ch = Chunker(part["num_stripes"], part["num_sub_stripes_per_stripe"])
    centres = pa.table({"chunkId": ids, "ra_centre": ch.chunk_ra_centre(ids).round(4),
                        "dec_centre": ch.chunk_dec_centre(ids).round(4)})
    con.register("centres", centres)
    con.sql("""
        SELECT m.chunkId,
               SUM(rows) FILTER (WHERE "table" = 'Object')        AS object_rows,
               SUM(rows) FILTER (WHERE "table" = 'Source')        AS source_rows,
               SUM(rows) FILTER (WHERE "table" = 'ObjectOverlap') AS overlap_rows,
               SUM(parquet_bytes) AS parquet_bytes, SUM(tsv_bytes) AS tsv_bytes,
               any_value(c.ra_centre) AS ra_centre, any_value(c.dec_centre) AS dec_centre
        FROM manifests AS m JOIN centres AS c ON m.chunkId = c.chunkId
        GROUP BY m.chunkId ORDER BY m.chunkId""").write_csv(str(a.out), sep="\t", header=True)
    summarise(a.job_metrics, a.summary)


def cmd_target_info(a):
    """Check one storage target (exists or can be created, writable, room for the
    estimated data) and record its filesystem, device and size."""
    from ..core.infra.config import target_dir
    from ..core.infra.targets import check_targets
    cfg = _config(a.config)
    info = check_targets(cfg, [a.target])[a.target]
    info["run_dir"] = str(target_dir(cfg, a.target))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(a.out) as tmp:
        tmp.write_text(json.dumps(info, indent=1, default=str) + "\n")


def cmd_load_compare(a):
    """One row per load (target, variant, engine, strategy) with speed-up vs one-file-at-a-time; the
    engine x strategy pairs not run, with their reason, to --not-run-out."""
    from ..load.comparison import compare_loads, write_not_run
    compare_loads(a.summaries, a.out)
    if a.not_run_out:
        write_not_run(json.loads(a.not_run or "[]"), a.not_run_out)


# Sub-command families in their own modules, imported only when one of their commands
# runs: a catalog or partition job then skips the MySQL, DuckDB and plotting imports
# (0.6 s of each job's start-up, 35 jobs per partition run).
FAMILIES = {"storage": ("fio", "load-index"),
            "report": ("tables", "report", "compare", "provenance"),
            "queries": ("queries", "queries-check"),
            "restart": ("restart",),
            "cluster": ("cluster",),
            "predict": ("predict", "ladder")}


def _families(argv, own) -> list[str]:
    """Modules to import for this command line: its own family, none for a command
    of this module (``own``), all for --help or an unknown command."""
    command = next((w for w in argv if not w.startswith("-")), None)
    named = [m for m, commands in FAMILIES.items() if command in commands]
    return named or ([] if command in own else list(FAMILIES))


def main(argv=None):
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, on_signal)
    setup_logging()
    ap = argparse.ArgumentParser(prog="catbench", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)

    def add(name, fn, *args):
        p = sub.add_parser(name, help=fn.__doc__)
        p.set_defaults(fn=fn)
        p.add_argument("--config", required=name not in ("partition-reduce", "index-input", "index-merge", "estimate",
                                                        "index-working-set",
                                                        "load-compare"),
                       help="config as JSON text or a YAML file")
        for spec in args:
            flag, kw = spec if isinstance(spec, tuple) else (spec, {})
            p.add_argument(flag, **({"required": True} | kw))
        return p

    add("validate", cmd_validate)
    text = ("--text", {"nargs": 2, "required": False, "metavar": ("OBJECTS", "SOURCES"),
                       "help": "also write the rows' TSV text (Arrow IPC), for the partition stage"})
    add("patch", cmd_patch, "--objects", "--sources", "--metrics", text)
    add("catalog-part", cmd_catalog_part, ("--part", {"type": int}), "--patch-objects",
        "--patch-sources", "--objects", "--sources", "--metrics",
        *((f"--text-{t}", {"required": False, "help": f"also write the {t} rows' varying TSV text "
                           f"(Arrow IPC), for the partition stage"}) for t in ("objects", "sources")))
    add("partition-map", cmd_partition_map, ("--objects", {"nargs": "+"}),
        ("--sources", {"nargs": "+"}), ("--out", {"help": "one staging dir per part is written in it"}),
        ("--groups", {"type": int}), "--metrics",
        ("--threads", {"type": int, "default": 1, "required": False, "help": "parts mapped at once"}))
    add("partition-reduce", cmd_partition_reduce, ("--staging", {"nargs": "+"}),
        ("--objects", {"nargs": "+"}), ("--sources", {"nargs": "+"}),
        ("--group", {"type": int}), "--chunks", "--manifest", "--metrics",
        ("--formats", {"nargs": "+", "choices": partition_mod.FORMATS, "required": False,
                       "default": list(partition_mod.FORMATS)}),
        ("--text-objects", {"nargs": "+", "required": False}),
        ("--text-sources", {"nargs": "+", "required": False}),
        ("--patch-text", {"nargs": 2, "required": False, "metavar": ("OBJECTS", "SOURCES")}),
        ("--patch", {"nargs": 2, "required": False, "metavar": ("OBJECTS", "SOURCES"),
                     "help": "the patch's Parquet files: shared columns taken from them"}))
    arrival = (("--order", {"choices": ("generation", "chunk"), "default": "generation", "required": False,
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
        ("--setup", {"help": "JSON: pool_bytes, page_bytes, id_layout, order (prepare/working_set.py pool)"}),
        "--out")
    add("estimate", cmd_estimate,
        ("--results", {"required": False, "help": "results/<run>: index input already there is measured"}),
        ("--out", {"required": False, "help": "also write the estimate as JSON"}),
        ("--calibrate", {"required": False, "metavar": "TARGET",
                         "help": "also time the steady strategies (sorted, bulk, deferred-pk) from a short "
                                 "load of the first --calibrate-files input files on this target"}),
        ("--calibrate-files", {"type": int, "default": 4, "required": False}),
        ("--fit", {"nargs": "+", "required": False, "metavar": "SUMMARY_JSON",
                   "help": "print table bytes per row fitted to these loads' summary.json instead"}))
    add("chunk-list", cmd_chunk_list, ("--manifests", {"nargs": "+"}), "--out",
        ("--job-metrics", {"nargs": "+"}), "--summary")
    add("target-info", cmd_target_info, "--target", "--out")
    add("load-compare", cmd_load_compare, ("--summaries", {"nargs": "+"}), "--out",
        ("--not-run", {"required": False, "help": "JSON list of {engine, strategy, reason} not run"}),
        ("--not-run-out", {"required": False, "help": "write those to this JSON file"}))
    for module in _families(argv if argv is not None else sys.argv[1:], set(sub.choices)):
        importlib.import_module(f".{module}", __package__).add_subcommands(sub)
    logging.getLogger("mysql.connector").setLevel(logging.WARNING)
    a = ap.parse_args(argv)
    try:
        return _dispatch(a)
    except KeyboardInterrupt:       # Ctrl-C: the clean-up ran (finally blocks); one line, no traceback
        return interrupted(a.cmd)


def _dispatch(a) -> int:
    if hasattr(a, "func"):          # family sub-commands (guarded) return their exit code
        return a.func(a)
    try:
        a.fn(a)
    except Exception as e:  # ConfigError is a ValueError; TargetError exists once imported
        targets = sys.modules.get(f"{__package__.rpartition('.')[0]}.core.infra.targets")
        if not isinstance(e, (ValueError, OSError) + ((targets.TargetError,) if targets else ())):
            raise
        log.error("%s", e)
        print(f"catbench {a.cmd}: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
