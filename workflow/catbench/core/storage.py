"""Storage targets as the workflow sees them: per-run directories, the space a run
needs on each, the checks done before any work, and the load comparison table."""

from __future__ import annotations

import json
from pathlib import Path

from .config import estimated_objects, target_dir
from .targets import TargetError, check_target, parse_size

# Bytes per index row on a target: the InnoDB table (~60-90 B/row for CHAR(28) keys
# with page fill), redo and temporary sort files of the faster strategies (x2).
INDEX_BYTES_PER_ROW = 250


def need_bytes(cfg: dict) -> int:
    """A generous estimate of what one run writes on a target at its peak."""
    return estimated_objects(cfg) * INDEX_BYTES_PER_ROW + parse_size(cfg["fio"]["size"]) \
        + 256 * 2**20  # a fresh datadir: system tables, redo log, undo


def settings_mb(settings: dict) -> int:
    """Memory the server settings ask for (buffer pool and log buffer), in MiB."""
    total = 0
    for key in ("innodb_buffer_pool_size", "innodb_log_buffer_size"):
        if key in settings:
            total += parse_size(str(settings[key])) // 2**20
    return total


def check_targets(cfg: dict, names=None, space: bool = True) -> dict:
    """check_target() for each named target (default: all); returns their descriptions.
    ``space=False`` checks only that each is a writable directory."""
    out = {}
    for name in names or cfg["targets"]:
        if name not in cfg["targets"]:
            raise TargetError(f"storage target '{name}' is not in the config (targets: "
                              f"{', '.join(cfg['targets'])})")
        out[name] = check_target(name, target_dir(cfg, name), need_bytes(cfg) if space else 0)
    return out


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
