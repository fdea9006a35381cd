"""``catbench compare RESULTS_A RESULTS_B``: the two runs' final tables side by side.

Each table is joined on its key columns (full outer join, DuckDB); every numeric column gives a
row ``table, key, column, a, b, ratio`` with ratio = B / A; other columns give a row only when
they differ; a key present in one run only gives one row with ``column`` = ``(row)``.
The measured figures (:data:`FIGURES`: load seconds, fio MB/s and IOPS, query and restart
seconds) also get a ``verdict`` from the product's one comparison rule (``stats.verdict`` on
each run's repetitions) with the variance that one run adds to each side (``noise.py``: a
floor measured by a twin of runs on this machine where it exceeds ``report.between_run_cv``):
"B faster by 2.1x [1.6–2.8] (p=0.003)", "within noise (n=3 vs 3, p=0.4)" or "not a finding".
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pyarrow as pa

from ..core.config import RENAMED
from .inputs import MetricsError
from . import noise
from .stats import Figure, short, verdict
from .tables import report_config, write_csv

KEYS = {
    "storage": ("target", "test"),
    "load_time": ("target", "variant", "engine", "strategy"),
    "load_rate": ("target", "variant", "engine", "strategy", "repetition", "interval"),
    "load_collapse": ("target", "variant", "engine", "strategy"),
    "queries": ("target", "engine", "query", "cache"),
    "chunk_load": ("target",),
    "restart": ("target", "kind", "buffer_pool_load", "phase"),
    "cluster_restart": ("target", "kind", "phase"),
    "cluster_load": ("target", "kind", "window", "role"),
    "chunks": ("chunkId",),
    "stages": ("stage",),
}
# (table, median column) -> (higher is better, (min, max, ci_low, ci_high, values) columns)
FIGURES = {
    ("storage", "MBps"): (True, None),
    ("storage", "iops"): (True, None),
    ("load_time", "seconds"): (False, None),
    ("queries", "p50_s"): (False, ("min_s", "max_s", "ci_low_s", "ci_high_s", "values_s")),
    ("restart", "seconds"): (False, None),
    ("cluster_restart", "seconds"): (False, None),
    ("cluster_load", "inserts_per_s"): (True, None),
}
COLUMNS = ("table", "key", "column", "a", "b", "ratio", "note", "verdict")
NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "FLOAT", "DOUBLE", "DECIMAL",
           "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT")


def tables_dir(path) -> Path:
    """A run directory (results/<run>) or its tables/ directory."""
    p = Path(path)
    if (p / "tables").is_dir():
        return p / "tables"
    if p.is_dir() and any((p / f"{n}.csv").is_file() for n in KEYS):
        return p
    raise MetricsError(f"{p}: no tables here (run `catbench tables --results {p}` first)")


def run_name(path) -> str:
    p = Path(path).resolve()
    return p.parent.name if p.name == "tables" else p.name


def _read(con, path: Path, name: str):
    """(column names, numeric column names, rows) of one CSV, or None when absent."""
    import duckdb
    if not path.is_file():
        return None
    try:
        with path.open(newline="") as fh:
            header = next(csv.reader(fh), [])
        # names stay names: a target called `t` is not the boolean true, nor `1` a number
        names = {k: "VARCHAR" for k in KEYS.get(name, ()) if k in header}
        rel = con.read_csv(str(path), header=True, dtype=names or None)   # the relation API: no path in SQL text
        cols = rel.columns
        types = [str(t).upper() for t in rel.types]
        rows = rel.fetchall()
    except (duckdb.Error, OSError, UnicodeDecodeError, csv.Error) as exc:
        raise MetricsError(f"{path}: not a readable CSV file ({exc})") from exc
    numeric = {c for c, t in zip(cols, types) if t.split("(")[0] in NUMERIC}
    return cols, numeric, [dict(zip(cols, r)) for r in rows]


def _ratio(a, b):
    if a is None or b is None:
        return None
    try:
        a, b = float(a), float(b)
    except (TypeError, ValueError):
        return None
    if a == 0:
        return 1.0 if b == 0 else None
    r = b / a
    return None if math.isnan(r) else r


def _figures(name: str, column: str, a: dict, b: dict) -> tuple[Figure, Figure] | None:
    spec = FIGURES.get((name, column))
    if spec is None:
        return None
    fa, fb = Figure.from_row(a, column, names=spec[1]), Figure.from_row(b, column, names=spec[1])
    return None if fa.median is None or fb.median is None else (fa, fb)


def _verdict(name: str, column: str, a: dict, b: dict, rule: dict) -> str:
    figs = _figures(name, column, a, b)
    if figs is None:
        return ""
    between = max(rule["floor"].get(noise.family(name, column), 0.0), rule["default_var"])
    v = verdict(figs[1], figs[0], higher_is_better=FIGURES[(name, column)][0], threshold=rule["threshold"],
                alpha=rule["alpha"], between_var=between)
    return short(v, "B", "A", "faster", "slower")


def rule_of(report: dict | None, floor: dict | None) -> dict:
    """What the verdicts of a comparison of two runs use: the report section's threshold and
    alpha, and the between-run variance per figure family: the measured ``floor``'s where it is
    larger than the config's ``between_run_cv`` (one twin's estimate is itself noisy: taken
    alone it let 5-7 % of a third run's figures through), else the config's."""
    cfg = report_config(report)
    return {"threshold": cfg["practical_threshold"], "alpha": cfg["alpha"], "floor": floor or {},
            "default_var": noise.cv_var(cfg["between_run_cv"])}


def figure_pairs(results_a, results_b):
    """(table, column, key, Figure A, Figure B) of every measured figure in both runs."""
    return [r for r in compare(results_a, results_b, None, pairs=True) if isinstance(r, tuple)]


def compare(results_a, results_b, report: dict | None = None, floor: dict | None = None,
            pairs: bool = False) -> list:
    """Rows of the comparison (dicts with COLUMNS); ``report`` = the config's report section
    (schema defaults when None); ``floor`` = the between-run variance per figure family
    (``noise.load``). With ``pairs``, only the measured figures as (table, column, key, A, B)."""
    import duckdb
    rule = rule_of(report, floor)
    da, db = tables_dir(results_a), tables_dir(results_b)
    con = duckdb.connect()
    out = []
    try:
        for name, keys in KEYS.items():
            ta, tb = _read(con, da / f"{name}.csv", name), _read(con, db / f"{name}.csv", name)
            if ta is None or tb is None:
                if ta is not None or tb is not None:
                    out.append({"table": name, "key": "", "column": "(table)", "a": None, "b": None,
                                "ratio": None, "note": f"only in {'A' if tb is None else 'B'}", "verdict": ""})
                continue
            (ca, na, ra), (cb, nb, rb) = ta, tb
            ks = [k for k in keys if k in ca and k in cb]
            ia = {_key_of(r, ks): r for r in ra}
            ib = {_key_of(r, ks): r for r in rb}
            for key in list(dict.fromkeys(list(ia) + list(ib))):
                a, b = ia.get(key), ib.get(key)
                kstr = ", ".join(f"{k}={v}" for k, v in zip(ks, key))
                if a is None or b is None:
                    out.append({"table": name, "key": kstr, "column": "(row)", "a": None, "b": None,
                                "ratio": None, "note": f"only in {'A' if b is None else 'B'}", "verdict": ""})
                    continue
                for c in [c for c in ca if c in cb and c not in ks and not _raw(c)]:
                    va, vb = a.get(c), b.get(c)
                    if pairs:
                        figs = _figures(name, c, a, b)
                        if figs is not None:
                            out.append((name, c, kstr, *figs))
                        continue
                    if c in na and c in nb:
                        r = _ratio(va, vb)
                        note = "" if va == vb else ("differs" if r is None else "")
                        out.append({"table": name, "key": kstr, "column": c, "a": va, "b": vb,
                                    "ratio": None if r is None else round(r, 6), "note": note,
                                    "verdict": _verdict(name, c, a, b, rule)})
                    elif str(va) != str(vb):
                        out.append({"table": name, "key": kstr, "column": c, "a": va, "b": vb,
                                    "ratio": None, "note": "differs", "verdict": ""})
    finally:
        con.close()
    return out


def _key_of(row: dict, keys: list) -> tuple:
    """A row's key; a variant or strategy under its old name (core.config.RENAMED) as its new
    one, so that a run from before the renames compares with one after."""
    return tuple(str(RENAMED.get(row[k], row[k]) if k in ("variant", "strategy") else row[k]) for k in keys)


def _raw(column: str) -> bool:
    """The raw repetitions of a figure: judged through the figure, not listed as a difference."""
    return column.endswith("_values") or column.startswith("values_")


def tally(rows: list) -> str:
    """'31 figures judged: 1 called different (3 %), 30 within noise or below the threshold'."""
    judged = [r["verdict"] for r in rows if r.get("verdict") and not r["verdict"].startswith("not a finding")]
    diff = sum(not (v.startswith("within noise") or v.startswith("below the")) for v in judged)
    share = f" ({100 * diff / len(judged):.0f} %)" if judged else ""
    return (f"{len(judged)} figures judged: {diff} called different{share}, "
            f"{len(judged) - diff} within noise or below the threshold")


def write(rows: list, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    cols = {c: pa.array([None if r[c] is None else str(r[c]) for r in rows], pa.string())
            for c in COLUMNS if c not in ("ratio",)}
    cols["ratio"] = pa.array([r["ratio"] for r in rows], pa.float64())
    write_csv(pa.table({c: cols[c] for c in COLUMNS}), path)


def format_rows(rows: list, limit: int = 40) -> str:
    """Plain-text listing, at most ``limit`` rows per table (all rows go to the CSV)."""
    lines, seen = [], {}
    kw = min(max([len(r["key"]) for r in rows] + [10]), 70)
    cw = min(max([len(r["column"]) for r in rows] + [6]), 30)
    for r in rows:
        seen[r["table"]] = seen.get(r["table"], 0) + 1
        if seen[r["table"]] > limit:
            continue
        ratio = "" if r["ratio"] is None else f"x{r['ratio']:.3g}"
        lines.append(f"{r['table']:<10} {r['key']:<{kw}} {r['column']:<{cw}} "
                     f"{_short(r['a']):>14} -> {_short(r['b']):<14} {ratio:<9} {r['note']} "
                     f"{r.get('verdict') or ''}".rstrip())
    for t, n in seen.items():
        if n > limit:
            lines.append(f"{t}: {n - limit} more rows in the CSV")
    return "\n".join(lines)


def _short(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.6g}"
    s = str(v)
    return s if len(s) <= 14 else s[:13] + "…"
