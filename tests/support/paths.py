"""Where the repository and its venv's tools are, and the environment that finds them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"
SNAKEMAKE = VENV_BIN / "snakemake"
CATBENCH = VENV_BIN / "catbench"
ENV = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}"}


def snakemake(workdir: Path, configfile: Path, *args, timeout: float = 900) -> subprocess.CompletedProcess:
    """The real snakemake on the repository's Snakefile in ``workdir``; ``args`` (targets,
    options) come before --configfile, which takes several values."""
    cmd = [str(SNAKEMAKE), *args, "-s", str(REPO / "Snakefile"), "-d", str(workdir),
           "--configfile", str(configfile)]
    from . import preloaded     # it imports this module
    return preloaded.run(cmd, capture_output=True, text=True, env=ENV, timeout=timeout, cwd=workdir.parent)
