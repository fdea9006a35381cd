"""load/comparison.csv: the loads of a run side by side, with each one's speed-up over
the one-file-at-a-time protocol on the same target, variant and storage engine; and
load/not_run.json: the engine x strategy pairs of the config that were not run, and why."""

from __future__ import annotations

import json
from pathlib import Path

from ..core.infra.files import atomic_path
from ..core.infra.metrics import OLD_LOAD_LAYOUT

COLUMNS = ("target", "variant", "engine", "strategy", "files", "rows", "seconds", "rows_per_s", "sort_seconds",
           "table_bytes", "lookup_qps", "lookup_p50_s", "lookup_p99_s", "optimize_seconds", "optimize_stopped")

_SPEEDUP = """
    SELECT l.*, s.seconds / l.seconds AS speedup_vs_one_file_at_a_time
    FROM loads l LEFT JOIN loads s
      ON s.target = l.target AND s.variant = l.variant AND s.engine = l.engine
     AND s.strategy = 'one-file-at-a-time'
    ORDER BY l.target, l.variant, l.engine, l.seconds"""


def _read_summary(f) -> dict:
    p = Path(f) / "summary.json" if Path(f).is_dir() else Path(f)
    try:
        s = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{p}: unreadable load summary ({e}); re-run that load") from e
    if "engine" not in s:
        raise ValueError(f"{p}: a load summary without its engine, {OLD_LOAD_LAYOUT}")
    return {**{k: s.get(k) for k in COLUMNS}, "engine": s["engine"]}


def compare_loads(summary_files, out_path):
    """load/comparison.csv: one row per (target, variant, engine, strategy) with the
    speed-up against `one-file-at-a-time` of the same target, variant and engine."""
    import duckdb
    import pyarrow as pa

    rows = [_read_summary(f) for f in summary_files]
    con = duckdb.connect()
    try:
        con.register("loads", pa.Table.from_pylist(rows))
        with atomic_path(out_path) as tmp:
            con.sql(_SPEEDUP).write_csv(str(tmp), header=True)
    finally:
        con.close()


def write_not_run(pairs: list[dict], out_path):
    """load/not_run.json: [{engine, strategy, reason}] of the pairs the DAG left out."""
    with atomic_path(out_path) as tmp:
        tmp.write_text(json.dumps([{k: p[k] for k in ("engine", "strategy", "reason")} for p in pairs],
                                  indent=1) + "\n")
