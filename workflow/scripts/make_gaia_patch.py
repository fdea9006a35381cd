"""A Gaia DR3-like gaia_source patch, for `config/survey-gaia.yaml`: 2 gzip ECSV files named
as Gaia's, 100,000 rows in 2 deg of ra x 1 deg near the Galactic centre (1.73 deg², ~58k
sources/deg², crowded as the Galactic plane is), 75 of gaia_source's columns in its types
(64-bit HEALPix-packed source_ids, float32/int16/int8, True/False booleans, text), a
~270-line ECSV header, and `null` for every missing value as Gaia writes it: 2-parameter
solutions without parallax and proper motion, faint sources without BP/RP, radial velocities
and GSP-Phot only for the bright.

    python workflow/scripts/make_gaia_patch.py DIR [--rows 100000] [--seed 1]
"""

import argparse
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

RA, DEC = (270.0, 272.0), (-30.5, -29.5)   # Baade's window: a crowded Galactic-plane field
SOLUTION_ID = 375316653866487564            # Gaia DR3's
ZP = {"g": 25.6874, "bp": 25.3385, "rp": 24.7479}   # Gaia DR3 Vega zero points, mag of 1 e-/s
# ICRS -> Galactic rotation (Hipparcos' definition, as astropy uses)
GAL = np.array([[-0.0548755604162154, -0.8734370902348850, -0.4838350155487132],
                [0.4941094278755837, -0.4448296299600112, 0.7469822444972189],
                [-0.8676661490190047, -0.1980763734312015, 0.4559837761750669]])
CORR = ["ra_dec", "ra_parallax", "ra_pmra", "ra_pmdec", "dec_parallax", "dec_pmra", "dec_pmdec",
        "parallax_pmra", "parallax_pmdec", "pmra_pmdec"]
# (name, ECSV datatype, unit, description), in gaia_source's order
SCHEMA = [
    ("solution_id", "int64", None, "Solution Identifier"),
    ("designation", "string", None, "Unique source designation (unique across all Data Releases)"),
    ("source_id", "int64", None, "Unique source identifier (unique within a particular Data Release)"),
    ("random_index", "int64", None, "Random index for use when selecting subsets"),
    ("ref_epoch", "float64", "yr", "Reference epoch"),
    ("ra", "float64", "deg", "Right ascension"),
    ("ra_error", "float32", "mas", "Standard error of right ascension"),
    ("dec", "float64", "deg", "Declination"),
    ("dec_error", "float32", "mas", "Standard error of declination"),
    ("parallax", "float64", "mas", "Parallax"),
    ("parallax_error", "float32", "mas", "Standard error of parallax"),
    ("parallax_over_error", "float32", None, "Parallax divided by its standard error"),
    ("pm", "float32", "mas / yr", "Total proper motion"),
    ("pmra", "float64", "mas / yr", "Proper motion in right ascension direction"),
    ("pmra_error", "float32", "mas / yr", "Standard error of proper motion in right ascension direction"),
    ("pmdec", "float64", "mas / yr", "Proper motion in declination direction"),
    ("pmdec_error", "float32", "mas / yr", "Standard error of proper motion in declination direction"),
    *[(f"{c}_corr", "float32", None, f"Correlation between {c.replace('_', ' and ')}") for c in CORR],
    ("astrometric_n_obs_al", "int16", None, "Total number of observations in the along-scan (AL) direction"),
    ("astrometric_n_obs_ac", "int16", None, "Total number of observations in the across-scan (AC) direction"),
    ("astrometric_n_good_obs_al", "int16", None, "Number of good observations in the along-scan (AL) direction"),
    ("astrometric_n_bad_obs_al", "int16", None, "Number of bad observations in the along-scan (AL) direction"),
    ("astrometric_gof_al", "float32", None, "Goodness of fit statistic of model wrt along-scan observations"),
    ("astrometric_chi2_al", "float32", None, "AL chi-square value"),
    ("astrometric_excess_noise", "float32", "mas", "Excess noise of the source"),
    ("astrometric_excess_noise_sig", "float32", None, "Significance of excess noise"),
    ("astrometric_params_solved", "int8", None, "Which parameters have been solved for?"),
    ("astrometric_primary_flag", "bool", None, "Primary or seconday"),
    ("nu_eff_used_in_astrometry", "float32", "1 / um", "Effective wavenumber of the source used in the astrometric solution"),
    ("pseudocolour", "float32", "1 / um", "Astrometrically estimated pseudocolour of the source"),
    ("astrometric_matched_transits", "int16", None, "Matched FOV transits used in the AGIS solution"),
    ("visibility_periods_used", "int16", None, "Number of visibility periods used in Astrometric solution"),
    ("astrometric_sigma5d_max", "float32", "mas", "The longest semi-major axis of the 5-d error ellipsoid"),
    ("matched_transits", "int16", None, "The number of transits matched to this source"),
    ("ipd_frac_multi_peak", "int8", None, "Percent of successful-IPD windows with more than one peak"),
    ("ruwe", "float32", None, "Renormalised unit weight error"),
    ("duplicated_source", "bool", None, "Source with multiple source identifiers"),
    *[col for b, name in (("g", "G"), ("bp", "integrated BP"), ("rp", "integrated RP")) for col in (
        (f"phot_{b}_n_obs", "int16", None, f"Number of observations contributing to {name} photometry"),
        (f"phot_{b}_mean_flux", "float64", "electron / s", f"{name} mean flux"),
        (f"phot_{b}_mean_flux_error", "float32", "electron / s", f"Error on {name} mean flux"),
        (f"phot_{b}_mean_flux_over_error", "float32", None, f"{name} mean flux divided by its error"),
        (f"phot_{b}_mean_mag", "float32", "mag", f"{name} mean magnitude"))],
    ("phot_bp_rp_excess_factor", "float32", None, "BP/RP excess factor"),
    ("phot_proc_mode", "int8", None, "Photometry processing mode"),
    ("bp_rp", "float32", "mag", "BP - RP colour"),
    ("radial_velocity", "float32", "km / s", "Radial velocity"),
    ("radial_velocity_error", "float32", "km / s", "Radial velocity error"),
    ("phot_variable_flag", "string", None, "Photometric variability flag"),
    ("l", "float64", "deg", "Galactic longitude"),
    ("b", "float64", "deg", "Galactic latitude"),
    ("non_single_star", "int16", None, "Flag indicating the availability of additional information in the NSS tables"),
    ("has_xp_continuous", "bool", None, "Flag indicating the availability of mean BP/RP spectrum in continuous representation"),
    ("has_rvs", "bool", None, "Flag indicating the availability of mean RVS spectrum for this source"),
    ("teff_gspphot", "float32", "K", "Effective temperature from GSP-Phot Aeneas best library using BP/RP spectra"),
    ("distance_gspphot", "float32", "pc", "Distance from GSP-Phot Aeneas best library using BP/RP spectra"),
    ("libname_gspphot", "string", None, "Name of library that achieves the highest mean log-posterior in MCMC samples"),
]


