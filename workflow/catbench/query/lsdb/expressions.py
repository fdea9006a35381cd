"""Each query of the suite as LSDB expresses it: the searches (``id_search`` on the HATS index,
``box_search``), the cross-match and the join are LSDB's; the filters and aggregates run on
the Dask frame it gives, a partition at a time. Every function returns the suite's
:class:`~catbench.query.suite.Answer` (the same columns as the SQL in resources/queries).

Where LSDB's semantics differ from the SQL, the call is chosen to give the SQL's answer:
- a box search prunes tiles only (``fine=False``); the rows are then kept by the SQL's own
  ``BETWEEN`` on both coordinates;
- the cross-match finds a point's nearest ``n_neighbors`` within the radius, not every pair:
  it is asked again with twice the neighbours while any point fills them (``pairs_within``),
  over a radius a thousandth wider, then the pairs are kept by the suite's haversine;
- ``fluxToAbMag`` follows DuckDB's arithmetic: NULL for a NULL or a flux <= 0, NaN for NaN, and a
  NaN colour is greater than any bound (DuckDB orders NaN above every number).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from ..suite import Answer, QueryError

FLUXES = ("uFlux_PS", "gFlux_PS", "rFlux_PS", "iFlux_PS", "zFlux_PS", "yFlux_PS")
MAX_NEIGHBORS = 1 << 16
# the columns the cross-match and the join read (with their margins)
POSITIONS = {"Object": ("objectId", "ra_PS", "decl_PS"), "Source": ("sourceId", "objectId", "ra", "decl")}


def values(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(float64 values, NULL mask) of a column, NaN kept apart from NULL."""
    if isinstance(s.dtype, pd.ArrowDtype):
        arr = pa.array(s.array)
        return (arr.cast(pa.float64()).to_numpy(zero_copy_only=False),
                arr.is_null().to_numpy(zero_copy_only=False))
    v = s.to_numpy(dtype="float64")
    return v, np.zeros(len(v), dtype=bool)


