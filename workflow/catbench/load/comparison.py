"""load/comparison.csv: the loads of a run side by side, with each one's speed-up over
the seed's protocol (``sequential``) on the same target and variant."""

from __future__ import annotations

import json
from pathlib import Path


def compare_loads(summary_files, out_path):
    """load/comparison.csv: one row per (target, variant, strategy) with the speed-up
    against `sequential` of the same target and variant."""
    import duckdb

    rows = []
    for f in summary_files:
        p = Path(f) / "summary.json" if Path(f).is_dir() else Path(f)
        try:
            s = json.loads(p.read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise ValueError(f"{p}: unreadable load summary ({e}); re-run that load") from e
        rows.append({k: s.get(k) for k in (
            "target", "variant", "strategy", "files", "rows", "seconds", "rows_per_s",
            "sort_seconds", "table_bytes", "lookup_qps", "lookup_p50_s", "lookup_p99_s",
            "optimize_seconds", "optimize_stopped")})
    con = duckdb.connect()
    import pyarrow as pa
    con.register("loads", pa.Table.from_pylist(rows))
    con.execute(f"""
        COPY (SELECT l.*, s.seconds / l.seconds AS speedup_vs_sequential
              FROM loads l LEFT JOIN loads s
                ON s.target = l.target AND s.variant = l.variant AND s.strategy = 'sequential'
              ORDER BY l.target, l.variant, l.seconds)
        TO '{out_path}' (FORMAT csv, HEADER true)""")