def healpix12(ra: np.ndarray, dec: np.ndarray) -> np.ndarray:
    """HEALPix nested index at level 12 (nside 4096), as Gaia packs it into source_id."""
    nside = 4096
    z, tt = np.sin(np.radians(dec)), np.mod(ra, 360.0) / 90.0
    t1, t2 = nside * (0.5 + tt), nside * z * 0.75
    jp, jm = (t1 - t2).astype(np.int64), (t1 + t2).astype(np.int64)
    ifp, ifm = jp // nside, jm // nside
    face = np.where(ifp == ifm, ifp | 4, np.where(ifp < ifm, ifp, ifm + 8))
    ix, iy = jm & (nside - 1), nside - (jp & (nside - 1)) - 1
    if np.any(np.abs(z) > 2 / 3):   # the polar caps: not this footprint
        raise ValueError("healpix12 covers the equatorial zone only (|dec| < 41.8 deg)")
    pix = np.zeros_like(ix)
    for bit in range(12):   # interleave: x on the even bits, y on the odd
        pix |= ((ix >> bit) & 1) << (2 * bit) | ((iy >> bit) & 1) << (2 * bit + 1)
    return face * nside * nside + pix


def holes(rng, n: int, frac: float) -> np.ndarray:
    return rng.random(n) < frac


