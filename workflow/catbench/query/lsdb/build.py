"""The run's catalog as HATS collections, built with hats-import from the Parquet chunk files
(the duplicated overlap files left out: HATS keeps its own margins).

Object: the catalog, a margin of the partition's overlap (the widest radius SHV1 asks, as
Qserv's overlap holds it) and an index on ``objectId`` (LV1, the secondary index's twin).
Source: the catalog on the Sources' own positions, a margin as wide as the farthest Source
lies from its Object (measured on the chunk files: SHV2's join then finds every Source of an
Object at a tile's edge) and an index on ``objectId`` (LV2).

Each collection's rows are counted and checksummed against the chunk files after the build:
a missing or duplicated row fails the stage naming the table.
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from ..chunk_tables import ChunkInfo, parquet_files
from ..suite import QueryError

log = logging.getLogger(__name__)

# name -> (chunk folder, ra, dec, id column, rows attribute of ChunkInfo)
TABLES = {
    "Object": ("Object", "ra_PS", "decl_PS", "objectId", "object_rows"),
    "Source": ("Source", "ra", "decl", "sourceId", "source_rows"),
}
INDEX_COLUMN = "objectId"
RECORD = "build.json"      # beside the collections: the cut they were built with, and the build's figures
# The margins' slack over the widest distance they must hold: hats-import's own distance test
# and the suite's haversine differ in the last bits.
MARGIN_SLACK = 1.01
MIN_MARGIN_ARCSEC = 1.0


@dataclass(frozen=True)
class BuildOptions:
    """How the collections are cut: rows a tile holds at most, the finest HEALPix order, and
    the Object margin (the partition's overlap, in degrees)."""
    pixel_threshold: int
    highest_order: int
    overlap_deg: float


def chunk_files(chunks_dir, chunks: list[ChunkInfo], table: str) -> list[str]:
    """The chunk files holding ``table``'s rows (overlap files left out)."""
    folder, *_, attr = TABLES[table]
    return parquet_files(chunks_dir, chunks, folder, attr)


def _tally(rel) -> tuple[int, int]:
    """(rows, checksum) of a relation's id column ``k``: the checksum an order-free sum of its
    hashes, so a missing or doubled row changes it."""
    ((n, s),) = rel.aggregate("count(*), coalesce(sum(hash(k)::HUGEINT), 0)").fetchall()
    return int(n), int(s)


def tally_files(files: list[str], id_column: str) -> tuple[int, int]:
    con = duckdb.connect()
    try:
        return _tally(con.read_parquet(files).select(f'"{id_column}" AS k'))
    finally:
        con.close()


def source_reach_arcsec(chunks_dir, chunks: list[ChunkInfo]) -> float:
    """The farthest any Source lies from its Object, in arcseconds (the suite's haversine)."""
    con = duckdb.connect()
    try:
        o = con.read_parquet(chunk_files(chunks_dir, chunks, "Object")).select("objectId, ra_PS, decl_PS")
        s = con.read_parquet(chunk_files(chunks_dir, chunks, "Source")).select("objectId, ra, decl")
        o.create_view("o")
        s.create_view("s")
        (far,) = con.execute(
            "SELECT max(degrees(2 * asin(least(1, sqrt(pow(sin(radians(s.decl - o.decl_PS) / 2), 2) "
            "+ cos(radians(o.decl_PS)) * cos(radians(s.decl)) * pow(sin(radians(s.ra - o.ra_PS) / 2), 2))))))"
            " FROM s JOIN o USING (objectId)").fetchone()
    finally:
        con.close()
    return 3600.0 * (far or 0.0)


def order_for(rows_per_sq_deg: float, pixel_threshold: int) -> int:
    """The finest HEALPix order a tile needs: one where the densest chunk's crowding puts
    under a quarter of ``pixel_threshold`` rows in a pixel (hats-import's histogram, 12 * 4^k
    counters a worker, is its cost: the default order 10 took 40 s for 5,000 rows)."""
    sky = 4 * math.pi * (180 / math.pi) ** 2
    need = rows_per_sq_deg * sky / 12 / max(1.0, pixel_threshold / 4)
    return int(min(19, max(2, math.ceil(math.log(max(need, 1.0), 4)))))


# Margin pixels at most this many orders finer than the finest tile: hats-import's plan pairs
# every tile with its margin pixels, 4^k of them (a 1" margin under order-7 tiles took 70 s for
# 2,400 rows); a coarser margin order only widens the margin, which holds more than it must.
MARGIN_ORDERS = 3


def margin_order(arcsec: float, highest_order: int) -> int:
    """The margin's HEALPix order: the finest whose pixels span ``arcsec`` (hats-import's own
    choice), at most ``MARGIN_ORDERS`` past the tiles' finest order."""
    import hats.pixel_math.healpix_shim as hp
    order = min(int(hp.margin2order(margin_thr_arcmin=arcsec / 60.0)), highest_order + MARGIN_ORDERS)
    if order <= highest_order:
        raise QueryError(f"a margin of {arcsec:.1f} arcsec is wider than the order-{highest_order + 1} pixels "
                         f"finer than the tiles (queries.lsdb.highest_order): a higher order is needed")
    return order


def _import(table: str, files: list[str], out: Path, opts: BuildOptions, margin_arcsec: float, client):
    from hats_import.collection.arguments import CollectionArguments
    from hats_import.collection.run_import import run

    _, ra, dec, id_column, _ = TABLES[table]
    args = (CollectionArguments(output_artifact_name=table, output_path=str(out), progress_bar=False,
                                resume=False, tmp_dir=str(out / "tmp"))
            .catalog(input_file_list=files, file_reader="parquet", ra_column=ra, dec_column=dec,
                     sort_columns=id_column, pixel_threshold=opts.pixel_threshold,
                     highest_healpix_order=opts.highest_order)
            .add_margin(margin_threshold=None, margin_order=margin_order(margin_arcsec, opts.highest_order),
                        is_default=True)
            .add_index(indexing_column=INDEX_COLUMN, include_healpix_29=False))
    run(args, client)


def _tiles(collection: Path) -> list[Path]:
    return sorted((collection / collection.name / "dataset").glob("Norder=*/Dir=*/Npix=*.parquet"))


def _largest(tiles: list[Path], collection: Path) -> dict:
    """The tile with the most rows: its rows, bytes and path in the collection."""
    if not tiles:
        return {"largest_tile": None, "largest_tile_rows": 0, "largest_tile_bytes": 0}
    rows = {p: pq.read_metadata(p).num_rows for p in tiles}
    top = max(tiles, key=rows.get)
    return {"largest_tile": str(top.relative_to(collection)), "largest_tile_rows": rows[top],
            "largest_tile_bytes": top.stat().st_size}


def build_catalogs(chunks_dir, chunks: list[ChunkInfo], out: Path, opts: BuildOptions, client) -> dict:
    """Both collections under ``out`` (a fresh folder on the target); their build times, bytes,
    tiles and margins, checked row for row against the chunk files."""
    out.mkdir(parents=True, exist_ok=False)
    margins = {"Object": max(MIN_MARGIN_ARCSEC, MARGIN_SLACK * 3600.0 * opts.overlap_deg),
               "Source": max(MIN_MARGIN_ARCSEC, MARGIN_SLACK * source_reach_arcsec(chunks_dir, chunks))}
    summary = {"pixel_threshold": opts.pixel_threshold, "highest_order": opts.highest_order, "tables": {}}
    for table, (_, _, _, id_column, _) in TABLES.items():
        files = chunk_files(chunks_dir, chunks, table)
        t0 = time.perf_counter()
        _import(table, files, out, opts, margins[table], client)
        seconds = time.perf_counter() - t0
        collection = out / table
        tiles = _tiles(collection)
        want, got = tally_files(files, id_column), tally_files([str(p) for p in tiles], id_column)
        if want != got:
            raise QueryError(f"HATS catalog {table} at {collection}: {got[0]} rows (checksum {got[1]}) against the "
                             f"chunk files' {want[0]} (checksum {want[1]}): rows were lost or doubled in the build")
        nbytes = sum(p.stat().st_size for p in collection.rglob("*") if p.is_file())
        summary["tables"][table] = {
            "rows": want[0], "checksum": str(want[1]), "seconds": seconds, "bytes": nbytes,
            "rows_per_s": want[0] / seconds if seconds > 0 else None, "tiles": len(tiles),
            **_largest(tiles, collection),
            "margin_arcsec": margins[table], "path": str(collection)}
        log.info("HATS %s: %d rows in %d tiles, %.2f s (%.0f rows/s), %.1f MiB, margin %.2f arcsec", table,
                 want[0], len(tiles), seconds, want[0] / seconds if seconds > 0 else 0, nbytes / 2**20,
                 margins[table])
    (out / RECORD).write_text(json.dumps({"options": asdict(opts), "built": summary}))
    return summary


def kept_build(out: Path, chunks_dir, chunks: list[ChunkInfo], opts: BuildOptions) -> dict | None:
    """The collections a run kept under ``out`` (``--keep-data``), reused when they were cut as
    ``opts`` asks and every table's tiles still tally row for row with these chunk files: the
    build's figures marked ``reused``; None where there is none or anything differs."""
    try:
        doc = json.loads((out / RECORD).read_text())
    except (OSError, ValueError):
        return None
    if doc.get("options") != asdict(opts) or set(doc["built"]["tables"]) != set(TABLES):
        return None
    for table, (_, _, _, id_column, _) in TABLES.items():
        tiles = [str(p) for p in _tiles(out / table)]
        if not tiles or tally_files(chunk_files(chunks_dir, chunks, table), id_column) != tally_files(tiles, id_column):
            return None
    log.info("HATS catalogs kept at %s: built as asked, every row tallied with the chunk files; reused", out)
    return {**doc["built"], "reused": True}
