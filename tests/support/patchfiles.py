"""A user's patch files as survey pipelines write them, for the own-patch tests: tract/patch
packed ids, ra across 0/360, fluxes, carried columns; and the config that reads them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
from catbench.core.infra.sources import sources
from catbench.core.infra.config import validate
from catbench.prepare.own import patch as pf
from catbench.prepare.own import spec as own_spec
from catbench.prepare.spec import OwnFiles

COLUMNS = {"objectId": "obj_id", "ra": "coord_ra", "dec": "coord_dec",
           **{f"{b}Flux_PS": f"{b}_psfFlux" for b in "ugrizy"}}
SKY = {"ra_min_deg": 0, "ra_max_deg": 12, "dec_min_deg": -3, "dec_max_deg": 3}


def packed_ids(ra, dec) -> np.ndarray:
    """An LSST-style 64-bit packing: tract (10 x 10 deg) << 48 | patch (1 x 1 deg) << 40 | sequence,
    the rows in pipeline order (a patch's objects together)."""
    tract = (np.floor(ra / 10) * 18 + np.floor((dec + 90) / 10)).astype(np.int64)
    patch = (np.floor(ra % 10) * 10 + np.floor((dec + 90) % 10)).astype(np.int64)
    cell = (tract << 8) | patch
    seq = np.zeros(len(ra), np.int64)
    order = np.argsort(cell, kind="stable")
    _, first, counts = np.unique(cell[order], return_index=True, return_counts=True)
    seq[order] = np.arange(len(ra)) - np.repeat(first, counts)
    return (tract << 48) | (patch << 40) | seq


def rows(n: int, ra_lo=-1.0, ra_hi=1.0, dec_lo=-1.0, dec_hi=1.0, seed=5) -> dict:
    """A patch's columns under the user's names: ra across 0/360, fluxes, a carried int and float."""
    rng = np.random.default_rng(seed)
    ra = np.mod(rng.uniform(ra_lo, ra_hi, n), 360.0)
    dec = rng.uniform(dec_lo, dec_hi, n)
    flux = 10 ** (-(rng.uniform(18, 24, (n, 6)) + 48.6) / 2.5)
    cols = {"coord_dec": dec, "obj_id": packed_ids(ra, dec), "coord_ra": ra}
    cols.update({f"{b}_psfFlux": flux[:, k] for k, b in enumerate("ugrizy")})
    cols.update(extendedness=rng.integers(0, 2, n).astype(np.int64), shape_xx=rng.normal(1, 0.1, n))
    return cols


def write(cols: dict, path: Path, fmt: str = "parquet") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    t = pa.table(cols)
    if fmt == "parquet":
        pq.write_table(t, path)
    else:
        pcsv.write_csv(t, path, pcsv.WriteOptions(delimiter="\t" if fmt == "tsv" else ","))
    return path


def config(paths, stages=(), columns=COLUMNS, id_layout="source", sky=SKY, **extra) -> dict:
    return validate({"seed": 7, "stages": list(stages),
                     "catalog": {"patch": {"file": {"paths": [str(p) for p in paths], "columns": columns, **extra}},
                                 "sky": sky, "id_layout": id_layout, "sources_per_object": 2},
                     "partition": {"index_files": 4}}, resolve=own_spec.resolve)


def read(cfg: dict) -> pf.FileRows:
    section = cfg["catalog"]["patch"]["file"]
    return pf.read_rows(OwnFiles.of(section), sources(section, key=pf.KEY))
