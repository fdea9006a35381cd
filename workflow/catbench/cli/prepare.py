"""CLI sub-commands of the catalog and partition stages: the config check, the patch, the
catalog parts, the partition's map and reduce, and the list of chunks; and config/README.md's
key tables written from the schema."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

from ..core.infra.files import read_parquet, write_parquet
from ..core.sky import chunking
from ..core.infra.metrics import JobTimer, Progress, summarise
from ..prepare import catalog as catalog_mod
from ..prepare import partition as partition_mod
from ..prepare.arrays import numpy
from ..prepare.chunker import Chunker
from ..prepare.ids import IdLayout
from ..prepare.spec import PrepareSpec
from .common import command, read_config

log = logging.getLogger("catbench")
COMMANDS = ("validate", "system-tools", "config-readme", "patch", "catalog-part", "partition-map", "partition-reduce", "chunk-list")


def cmd_validate(args):
    from ..core.infra.config import estimated_rows, n_groups
    cfg = read_config(args.config)
    print(json.dumps({"run": cfg["run"], "copies": catalog_mod.n_copies(cfg["catalog"]),
                      "parts": len(catalog_mod.part_copies(cfg["catalog"])),
                      "groups": n_groups(cfg), "estimated_rows": estimated_rows(cfg)}))


def cmd_config_readme(args) -> int:
    """write config/README.md's key tables from the schema (--check: only say where they differ)"""
    from ..core.infra.config import readme
    path = Path(args.readme) if args.readme else readme.readme_path()
    text = path.read_text()
    try:
        want = readme.render(text)
    except ValueError as exc:
        print(f"catbench config-readme: error: {exc}", file=sys.stderr)
        return 1
    diff = readme.first_difference(want, text)
    if args.check and diff:
        print(diff, file=sys.stderr)
    elif diff:
        path.write_text(want)
    return 1 if args.check and diff else 0


def cmd_system_tools(args):
    """The system tools the config's stages need (``make run`` and ``make env`` install them):
    the config read as the workflow reads it, its patch file's footprint and manifest
    (results/) included; ``--config all``: every tool."""
    from ..core.infra.jobs.system import TOOLS, needed_tools
    tools = TOOLS if args.config == "all" else needed_tools(read_config(args.config, results=Path("results")))
    print(" ".join(tools))


def cmd_patch(args):
    """The base patch: generated, or read from catalog.patch.file (prepare/own/patch.py)."""
    spec = PrepareSpec.of(read_config(args.config))
    own, files = None, spec.catalog.patch_file
    if not files.paths:
        IdLayout(spec)  # the id layout fits int64 (catalog.id_layout), before any work
    with JobTimer("patch", args.metrics) as t:
        if files.paths:
            from ..core.infra.sources import sources
            from ..prepare.own import patch as patch_file
            rows = patch_file.read_rows(files, sources(files.section, key=patch_file.KEY))
            patch_file.check_unchanged(spec.catalog, rows, args.manifest and Path(args.manifest))
            patch, own = patch_file.build_patch(spec.catalog, rows)
            IdLayout(spec, own)
        else:
            patch = catalog_mod.generate_patch(spec.catalog)
        for table, path in ((patch.objects, args.objects), (patch.sources, args.sources)):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            write_parquet(table, path)
        if args.text:  # the TSV text of the columns every copy shares (partition.formats: tsv)
            catalog_mod.write_shared_text(patch, *args.text)
        if own is not None:
            if not (args.own_ids and args.files):
                raise ValueError("catalog.patch.file: give --own-ids and --files (where the file's ids and "
                                 "each file's path, bytes and checksum go)")
            import pyarrow as pa
            write_parquet(pa.table({"objectId": own}), args.own_ids)
            patch_file.write_record(rows, files, args.files)
        t.extra.update(rows=patch.objects.num_rows + patch.sources.num_rows,
                       objects=patch.objects.num_rows, sources=patch.sources.num_rows)