def astrometry(rng, n: int, g: np.ndarray) -> dict:
    """Positions, ids and the astrometric solution: 2-, 5- or 6-parameter, worse when fainter."""
    ra, dec = rng.uniform(*RA, n), rng.uniform(*DEC, n)
    pix = healpix12(ra, dec)
    order = np.lexsort((rng.random(n), pix))   # a running number within each HEALPix pixel
    run = np.empty(n, np.int64)
    _, first, counts = np.unique(pix[order], return_index=True, return_counts=True)
    run[order] = np.arange(n) - np.repeat(first, counts) + 1
    sid = pix * 2**35 + run * 64 + rng.integers(0, 64, n)
    faint = np.clip((g - 17) / 4, 0, 1)
    solved = np.where(rng.random(n) < 0.05 + 0.3 * faint**2, 3, np.where(rng.random(n) < 0.4 * faint, 95, 31))
    two = solved == 3
    sig = (0.02 + 0.6 * faint**3 + rng.exponential(0.05, n)).astype(np.float32)
    plx = rng.normal(0.3, 0.4, n) + rng.normal(0, sig)
    out = {"source_id": sid, "ra": ra, "dec": dec, "ra_error": sig * 0.8, "dec_error": sig * 0.7,
           "parallax": np.ma.masked_where(two, plx), "parallax_error": np.ma.masked_where(two, sig),
           "parallax_over_error": np.ma.masked_where(two, (plx / sig).astype(np.float32)),
           "astrometric_params_solved": solved.astype(np.int8)}
    pmra, pmdec = rng.normal(-2.5, 3, n), rng.normal(-5.5, 3, n)
    out.update(pm=np.ma.masked_where(two, np.hypot(pmra, pmdec).astype(np.float32)),
               pmra=np.ma.masked_where(two, pmra), pmra_error=np.ma.masked_where(two, sig * 1.1),
               pmdec=np.ma.masked_where(two, pmdec), pmdec_error=np.ma.masked_where(two, sig * 0.9))
    for c in CORR:
        val = rng.uniform(-0.6, 0.6, n).astype(np.float32)
        out[f"{c}_corr"] = val if c == "ra_dec" else np.ma.masked_where(two, val)
    nobs = rng.integers(150, 600, n)
    bad = rng.binomial(nobs, 0.01)
    out.update(astrometric_n_obs_al=nobs.astype(np.int16), astrometric_n_obs_ac=(nobs * (g < 13)).astype(np.int16),
               astrometric_n_good_obs_al=(nobs - bad).astype(np.int16), astrometric_n_bad_obs_al=bad.astype(np.int16),
               astrometric_gof_al=rng.normal(1, 3, n).astype(np.float32),
               astrometric_chi2_al=(nobs * rng.lognormal(0.3, 0.6, n)).astype(np.float32),
               astrometric_excess_noise=np.maximum(0, rng.normal(0, 0.3, n)).astype(np.float32),
               astrometric_excess_noise_sig=rng.exponential(1.5, n).astype(np.float32),
               astrometric_primary_flag=np.ma.masked_where(holes(rng, n, 0.01), rng.random(n) < 0.002),
               nu_eff_used_in_astrometry=np.ma.masked_where(solved != 31, rng.normal(1.48, 0.06, n).astype(np.float32)),
               pseudocolour=np.ma.masked_where(solved != 95, rng.normal(1.45, 0.1, n).astype(np.float32)),
               astrometric_matched_transits=(nobs // 9).astype(np.int16),
               visibility_periods_used=rng.integers(9, 30, n).astype(np.int16),
               astrometric_sigma5d_max=(sig * 2.2).astype(np.float32),
               matched_transits=(nobs // 9 + rng.integers(0, 5, n)).astype(np.int16),
               ipd_frac_multi_peak=np.ma.masked_where(holes(rng, n, 0.01),
                                                      np.minimum(100, rng.exponential(4, n)).astype(np.int8)),
               ruwe=np.ma.masked_where(two, rng.lognormal(0.02, 0.15, n).astype(np.float32)),
               duplicated_source=rng.random(n) < 0.01)
    return out


def photometry(rng, n: int, g: np.ndarray) -> dict:
    """G, BP and RP fluxes (e-/s) and Vega magnitudes, BP/RP missing for many faint sources."""
    colour = rng.normal(1.8, 0.6, n)
    mags = {"g": g, "bp": g + 0.45 * colour, "rp": g - 0.55 * colour}
    missing = {"g": holes(rng, n, 0.003),
               "bp": rng.random(n) < np.clip((g - 19) / 2.5, 0, 1) * 0.6 + 0.01,
               "rp": rng.random(n) < np.clip((g - 19) / 2.5, 0, 1) * 0.5 + 0.01}
    out = {}
    for b, m in mags.items():
        flux = 10 ** (-0.4 * (m - ZP[b]))
        snr = np.maximum(2.0, 3e3 * 10 ** (-0.2 * (m - 13)) / (1 + 10 ** (-0.2 * (m - 13))))
        gone = missing[b]
        out[f"phot_{b}_n_obs"] = np.ma.masked_where(gone & (b != "g"), rng.integers(20, 60, n) * (1 + (b == "g") * 8)
                                                    ).astype(np.int16)
        out[f"phot_{b}_mean_flux"] = np.ma.masked_where(gone, flux)
        out[f"phot_{b}_mean_flux_error"] = np.ma.masked_where(gone, (flux / snr).astype(np.float32))
        out[f"phot_{b}_mean_flux_over_error"] = np.ma.masked_where(gone, snr.astype(np.float32))
        out[f"phot_{b}_mean_mag"] = np.ma.masked_where(gone, m.astype(np.float32))
    no_xp = missing["bp"] | missing["rp"]
    out.update(phot_bp_rp_excess_factor=np.ma.masked_where(no_xp, rng.normal(1.3, 0.2, n).astype(np.float32)),
               phot_proc_mode=np.ma.masked_where(missing["g"], np.where(no_xp, 2, 0).astype(np.int8)),
               bp_rp=np.ma.masked_where(no_xp, (mags["bp"] - mags["rp"]).astype(np.float32)))
    return out


def others(rng, n: int, g: np.ndarray, ra: np.ndarray, dec: np.ndarray) -> dict:
    """Radial velocities and GSP-Phot for the bright, flags, variability, Galactic l and b."""
    no_rv = (g > 15.5) | holes(rng, n, 0.2)
    no_gsp = (g > 19) | holes(rng, n, 0.1)
    r, d = np.radians(ra), np.radians(dec)
    x, y, z = GAL @ np.array([np.cos(d) * np.cos(r), np.cos(d) * np.sin(r), np.sin(d)])
    return {"radial_velocity": np.ma.masked_where(no_rv, rng.normal(-10, 80, n).astype(np.float32)),
            "radial_velocity_error": np.ma.masked_where(no_rv, rng.uniform(0.5, 8, n).astype(np.float32)),
            "phot_variable_flag": np.where(rng.random(n) < 0.02, "VARIABLE", "NOT_AVAILABLE"),
            "l": np.mod(np.degrees(np.arctan2(y, x)), 360.0), "b": np.degrees(np.arcsin(z)),
            "non_single_star": np.ma.masked_where(holes(rng, n, 0.02), (rng.random(n) < 0.01).astype(np.int16)),
            "has_xp_continuous": g < 17.65, "has_rvs": ~no_rv & (g < 14),
            "teff_gspphot": np.ma.masked_where(no_gsp, rng.normal(4800, 900, n).astype(np.float32)),
            "distance_gspphot": np.ma.masked_where(no_gsp, rng.lognormal(7.8, 0.5, n).astype(np.float32)),
            "libname_gspphot": np.ma.masked_where(no_gsp, rng.choice(["MARCS", "PHOENIX", "A", "OB"], n,
                                                                     p=[0.8, 0.12, 0.06, 0.02]))}


def columns(rng, n: int) -> dict:
    """Every column, sorted by source_id as Gaia's files are."""
    u = rng.random(n)   # G from counts rising 10^(0.35 G), 12 < G < 21
    g = np.log10(10 ** (0.35 * 12) + u * (10 ** (0.35 * 21) - 10 ** (0.35 * 12))) / 0.35
    cols = astrometry(rng, n, g)
    cols.update(**photometry(rng, n, g), **others(rng, n, g, cols["ra"], cols["dec"]))
    cols.update(solution_id=np.full(n, SOLUTION_ID, np.int64), random_index=rng.permutation(n).astype(np.int64),
                ref_epoch=np.full(n, 2016.0), designation=np.char.add("Gaia DR3 ", cols["source_id"].astype(str)))
    order = np.argsort(cols["source_id"])
    return {name: cols[name][order] for name, *_ in SCHEMA}


def text(values) -> pa.Array:
    """A column's values as Gaia writes them: shortest round-trip numbers, True/False, null."""
    arr = pa.array(np.ma.getdata(values), mask=np.ma.getmaskarray(values))
    if pa.types.is_boolean(arr.type):
        arr = pc.if_else(arr, "True", "False")
    return pc.fill_null(pc.cast(arr, pa.string()), "null")


def header() -> str:
    lines = ["%ECSV 1.0", "---", "delimiter: ','", "datatype:"]
    for name, datatype, unit, desc in SCHEMA:
        lines += [f"- name: {name}", f"  datatype: {datatype}"]
        lines += [f"  unit: {json.dumps(unit)}"] if unit else []
        lines += [f"  description: {json.dumps(desc)}"]
    lines += ["meta: !!omap", "- {table: gaia_source}", "- {release: 'Gaia DR3-like, synthetic (catbench)'}",
              f"- {{footprint: 'ra {RA[0]:g}..{RA[1]:g}, dec {DEC[0]:g}..{DEC[1]:g} deg'}}", "schema: astropy-2.0"]
    return "".join(f"# {ln}\n" for ln in lines)


def write(cols: dict, path: Path):
    table = pa.table({name: text(v) for name, v in cols.items()})
    with pa.CompressedOutputStream(str(path), "gzip") as out:
        out.write((header() + ",".join(table.column_names) + "\n").encode())   # names unquoted, as Gaia's
        pcsv.write_csv(table, out, pcsv.WriteOptions(include_header=False, quoting_style="none"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    cols = columns(np.random.default_rng(a.seed), a.rows)
    half = a.rows // 2
    for k, part in enumerate((slice(0, half), slice(half, None))):
        write({name: v[part] for name, v in cols.items()}, out / f"GaiaSource_{k:06d}-{k + 1:06d}.csv.gz")
    print(f"{out}: 2 files, {a.rows:,} rows, {len(cols)} columns")


if __name__ == "__main__":
    main()
