"""Snakemake as the Slurm tests run it (``python slurm_snakemake.py <snakemake args>``).

The Slurm executor plugin lengthens its wait between two squeue checks by 10 s each time a
check finds no job finished, so a job of a few seconds is noticed 10 to 30 s late and the
tests' short jobs spend most of their time waiting to be seen. Here it checks every second:
when Snakemake notices a finished job changes, nothing that Slurm or the jobs do."""

import sys

from snakemake.cli import main
from snakemake_executor_plugin_slurm import Executor

Executor.next_seconds_between_status_checks = property(lambda self: 1, lambda self, value: None)

if __name__ == "__main__":
    sys.exit(main())