def cmd_catalog_part(args):
    spec = PrepareSpec.of(read_config(args.config))
    patch = catalog_mod.Patch(read_parquet(args.patch_objects), read_parquet(args.patch_sources))
    own = numpy(read_parquet(args.own_ids).column("objectId")) if args.own_ids else None
    copies = catalog_mod.part_copies(spec.catalog.section)[args.part]
    layout = catalog_mod.copy_layout(spec.catalog.section)
    for p in (args.objects, args.sources):
        Path(p).parent.mkdir(parents=True, exist_ok=True)
    with JobTimer("catalog", args.metrics) as t:
        prog = Progress(f"catalog part {args.part} (copies)", len(copies))
        texts = {t: p for t, p in (("Object", args.text_objects), ("Source", args.text_sources)) if p}
        counts = catalog_mod.write_part(patch, layout, copies, args.objects, args.sources, IdLayout(spec, own),
                                        prog, texts)
        t.extra.update(rows=counts["objects"] + counts["sources"], part=args.part, **counts)


def cmd_partition_map(args):
    spec = PrepareSpec.of(read_config(args.config))
    with JobTimer("partition_map", args.metrics) as t:
        if len(args.objects) != len(args.sources):
            raise ValueError(f"{len(args.objects)} --objects but {len(args.sources)} --sources: give "
                             f"each catalog part's pair, in the same order")
        r = partition_mod.map_parts(spec, list(zip(args.objects, args.sources)), args.out, args.groups,
                                     args.threads)
        t.extra.update(rows=r["objects"] + r["sources"], **r)


def cmd_partition_reduce(args):
    with JobTimer("partition_reduce", args.metrics) as t:
        n = len(args.objects)  # a table without part text files has its varying text made here
        texts = list(zip(args.text_objects or [None] * n, args.text_sources or [None] * n))
        r = partition_mod.reduce_group(args.staging, list(zip(args.objects, args.sources)), args.group, args.chunks,
                                       args.manifest, args.formats, partition_mod.Prepared(texts, args.patch_text, args.patch))
        t.extra.update(group=args.group, **r)


def cmd_chunk_list(args):
    """chunks.tsv: rows and bytes per chunk from the reduces' manifests, with each chunk's
    centre on the sky (for the report's map of chunk rows)."""
    import duckdb
    import pyarrow as pa
    cfg = read_config(args.config)
    geometry = PrepareSpec.of(cfg).partition.geometry
    con = duckdb.connect()
    # The relation API reads and writes the files: no path is pasted into SQL text.
    con.read_csv([str(m) for m in args.manifests], delimiter="\t", header=True).create_view("manifests")
    ids = con.sql("SELECT DISTINCT chunkId::BIGINT AS chunkId FROM manifests ORDER BY 1").fetchnumpy()["chunkId"]
    ch = Chunker(geometry.num_stripes, geometry.num_sub_stripes_per_stripe)
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
        GROUP BY m.chunkId ORDER BY m.chunkId""").write_csv(str(args.out), sep="\t", header=True)
    # the catalog's shape beside the stages' figures: the report's first screen reads it
    summarise(args.job_metrics, args.summary, extra={"catalog": chunking.facts(cfg)})


def add_subcommands(sub) -> None:
    def add(name, fn, *flags):
        command(sub, name, fn, *flags, config=name != "partition-reduce")

    add("validate", cmd_validate)
    add("system-tools", cmd_system_tools)
    p = sub.add_parser("config-readme", help=cmd_config_readme.__doc__)
    p.add_argument("--readme", help="the README to write (default: config/README.md)")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 naming the first differing key")
    p.set_defaults(func=cmd_config_readme)
    text = ("--text", {"nargs": 2, "required": False, "metavar": ("OBJECTS", "SOURCES"),
                       "help": "also write the rows' TSV text (Arrow IPC), for the partition stage"})
    own_ids = ("--own-ids", {"required": False, "help": "catalog.patch.file: the file's ids by local id (Parquet)"})
    add("patch", cmd_patch, "--objects", "--sources", "--metrics", text, own_ids,
        ("--files", {"required": False, "help": "catalog.patch.file: each file's path, bytes, CRC-32 (JSON)"}),
        ("--manifest", {"required": False, "help": "catalog.patch.file: the workflow's manifest of the files "
                                                   "(prepare/own/manifest.py), rewritten when they differ from it"}))
    add("catalog-part", cmd_catalog_part, ("--part", {"type": int}), "--patch-objects",
        "--patch-sources", "--objects", "--sources", "--metrics", own_ids,
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
    add("chunk-list", cmd_chunk_list, ("--manifests", {"nargs": "+"}), "--out",
        ("--job-metrics", {"nargs": "+"}), "--summary")
