"""The Gaia DR3-like patch of workflow/scripts/make_gaia_patch.py read as config/survey-gaia.yaml
reads it: its 64-bit source_ids exact, its ECSV's declared types kept into the chunk tables'
DDL, its numeric and boolean `null`s NULL."""

from __future__ import annotations

import gzip
import re
import subprocess
import sys

import numpy as np
import pyarrow as pa
import yaml
from catbench.core.server.rowsize import _SIZES
from catbench.prepare.own import patch as pf
from catbench.prepare.spec import CatalogSpec
from catbench.query.chunk_tables import columns_ddl
from support.patchfiles import config, read
from support.paths import REPO

ARROW = {"int64": pa.int64(), "float64": pa.float64(), "float32": pa.float32(), "int16": pa.int16(),
         "int8": pa.int8(), "bool": pa.bool_(), "string": pa.string()}
SQL = {"int64": "BIGINT", "float64": "DOUBLE", "float32": "FLOAT", "int16": "SMALLINT", "int8": "TINYINT",
       "bool": "BOOLEAN", "string": "VARCHAR"}
BYTES = {"int64": 8, "float64": 8, "float32": 4, "int16": 2, "int8": 1, "bool": 1}


def _file(path) -> tuple[dict, list[str], list[list[str]]]:
    """(declared datatype by column, the column names, the rows' fields as written)."""
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    head = [ln[2:] for ln in lines if ln.startswith("# ")]
    declared = {c["name"]: c["datatype"] for c in yaml.safe_load("\n".join(head[1:]))["datatype"]}
    body = lines[len(head):]
    return declared, body[0].split(","), [ln.split(",") for ln in body[1:]]


def test_a_gaia_patch_is_read_in_its_declared_types_with_exact_ids(tmp_path):
    subprocess.run([sys.executable, str(REPO / "workflow" / "scripts" / "make_gaia_patch.py"), str(tmp_path),
                    "--rows", "2000"], check=True, capture_output=True, timeout=120)
    files = sorted(tmp_path.glob("GaiaSource_*.csv.gz"))
    assert [f.name for f in files] == ["GaiaSource_000000-000001.csv.gz", "GaiaSource_000001-000002.csv.gz"]
    parsed = [_file(f) for f in files]
    declared, names = parsed[0][:2]
    fields = [r for _, _, rs in parsed for r in rs]
    assert len(names) == len(declared) == 75 and set(declared.values()) == set(ARROW)

    own = yaml.safe_load((REPO / "config" / "survey-gaia.yaml").read_text())["catalog"]
    section = own["patch"]["file"]
    cfg = config([tmp_path / "GaiaSource_*.csv.gz"], columns=section["columns"], flux_unit=section["flux_unit"],
                 id_layout=own["id_layout"], sky=own["sky"])   # validate, as `catbench validate` reads them
    got = read(cfg)
    assert len(got.ids) == len(fields) == 2000
    ids = [int(r[names.index("source_id")]) for r in fields]
    assert min(ids) > 2**60 and got.ids.tolist() == ids   # no double's rounding

    roles = {section["columns"][r] for r in ("objectId", "ra", "dec")}
    carried = [n for n in names if n not in roles]
    assert {n: got.other.schema.field(n).type for n in carried} == {n: ARROW[declared[n]] for n in carried}
    for n in carried:   # `null` is NULL in every numeric and boolean column
        nulls = sum(r[names.index(n)] == "null" for r in fields)
        assert declared[n] == "string" or got.other.column(n).null_count == nulls, n
    assert got.other.column("parallax").null_count > 0 and got.other.column("astrometric_primary_flag").null_count > 0
    mags = {k: v for k, v in section["columns"].items() if "Flux" in k}
    assert {k: got.other.column(k).null_count for k in mags} == {k: got.other.column(v).null_count
                                                                 for k, v in mags.items()}

    ddl = dict(re.findall(r"`(\w+)` (\w+)", columns_ddl(pf.build_patch(CatalogSpec.of(cfg), got)[0].objects.schema)))
    assert {n: ddl[n] for n in carried} == {n: SQL[declared[n]] for n in carried}
    file_bytes = sum(BYTES.get(t, 0) for t in declared.values())
    table_bytes = sum(_SIZES.get(t, 0) for t in ddl.values())
    assert abs(table_bytes - file_bytes) <= 0.1 * file_bytes, (table_bytes, file_bytes)
    assert np.isfinite(got.footprint.width) and 1.5 < got.footprint.width < 2 and 0.9 < got.footprint.height <= 1
