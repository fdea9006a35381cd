"""The workflow's checks before any job (cli/workflow/dag.py ``checked``), run in the test's
process as `snakemake <targets> -n -d <workdir> --configfile <file> [--config …]` runs them
while it parses the Snakefile: the config file and --config read by Snakemake's own readers,
in the folder Snakemake would work in. A refusal costs no Snakemake start; the wiring (Snakemake
prints the refusal and exits non-zero before any job) is tested through the real command
(test_config.py, test_target_room.py)."""

from __future__ import annotations

import contextlib
import io
import os
from dataclasses import dataclass
from pathlib import Path

from catbench.cli.workflow.dag import checked
from catbench.cli.workflow.preflight import Invocation, PreflightError

from .paths import REPO, SNAKEMAKE


@dataclass
class Checked:
    refusal: str    # the run's first line when refused, "" when accepted
    said: str       # what the checks printed (the plan, the estimate, warnings)


def check(workdir: Path, configfile: Path, *args: str, overrides: tuple = (), dryrun: bool = True) -> Checked:
    """The checks of ``snakemake <args> [-n] -d workdir --configfile configfile --config
    <overrides>``; ``args`` are its targets and options (e.g. "--keep-going")."""
    from snakemake.common.configfile import load_configfile
    from snakemake.utils import update_config
    over = {}
    if overrides:
        from snakemake.cli import parse_config   # Snakemake's own reader of --config
        over = parse_config(list(overrides))
    config = load_configfile(str(configfile))
    update_config(config, over)
    argv = [str(SNAKEMAKE), *args, *(["-n"] if dryrun else []), "-s", str(REPO / "Snakefile"),
            "-d", str(workdir), "--configfile", str(configfile)]
    workdir.mkdir(parents=True, exist_ok=True)
    said, cwd = io.StringIO(), os.getcwd()
    os.chdir(workdir)
    try:
        with contextlib.redirect_stderr(said):
            checked(Invocation(REPO, (str(configfile),), over, main=True, dryrun=dryrun), config, argv)
        return Checked("", said.getvalue())
    except PreflightError as e:
        return Checked(str(e), said.getvalue())
    finally:
        os.chdir(cwd)
