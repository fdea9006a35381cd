"""The ``lsdb`` engine's Dask cluster, started and stopped by the stage: a ``LocalCluster`` of
``queries.lsdb.workers`` processes on 127.0.0.1 (no dashboard), inside the query job (under Slurm
its allocation, the node held alone), or a ``dask_jobqueue.SLURMCluster`` whose worker jobs run
on the query job's node (``queries.lsdb.cluster: slurm``; the query job is then their client, not
exclusive). Either is closed on every way out (an error, Ctrl-C, a batch system's SIGTERM): its
workers and their jobs with it."""

from __future__ import annotations

import logging
import os
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..suite import QueryError

log = logging.getLogger(__name__)
START_TIMEOUT_S = 300
GONE_TIMEOUT_S = 60


@dataclass(frozen=True)
class ClusterOptions:
    """Workers, each worker's threads and memory (bytes), where they spill, and the kind
    (``local`` or ``slurm``); ``minutes``: a Slurm worker job's time limit."""
    workers: int
    threads: int
    memory_bytes: int
    kind: str = "local"
    minutes: int = 60


def _local(opts: ClusterOptions, scratch: Path):
    from distributed import LocalCluster
    return LocalCluster(n_workers=opts.workers, threads_per_worker=opts.threads, memory_limit=opts.memory_bytes,
                        processes=True, host="127.0.0.1", dashboard_address=None, local_directory=str(scratch),
                        scheduler_kwargs={"local_directory": str(scratch)})


def _slurm(opts: ClusterOptions, scratch: Path):
    from dask_jobqueue import SLURMCluster
    node = os.environ.get("SLURMD_NODENAME")
    extra = [f"--nodelist={node}"] if node else []
    if os.environ.get("SLURM_JOB_PARTITION"):
        extra.append(f"--partition={os.environ['SLURM_JOB_PARTITION']}")
    cluster = SLURMCluster(cores=opts.threads, processes=1, memory=f"{opts.memory_bytes // 2**20}MiB",
                           walltime=f"{opts.minutes:d}", job_extra_directives=extra, local_directory=str(scratch),
                           log_directory=str(scratch / "slurm"), interface=None, job_name="catbench-lsdb",
                           scheduler_options={"dashboard_address": None, "local_directory": str(scratch)})
    cluster.scale(jobs=opts.workers)
    return cluster


def _until_gone(jobs: list[str]) -> None:
    """Wait for cancelled worker jobs to leave the queue: slurmd writes a job's log into the
    scratch folder as it ends, so a folder removed before that is left half removed."""
    end = time.monotonic() + GONE_TIMEOUT_S
    while jobs and time.monotonic() < end:
        q = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True)
        if q.returncode == 0 and not set(jobs) & set(q.stdout.split()):
            return
        time.sleep(0.5)
    if jobs:
        log.warning("Slurm worker job(s) %s still listed %d s after their cancel", ",".join(jobs), GONE_TIMEOUT_S)


KINDS = {"local": _local, "slurm": _slurm}


def _import_engine() -> None:
    """On each worker as it joins: what its first task would import (LSDB, HATS, nested-pandas,
    Dask's dataframes; ~2–4 CPU-s a process), so that a cold run times a new worker's reads and
    work, as a restarted server's start is not timed, not Python's imports."""
    import lsdb  # noqa: F401


class DaskCluster:
    """A cluster of ``opts`` and its client; ``restart()`` (a cold run's) stops both and starts
    fresh ones: a new set of worker processes, nothing of the last query kept."""

    def __init__(self, opts: ClusterOptions, scratch: Path):
        self.opts, self.scratch = opts, scratch
        self.cluster = self.client = None

    def start(self):
        from distributed import Client
        self.scratch.mkdir(parents=True, exist_ok=True)
        opts = self.opts
        self.cluster = KINDS[opts.kind](opts, self.scratch)
        self.client = Client(self.cluster)
        try:
            self.client.wait_for_workers(opts.workers, timeout=START_TIMEOUT_S)
        except TimeoutError:
            raise QueryError(f"the lsdb engine's {opts.kind} Dask cluster did not start its {opts.workers} "
                             f"worker(s) within {START_TIMEOUT_S} s (queries.lsdb.workers"
                             + ("; a Slurm worker job asks the query job's time limit, its cores and memory: "
                                "squeue says why one is pending)" if opts.kind == "slurm" else ")")) from None
        self.client.run(_import_engine)
        log.info("Dask %s cluster: %d worker(s) of %d thread(s), %.0f MiB each", opts.kind, opts.workers,
                 opts.threads, opts.memory_bytes / 2**20)
        return self.client

    def stop(self):
        jobs = [j for w in getattr(self.cluster, "workers", {}).values() if (j := getattr(w, "job_id", None))]
        try:
            if self.client is not None:
                self.client.close()
        finally:
            self.client = None
            if self.cluster is not None:
                self.cluster.close()
                self.cluster = None
            _until_gone(jobs)

    def restart(self):
        self.stop()
        return self.start()


@contextmanager
def dask_cluster(opts: ClusterOptions, scratch: Path):
    """A started :class:`DaskCluster`, stopped on every way out."""
    cluster = DaskCluster(opts, scratch)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
