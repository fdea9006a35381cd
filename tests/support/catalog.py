"""A small real catalog built and partitioned as the workflow does it, in-process: the
config, the catalog parts with their text files, the map/reduce/index jobs, and the
chunk files they write."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
from catbench.core.infra.config import validate
from catbench.core.infra.files import write_parquet
from catbench.core.sky.copies import PART_TEXT
from catbench.prepare import catalog as cat_mod
from catbench.prepare import partition as part_mod
from catbench.prepare.chunker import Chunker
from catbench.prepare.ids import IdLayout
from catbench.prepare.spec import CatalogSpec, PrepareSpec

INDEX_FILES = 5
GROUPS = 3


def small_config(**partition):
    return validate({
        "run": "ptest", "seed": 42,
        "catalog": {"patch": {"objects": 2000}, "sources_per_object": 3,
                    "max_objects_per_part": 2000 * 4,
                    "sky": {"ra_min_deg": 0, "ra_max_deg": 20, "dec_min_deg": -3, "dec_max_deg": 3}},
        "partition": {"index_files": INDEX_FILES, **partition},
    })


def build_catalog(cfg, out: Path):
    """Catalog parts as the workflow writes them, with their TSV text files (the text of
    each part's varying Object columns, and of the patch's shared ones: see rowtext.py)."""
    cat = cfg["catalog"]
    patch = cat_mod.generate_patch(CatalogSpec.of(cfg))
    layout = cat_mod.copy_layout(cat)
    parts = []
    (out / "patch").mkdir(parents=True, exist_ok=True)
    write_parquet(patch.objects, out / "patch/Object.parquet")
    write_parquet(patch.sources, out / "patch/Source.parquet")
    cat_mod.write_shared_text(patch, *text_paths(out / "patch/Object.parquet", out / "patch/Source.parquet"))
    for k, copies in enumerate(cat_mod.part_copies(cat)):
        o, s = out / f"Object/part-{k:05d}.parquet", out / f"Source/part-{k:05d}.parquet"
        o.parent.mkdir(parents=True, exist_ok=True)
        s.parent.mkdir(parents=True, exist_ok=True)
        cat_mod.write_part(patch, layout, copies, o, s, IdLayout(PrepareSpec.of(cfg)),
                           text_paths=dict(zip(("Object", "Source"), text_paths(o, s))))
        parts.append((o, s))
    return parts


def text_paths(*parquets):
    return [p.with_suffix(".text.arrow") for p in parquets]


def part_texts(o, s, tables=PART_TEXT):
    """A part's (Object, Source) varying text files; None for a table not in ``tables``
    (its varying columns are then formatted by the reduce)."""
    return [p if t in tables else None for p, t in zip(text_paths(o, s), ("Object", "Source"))]


def run_partition(cfg, parts, out: Path, groups: int, formats=part_mod.FORMATS, text=True,
                  tables=PART_TEXT, patch=True):
    """As the workflow runs it; ``patch=False``: every column decoded from the parts."""
    staging = []
    for k, (o, s) in enumerate(parts):
        d = out / f"staging/part-{k:05d}"
        part_mod.map_part(PrepareSpec.of(cfg), o, s, d, groups)
        staging.append(d)
    texts = [part_texts(o, s, tables) for o, s in parts] if text else None
    shared = text_paths(*(p.parent.parent / "patch" / f"{t}.parquet" for p, t in zip(parts[0], ("Object", "Source")))) \
        if text else None
    patches = [p.parent.parent / "patch" / f"{t}.parquet" for p, t in zip(parts[0], ("Object", "Source"))] \
        if patch else None
    for g in range(groups):
        part_mod.reduce_group(staging, parts, g, out / "chunks", out / f"chunks/groups/group-{g:05d}.tsv",
                              formats, part_mod.Prepared(texts, shared, patches))
    part_mod.write_index_input(staging, cfg["partition"]["index_files"], out / "index/input",
                               out / "index/input_char28")
    return out


def chunk_files(root: Path, table: str, kind: str, ext="parquet"):
    """{chunkId: path} for Object / Source / overlap chunk files."""
    folder = root / "chunks" / table
    pat = re.compile(rf"chunk_(\d+){'_overlap' if kind == 'overlap' else ''}\.{ext}$")
    return {int(m.group(1)): p for p in sorted(folder.iterdir()) if (m := pat.fullmatch(p.name))}


def read_tsv(path: Path, schema: pa.Schema) -> pa.Table:
    return pcsv.read_csv(
        path, read_options=pcsv.ReadOptions(column_names=schema.names),
        parse_options=pcsv.ParseOptions(delimiter="\t", quote_char=False),
        convert_options=pcsv.ConvertOptions(column_types=schema, null_values=["\\N"],
                                            strings_can_be_null=True)).cast(schema)


def partitioned(root: Path) -> dict:
    """The small catalog built and partitioned into GROUPS chunk groups under ``root``, and
    what the tests check it against."""
    cfg = small_config()
    parts = build_catalog(cfg, root / "catalog")
    assert len(parts) >= 3  # several parts: merging across parts is exercised
    run_partition(cfg, parts, root, GROUPS)
    objects = pa.concat_tables([pq.read_table(o) for o, _ in parts])
    sources = pa.concat_tables([pq.read_table(s) for _, s in parts])
    return {"cfg": cfg, "root": root, "parts": parts, "objects": objects, "sources": sources,
            "chunker": Chunker.of(PrepareSpec.of(cfg).partition.geometry)}
