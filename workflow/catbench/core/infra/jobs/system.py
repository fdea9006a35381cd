"""The system tools a config's jobs need, the ONE place set-up reads them from: the names
``workflow/scripts/install-system.sh`` takes as arguments (it maps each to its packages
and installs the missing ones). ``make run`` installs only its config's; ``make test`` all.
The command reads the config as the workflow does (its patch file's footprint too), so it
lives in the CLI:

    python -m catbench system-tools --config config/config.yaml   # e.g. "server fio"
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ..config import ConfigError

INSTALL = Path(__file__).resolve().parents[4] / "scripts" / "install-system.sh"

# Every tool install-system.sh knows, in its order. slurm (slurm-wlm, munge) and browser
# (chromium) are for the tests alone: no config needs them.
TOOLS = ("server", "rocksdb", "fio", "cluster", "slurm", "browser")
# Stages whose jobs start a private MariaDB/MySQL server.
SERVER_STAGES = ("load_index", "queries", "restart", "cluster")


def needed_tools(cfg: dict) -> list[str]:
    """The tools of a validated config's stages: the server for any stage that starts one,
    MyRocks when the index study loads into rocksdb, fio for fio, Galera and its SST tools
    for cluster."""
    stages = cfg["stages"]
    need = set()
    if any(s in stages for s in SERVER_STAGES):
        need.add("server")
    if "load_index" in stages and "rocksdb" in cfg["load"]["engines"]:
        need.add("rocksdb")
    need.update(s for s in ("fio", "cluster") if s in stages)
    return [t for t in TOOLS if t in need]


def missing_packages(cfg: dict, env: dict | None = None) -> list[str]:
    """The system packages this config's tools need that are not installed here (the
    install script's own checks, run without installing)."""
    tools = needed_tools(cfg)
    if not tools:
        return []
    out = subprocess.run(["/bin/bash", str(INSTALL), *tools], capture_output=True, text=True, timeout=60,
                         env={**(os.environ if env is None else env), "CATBENCH_DRY_RUN": "1"})
    if out.returncode != 0:
        raise ConfigError(f"{INSTALL}: {out.stderr.strip() or out.returncode}")
    return out.stdout.split()
