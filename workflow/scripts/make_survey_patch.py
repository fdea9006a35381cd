"""A Rubin DP1-like Object patch at a real survey's density, for `config/survey-rubin.yaml`:
4 tract Parquet files, 150,000 rows in 1 deg² (~150k objects/deg²), 47 columns: nJy fluxes
with NaN and real NULLs, booleans, uint16/int8 columns and awkward text.

    python workflow/scripts/make_survey_patch.py DIR [--rows 150000] [--seed 1]
"""

import argparse
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

BANDS = "ugrizy"
TEXT = ["", "tract 5063, patch 3,4", 'a "quoted" name', "ünïcödé ☆", "tab\tinside", "NA", "null", "0042"]


def columns(rng, n: int, first_id: int, ra0: float) -> dict:
    ra = ra0 + rng.uniform(0, 0.25, n)
    dec = rng.uniform(-0.5, 0.5, n)
    out = {"objectId": np.arange(first_id, first_id + n, dtype=np.int64), "coord_ra": ra, "coord_dec": dec}
    for b in BANDS:
        flux = rng.lognormal(7, 1.5, n)
        flux[rng.random(n) < 0.03] = np.nan
        err = flux * rng.uniform(0.01, 0.2, n)
        out[f"{b}_psfFlux"] = pa.array(flux, mask=rng.random(n) < 0.02)     # NaN and NULL both
        out[f"{b}_psfFluxErr"] = err
        out[f"{b}_psfFlux_flag"] = rng.random(n) < 0.05
        out[f"{b}_extendedness"] = rng.random(n).astype(np.float32)
    for k in range(9):
        out[f"shape_{k}"] = rng.normal(0, 1, n).astype(np.float32)
    out["nChild"] = rng.integers(0, 60000, n).astype(np.uint16)
    out["deblend_nPeaks"] = rng.integers(-5, 120, n).astype(np.int8)
    out["detect_isPrimary"] = rng.random(n) < 0.9
    out["refBand"] = pa.array(rng.choice(list(BANDS), n)).dictionary_encode()
    out["note"] = pa.array(rng.choice(TEXT, n), mask=rng.random(n) < 0.1)
    out["parentObjectId"] = pa.array(rng.integers(0, 2**40, n), mask=rng.random(n) < 0.5)
    out["x"] = rng.uniform(0, 4000, n)
    out["y"] = rng.uniform(0, 4000, n)
    out["ebv"] = rng.uniform(0, 0.1, n).astype(np.float32)
    out["refExtendedness"] = rng.random(n)
    out["footprintArea"] = rng.integers(10, 5000, n).astype(np.int32)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--rows", type=int, default=150_000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    per = a.rows // 4
    for t in range(4):     # four tracts side by side in ra: 1 deg x 1 deg in all
        cols = columns(rng, per, 10**15 + t * 10**9, 53.0 + 0.25 * t)
        pq.write_table(pa.table(cols), out / f"tract-{5063 + t}.parquet")
    print(f"{out}: 4 files, {4 * per:,} rows, {len(cols)} columns")


if __name__ == "__main__":
    main()
