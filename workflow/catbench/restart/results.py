"""A restart job's result files (<kind>.json, <kind>.error.json, summary.json), for the
single server's driver and the cluster's alike."""

from __future__ import annotations

import json
from pathlib import Path

from ..core.infra.files import atomic_path


def write_json(path: Path, obj):
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=1, default=str) + "\n")


def clear_results(out_dir: Path, kinds, others=()):
    """A re-run replaces results; stale evidence must not look current: every kind's files,
    summary.json and the files ``others`` (globs) names."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for kind in kinds:
        for suffix in (".json", ".error.json"):
            (out_dir / f"{kind}{suffix}").unlink(missing_ok=True)
    (out_dir / "summary.json").unlink(missing_ok=True)
    for pattern in others:
        for old in out_dir.glob(pattern):
            old.unlink()
