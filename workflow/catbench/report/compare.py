"""``catbench compare RESULTS_A RESULTS_B``: the two runs' final tables side by side.

Each table is joined on its key columns (full outer join, DuckDB); every numeric column gives a
row ``table, key, column, a, b, ratio`` with ratio = B / A; other columns give a row only when
they differ; a key present in one run only gives one row with ``column`` = ``(row)``.
The measured figures (:data:`FIGURES`: load seconds, fio MB/s and IOPS, query and restart
seconds) also get a ``verdict`` from the product's one comparison rule (``stats.verdict`` on
each run's repetitions), judged against the runs' common offset (``noise.offset``, the first
row: "B is 1.07x [1.02–1.12] slower across the board") with the variance one run adds to a
figure beyond it (``noise.py``: measured by a twin of runs on this machine, else assumed from
``report.between_run_cv``), and its minimum detectable ratio (column ``mdr``). A figure whose
measuring job did not run alone in either run (isolation.csv) is "not comparable", never judged.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pyarrow as pa

from ..core.infra.jobs.isolation import ran_alone
from . import noise
from .inputs import MetricsError
from .spec import ReportSpec
from .stats import RunSpread, Figure, holm, holm_cutoff, verdict
from .wording import fmt, short
from .tables import check_numbers, write_csv
from .views import refuse_old_columns

KEYS = {
    "storage": ("target", "test"),
    "load_time": ("target", "variant", "engine", "strategy"),
    "load_rate": ("target", "variant", "engine", "strategy", "repetition", "interval"),
    "load_collapse": ("target", "variant", "engine", "strategy"),
    "load_io": ("target", "variant", "engine", "strategy"),
    "queries": ("target", "query_engine", "query", "cache"),
    "chunk_load": ("target",),
    "layouts": ("target", "query_engine"),
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
COLUMNS = ("table", "key", "column", "a", "b", "ratio", "note", "verdict", "mdr")
# the stage whose measuring jobs write each table's figures; a job's directory below
# results/<run>/<stage>/ names the leading key columns (load/<target>/<variant>/<engine>/<strategy>)
STAGE_OF = {"storage": "fio", "load_time": "load", "load_io": "load", "queries": "queries", "restart": "restart",
            "cluster_restart": "cluster", "cluster_load": "cluster"}
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


def distinct(results_a, results_b, why: str) -> None:
    """Refuse one run given as both A and B, whatever the spelling of its path (tables/ or
    not, ``..``, a symlink): ``why`` says what that would not be."""
    if tables_dir(results_a).resolve() == tables_dir(results_b).resolve():
        raise MetricsError(f"{results_a} and {results_b} are one run: {why}")


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
        refuse_old_columns(name, header, path)
        names = {k: "VARCHAR" for k in header if k in KEYS.get(name, ())}
        rel = con.read_csv(str(path), header=True, dtype=names or None)   # the relation API: no path in SQL text
        cols = rel.columns
        types = [str(t).upper() for t in rel.types]
        rows = rel.fetchall()
    except (duckdb.Error, OSError, UnicodeDecodeError, csv.Error) as exc:
        raise MetricsError(f"{path}: not a readable CSV file ({exc})") from exc
    numeric = {c for c, t in zip(cols, types) if t.split("(")[0] in NUMERIC}
    rows = [dict(zip(cols, r)) for r in rows]
    check_numbers(path, name, rows)
    return cols, numeric, rows


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


def rule_of(report: ReportSpec, floor: dict | None) -> dict:
    """What the verdicts of a comparison of two runs use: the report section's threshold and
    alpha, and the between-run variance and its degrees of freedom per figure family: the
    measured ``floor``'s, else the config's ``between_run_cv`` with noise.FALLBACK_DF."""
    return {"threshold": report.practical_threshold, "alpha": report.alpha, "floor": floor or {},
            "fallback": (noise.cv_var(report.between_run_cv), noise.FALLBACK_DF)}


def diffs(pairs) -> list:
    """noise.Diff of every figure pair (table, column, key, Figure A, Figure B) that has one."""
    out = [noise.diff(noise.family(t, c), fa.values, fb.values, FIGURES[(t, c)][0]) for t, c, _k, fa, fb in pairs]
    return [d for d in out if d is not None]


def judge(pairs, rule: dict) -> tuple:
    """(the runs' common offset or None, the Verdict of B against A of every figure pair)."""
    off = noise.offset(diffs(pairs))
    verdicts = []
    for table, column, _key, fa, fb in pairs:
        higher = FIGURES[(table, column)][0]
        floor = rule["floor"]
        var, df = floor.get(noise.family(table, column), floor.get(noise.ALL, rule["fallback"]))
        c = 0.0 if off is None else (-off.log if higher else off.log)   # log B - log A expected
        between = RunSpread(var, df, c, 0.0 if off is None else off.var)
        verdicts.append(verdict(fb, fa, higher_is_better=higher, threshold=rule["threshold"],
                                alpha=rule["alpha"], between=between))
    return off, verdicts


def offset_text(off) -> str:
    """'B is 1.07x [1.02–1.12] slower across the board (median of 42 figures) ...'."""
    if off is None:
        return f"too few figures (< {noise.MIN_OFFSET_FIGURES}) to estimate a common offset: none taken off"
    r, lo, hi = (math.exp(x) for x in (off.log, off.lo, off.hi))
    word, r, lo, hi = ("slower", r, lo, hi) if off.log >= 0 else ("faster", 1 / r, 1 / hi, 1 / lo)
    return (f"B is {fmt(r, 'x')} [{fmt(lo)}–{fmt(hi)}] {word} across the board (median of {off.figures} "
            f"figures); each figure is judged against that")


def met_other_work(results) -> list | None:
    """(stage, key values) of every measuring job of a run that did not run alone
    (tables/isolation.csv); None when the run has no isolation records."""
    path = tables_dir(results) / "isolation.csv"
    if not path.is_file():
        return None
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    out = []
    for r in rows:
        if not ran_alone(r):
            stage, *segs = r["job"].split("/")
            out.append((stage, tuple(segs)))
    return out


def _met(table: str, key: tuple, jobs: list | None) -> bool:
    stage = STAGE_OF.get(table)
    return any(s == stage and key[:len(segs)] == segs for s, segs in jobs or ())


def _not_comparable(table: str, key: tuple, met: tuple) -> str:
    """'' when the figure's measuring jobs ran alone in both runs, else the verdict saying whose did not."""
    who = [r for r, jobs in zip("AB", met) if _met(table, key, jobs)]
    if not who:
        return ""
    return "not comparable (" + ("both runs' jobs" if len(who) == 2 else f"{who[0]}'s job") + " met other work)"


def figure_pairs(results_a, results_b):
    """(table, column, key, Figure A, Figure B) of every measured figure in both runs whose
    measuring jobs ran alone in both."""
    return [r[:5] for r in compare(results_a, results_b, None, pairs=True) if not r[5]]


def _judged_rows(figs: list, rule: dict) -> list:
    """Fill the verdict and mdr of each (row, pair) in ``figs``; returns the common offset's row."""
    off, verdicts = judge([p for _r, p in figs], rule)
    with holm(holm_cutoff(verdicts, rule["alpha"])):
        for (row, _p), v in zip(figs, verdicts):
            row.update(verdict=short(v, "B", "A", "faster", "slower"), kind=v.kind,
                       mdr=None if v.kind in ("better", "worse") or v.mdr is None else round(v.mdr, 3))
    return {"table": "(runs)", "key": "", "column": "common offset", "a": None, "b": None,
            "ratio": None if off is None else round(math.exp(off.log), 6), "note": "",
            "verdict": offset_text(off), "mdr": None, "kind": "offset"}


def _row(table: str, key: str, column: str, a=None, b=None, ratio=None, note: str = "") -> dict:
    return {"table": table, "key": key, "column": column, "a": a, "b": b, "ratio": ratio, "note": note,
            "verdict": "", "mdr": None}


def _table_rows(name: str, ta, tb, met: tuple, out: list, figs: list) -> None:
    """Append the rows of one table to ``out`` and (row, figure pair) of its comparable
    measured figures to ``figs`` (judged together afterwards); the figure pair carries whether
    it is not comparable as a 6th item."""
    (ca, na, ra), (cb, nb, rb) = ta, tb
    ks = [k for k in KEYS[name] if k in ca and k in cb]
    ia = {_key_of(r, ks): r for r in ra}
    ib = {_key_of(r, ks): r for r in rb}
    for key in list(dict.fromkeys(list(ia) + list(ib))):
        a, b = ia.get(key), ib.get(key)
        kstr = ", ".join(f"{k}={v}" for k, v in zip(ks, key))
        if a is None or b is None:
            out.append(_row(name, kstr, "(row)", note=f"only in {'A' if b is None else 'B'}"))
            continue
        apart = _not_comparable(name, key, met)
        for c in [c for c in ca if c in cb and c not in ks and not _raw(c)]:
            va, vb = a.get(c), b.get(c)
            if c in na and c in nb:
                r = _ratio(va, vb)
                row = _row(name, kstr, c, va, vb, None if r is None else round(r, 6),
                           "" if va == vb else ("differs" if r is None else ""))
                out.append(row)
                pair = _figures(name, c, a, b)
                if pair is not None:
                    figs.append((row, (name, c, kstr, *pair, apart)))
                if pair is not None and apart:
                    row.update(verdict=apart, kind="apart")
            elif str(va) != str(vb):
                out.append(_row(name, kstr, c, va, vb, note="differs"))


def compare(results_a, results_b, report: ReportSpec | None, floor: dict | None = None,
            pairs: bool = False) -> list:
    """Rows of the comparison (dicts with COLUMNS), the runs' common offset first (``report``
    None only with ``pairs``); ``floor`` = the between-run variance per figure family
    (``noise.load``). With ``pairs``, only the measured figures as (table, column, key, A, B,
    why not comparable or '')."""
    import duckdb
    da, db = tables_dir(results_a), tables_dir(results_b)
    met = (met_other_work(da), met_other_work(db))
    con = duckdb.connect()
    out, figs = [], []
    try:
        for name in KEYS:
            ta, tb = _read(con, da / f"{name}.csv", name), _read(con, db / f"{name}.csv", name)
            if ta is not None and tb is not None:
                _table_rows(name, ta, tb, met, out, figs)
            elif ta is not None or tb is not None:
                out.append(_row(name, "", "(table)", note=f"only in {'A' if tb is None else 'B'}"))
    finally:
        con.close()
    if pairs:
        return [p for _r, p in figs]
    head = _judged_rows([(r, p[:5]) for r, p in figs if not p[5]], rule_of(report, floor))
    return [head] + out


def _key_of(row: dict, keys: list) -> tuple:
    return tuple(str(row[k]) for k in keys)


def _raw(column: str) -> bool:
    """The raw repetitions of a figure: judged through the figure, not listed as a difference."""
    return column.endswith("_values") or column.startswith("values_")


def tally(rows: list) -> str:
    """'31 figures judged: 1 called different (3 %), 30 within noise or below the threshold;
    2 not comparable (a job met other work); 1 not tested (no spread)'."""
    kinds = [r.get("kind") for r in rows if r.get("kind")]
    judged = [k for k in kinds if k in ("better", "worse", "noise", "small")]
    diff = sum(k in ("better", "worse") for k in judged)
    share = f" ({100 * diff / len(judged):.0f} %)" if judged else ""
    apart, untested = kinds.count("apart"), sum(k in ("single", "flat", "nonpositive") for k in kinds)
    return (f"{len(judged)} figures judged: {diff} called different{share}, "
            f"{len(judged) - diff} within noise or below the threshold; {apart} not comparable (a measuring "
            f"job met other work); {untested} not tested (too few repetitions, no spread or a value ≤ 0)")


def header(rows: list, results_a, results_b) -> str:
    """The comparison's opening lines: the runs' common offset, how many figures are not
    comparable, and a run without isolation records."""
    apart = sum(r.get("kind") == "apart" for r in rows)
    lines = [f"common offset: {rows[0]['verdict']}",
             f"not comparable: {apart} figures (their measuring job met other work in A or B: never judged)"]
    for name, run in (("A", results_a), ("B", results_b)):
        if met_other_work(run) is None:
            lines.append(f"{name} has no isolation records: whether its measuring jobs ran alone is unknown")
    return "\n".join(lines)


def write(rows: list, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    cols = {c: pa.array([None if r[c] is None else str(r[c]) for r in rows], pa.string())
            for c in COLUMNS if c not in ("ratio", "mdr")}
    for c in ("ratio", "mdr"):
        cols[c] = pa.array([r.get(c) for r in rows], pa.float64())
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
