"""The repository's data files: ``resources/`` (SQL, queries, fio jobs, server and report
templates) and the config schema. One place knows where they are."""

from __future__ import annotations

import os
from pathlib import Path

_REPO = Path(__file__).resolve().parents[4]


def repo_dir() -> Path:
    """The workflow directory (the repository): where a config's ``base`` is found."""
    return _REPO


def resources_dir() -> Path:
    """Repository ``resources/`` (override with CATBENCH_RESOURCES)."""
    env = os.environ.get("CATBENCH_RESOURCES")
    return Path(env) if env else _REPO / "resources"


def resource(*parts: str) -> Path:
    """A file under ``resources/``, e.g. ``resource("sql", "index", "checksum.sql")``."""
    return resources_dir().joinpath(*parts)


def read_sql(*parts: str) -> str:
    return resource("sql", *parts).read_text()


def split_statements(text: str) -> list[str]:
    """Statements separated by lines ending in ';' (comment lines dropped)."""
    out, buf = [], []
    for line in text.splitlines():
        if line.strip().startswith("--") or not line.strip():
            continue
        buf.append(line)
        if line.rstrip().endswith(";"):
            out.append("\n".join(buf).rstrip().rstrip(";"))
            buf = []
    if "".join(buf).strip():
        out.append("\n".join(buf))
    return out


SCHEMA_PATH = _REPO / "workflow" / "schemas" / "config.schema.yaml"