def ab_mag(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """fluxToAbMag: (magnitudes, NULL mask)."""
    f, nulls = values(s)
    with np.errstate(invalid="ignore", divide="ignore"):
        nulls = nulls | (f <= 0)
        mag = -2.5 * np.log10(np.where(nulls, 1.0, f)) - 48.6
    return mag, nulls


def between(x: np.ndarray, nulls: np.ndarray, lo: float, hi: float) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return ~nulls & (x >= lo) & (x <= hi)


def greater(x: np.ndarray, nulls: np.ndarray, bound: float) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return ~nulls & ((x > bound) | np.isnan(x))


def ang_sep(ra1, dec1, ra2, dec2) -> np.ndarray:
    """The suite's angSep: degrees, haversine (resources/sql/udf_duckdb.sql)."""
    r1, d1, r2, d2 = (np.radians(np.asarray(a, dtype="float64")) for a in (ra1, dec1, ra2, dec2))
    h = np.sin((d2 - d1) / 2) ** 2 + np.cos(d1) * np.cos(d2) * np.sin((r2 - r1) / 2) ** 2
    return np.degrees(2 * np.arcsin(np.minimum(1.0, np.sqrt(h))))


def in_box(df: pd.DataFrame, ra: str, dec: str, p: dict) -> np.ndarray:
    r, d = df[ra].to_numpy(dtype="float64"), df[dec].to_numpy(dtype="float64")
    return (r >= p["ra_min"]) & (r <= p["ra_max"]) & (d >= p["dec_min"]) & (d <= p["dec_max"])


def _cell(v, null: bool):
    return None if null else (v.item() if hasattr(v, "item") else v)


def answer(df: pd.DataFrame, columns: list[str], nulls: dict | None = None) -> Answer:
    """An Answer of ``df``'s ``columns``: FLOAT for float32 columns, NULL where the column is
    null (or where ``nulls`` marks a computed column)."""
    nulls = nulls or {}
    cols, f32 = [], set()
    for c in columns:
        s = df[c]
        dtype = s.dtype.pyarrow_dtype if isinstance(s.dtype, pd.ArrowDtype) else s.dtype
        if str(dtype) in ("float", "float32"):
            f32.add(c)
        mask = nulls[c] if c in nulls else s.isna().to_numpy() & ~_nan(s)
        cols.append([_cell(v, m) for v, m in zip(s.to_numpy(dtype=object, na_value=None), mask)])
    return Answer(list(columns), list(zip(*cols)) if cols and len(df) else [], f32)


def _nan(s: pd.Series) -> np.ndarray:
    """Where a float column holds NaN (a value, not NULL)."""
    if not pd.api.types.is_float_dtype(s.dtype):
        return np.zeros(len(s), dtype=bool)
    v, nulls = values(s)
    return np.isnan(v) & ~nulls


# -- the suite ----------------------------------------------------------------------------------

def lv1(e, p: dict) -> Answer:
    cat = e.catalogs["Object"].id_search(values={"objectId": int(p["object_id"])})
    return answer(e.compute(cat), e.columns["Object"])


def lv2(e, p: dict) -> Answer:
    df = e.compute(e.catalogs["Source"].id_search(values={"objectId": int(p["object_id"])}))
    mag, mag_null = ab_mag(df["psfFlux"])
    sig, sig_null = ab_mag(df["psfFluxSigma"])
    df = df.assign(psfMag=mag, psfMagSigmaFlux=sig)
    cols = ["sourceId", "taiMidPoint", "filterId", "psfMag", "psfMagSigmaFlux", "ra", "decl"]
    return answer(df, cols, {"psfMag": mag_null, "psfMagSigmaFlux": sig_null})


def _box(cat, p: dict):
    return cat.box_search(ra=(p["ra_min"], p["ra_max"]), dec=(p["dec_min"], p["dec_max"]), fine=False)


def _lv3_part(df: pd.DataFrame, p: dict) -> pd.Series:
    z, zn = ab_mag(df["zFlux_PS"])
    g, gn = ab_mag(df["gFlux_PS"])
    r, rn = ab_mag(df["rFlux_PS"])
    i, i_n = ab_mag(df["iFlux_PS"])
    keep = (in_box(df, "ra_PS", "decl_PS", p) & between(z, zn, p["z_min"], p["z_max"])
            & between(g - r, gn | rn, p["gr_min"], p["gr_max"]) & between(i - z, i_n | zn, p["iz_min"], p["iz_max"]))
    return pd.Series([int(keep.sum())])


def lv3(e, p: dict) -> Answer:
    cols = ["ra_PS", "decl_PS", "gFlux_PS", "rFlux_PS", "iFlux_PS", "zFlux_PS"]
    counts = _box(e.catalogs["Object"][cols], p).map_partitions(_lv3_part, p, meta=(None, "int64"))
    return Answer(["n"], [(int(e.compute(counts).sum()),)])


def _count(df: pd.DataFrame) -> pd.Series:
    return pd.Series([len(df)])


def hv1(e, p: dict) -> Answer:
    counts = e.catalogs["Object"][["objectId"]].map_partitions(_count, meta=(None, "int64"))
    return Answer(["n"], [(int(e.compute(counts).sum()),)])


def _hv2_part(df: pd.DataFrame, min_color: float) -> pd.DataFrame:
    i, i_n = ab_mag(df["iFlux_PS"])
    z, zn = ab_mag(df["zFlux_PS"])
    return df[greater(i - z, i_n | zn, min_color)]


HV2_COLUMNS = ["objectId", "ra_PS", "decl_PS", *FLUXES]


def hv2(e, p: dict) -> Answer:
    cat = e.catalogs["Object"][HV2_COLUMNS]
    df = e.compute(cat.map_partitions(_hv2_part, float(p["min_color"])))
    return answer(df, HV2_COLUMNS)


def _hv3_part(df: pd.DataFrame) -> pd.DataFrame:
    """A tile's partial aggregate per chunk: count and sums (merged as Qserv merges chunks')."""
    g = df.groupby("chunkId", sort=False)
    return pd.DataFrame({"n": g["ra_PS"].size(), "sum_ra": g["ra_PS"].sum(), "sum_decl": g["decl_PS"].sum()}
                        ).reset_index()


def hv3(e, p: dict) -> Answer:
    cat = e.catalogs["Object"][["chunkId", "ra_PS", "decl_PS"]]
    meta = pd.DataFrame({"chunkId": pd.Series(dtype="int64"), "n": pd.Series(dtype="int64"),
                         "sum_ra": pd.Series(dtype="float64"), "sum_decl": pd.Series(dtype="float64")})
    parts = e.compute(cat.map_partitions(_hv3_part, meta=meta))
    g = parts.groupby("chunkId").sum().reset_index()
    df = pd.DataFrame({"chunkId": g["chunkId"].astype("int64"), "n": g["n"].astype("int64"),
                       "avg_ra": g["sum_ra"] / g["n"], "avg_decl": g["sum_decl"] / g["n"]})
    return answer(df, ["chunkId", "n", "avg_ra", "avg_decl"])


def pairs_within(matched: pd.DataFrame, p: dict) -> int:
    """SHV1's pairs in one cross-match: both in the box, closer than the radius, counted once."""
    a = in_box(matched, "ra_PS_1", "decl_PS_1", p) & in_box(matched, "ra_PS_2", "decl_PS_2", p)
    a &= matched["objectId_1"].to_numpy() < matched["objectId_2"].to_numpy()
    d = ang_sep(matched["ra_PS_1"], matched["decl_PS_1"], matched["ra_PS_2"], matched["decl_PS_2"])
    return int((a & (d < float(p["radius_deg"]))).sum())


def filled(matched: pd.DataFrame, k: int) -> bool:
    """Whether any point found ``k`` neighbours (itself among them): more may lie within the radius."""
    return bool(len(matched)) and int(matched.groupby("objectId_1").size().max()) >= k


def _pairs(box, k: int, p: dict):
    """SHV1's plan: the box's cross-match with itself, ``k`` neighbours within the radius."""
    return box.crossmatch(box, n_neighbors=k, radius_arcsec=3600.0 * float(p["radius_deg"]) * 1.001,
                          suffixes=("_1", "_2"), suffix_method="all_columns", require_right_margin=True)


def _joined(objects, sources):
    """SHV2's plan: the box's Objects joined to their Sources by id."""
    return objects.join(sources, left_on="objectId", right_on="objectId", suffixes=("_o", "_s"),
                        suffix_method="overlapping_columns", log_changes=False)


def plan_both(e, p: dict) -> None:
    """SHV1's and SHV2's plans in the box ``p``, nothing computed (what the engine's start makes
    HATS compile)."""
    box = _box(e.positions["Object"], p)
    _pairs(box, 2, p)
    _joined(box, e.positions["Source"])


def shv1(e, p: dict) -> Answer:
    box = _box(e.positions["Object"], p)
    k = e.neighbors_used     # what an earlier run of the query needed, else queries.lsdb.n_neighbors
    while True:
        m = e.compute(_pairs(box, k, p))
        if not filled(m, k):
            break
        if k >= MAX_NEIGHBORS:
            raise QueryError(f"query SHV1: a point has over {MAX_NEIGHBORS} neighbours within "
                             f"{p['radius_deg']} deg; a smaller queries.parameters.SHV1.radius_deg")
        k *= 2
    e.neighbors_used = k
    return Answer(["n"], [(pairs_within(m, p),)])


def shv2(e, p: dict) -> Answer:
    objects = _box(e.positions["Object"], p)
    sources = e.positions["Source"]
    j = e.compute(_joined(objects, sources))
    keep = in_box(j, "ra_PS", "decl_PS", p) & (
        ang_sep(j["ra"], j["decl"], j["ra_PS"], j["decl_PS"]) > float(p["radius_deg"]))
    df = j[keep].rename(columns={"objectId_o": "objectId"})
    return answer(df, ["objectId", "sourceId", "ra", "decl", "ra_PS", "decl_PS"])


EXPRESSIONS = {"LV1": lv1, "LV2": lv2, "LV3": lv3, "HV1": hv1, "HV2": hv2, "HV3": hv3, "SHV1": shv1, "SHV2": shv2}
