"""A real single-node Slurm for tests, configured as a site would: munged + slurmctld +
slurmd on this machine, all private (own munge socket and key, own ports, state and
slurm.conf in a temp dir reached through SLURM_CONF, no accounting database), a partition
`batch` with an optional MaxTime, select/cons_tres + CR_Core_Memory, and a node that may
declare fewer CPUs than this machine has; stopped on exit whatever happens. Nothing
outside the temp dir is touched, so it runs beside a real Slurm installation too."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psutil

DAEMONS = ("munged", "slurmctld", "slurmd")


def available() -> str | None:
    """None when Slurm and munge can run here, else the reason."""
    for tool in (*DAEMONS, "sbatch", "squeue", "sinfo", "srun"):
        if not (shutil.which(tool) or Path(f"/usr/sbin/{tool}").exists()):
            return f"{tool} not installed (make test installs slurm-wlm and munge as root)"
    if os.geteuid() != 0:
        return "a private slurmd must run as root here"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(cond, timeout, what, logs=()):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if cond():
            return
        time.sleep(0.3)
    tails = "\n".join(f"--- {p}:\n" + (Path(p).read_text()[-2000:] if Path(p).exists() else "(none)")
                      for p in logs)
    raise RuntimeError(f"timed out after {timeout}s waiting for {what}\n{tails}")


def _sbin(tool):
    return shutil.which(tool) or f"/usr/sbin/{tool}"


def _srun_shim(bindir: Path, conf: Path):
    """Snakemake's jobstep runs `srun` with every SLURM_* variable removed, SLURM_CONF
    included, so srun would read the system's /etc/slurm: a shim first in PATH (sbatch
    exports PATH to the job) gives it the private config back."""
    bindir.mkdir()
    shim = bindir / "srun"
    shim.write_text(f"#!/bin/sh\nSLURM_CONF={conf} exec {shutil.which('srun') or '/usr/bin/srun'} \"$@\"\n")
    shim.chmod(0o755)


@contextlib.contextmanager
def slurm_cluster(cpus: int | None = None, memory_mb: int | None = None, max_time: str = "INFINITE",
                  enforce_part_limits: str | None = None, partition: str = "batch"):
    """Yield the environment (SLURM_CONF, PATH) under which sbatch/squeue/srun reach the
    private cluster: one node of ``cpus`` CPUs (default: this machine's) and
    ``memory_mb``, in partition ``partition`` with MaxTime ``max_time``;
    ``enforce_part_limits`` (NO, ANY, ALL; default Slurm's NO)."""
    base = Path(tempfile.mkdtemp(prefix="cbslurm-", dir="/tmp"))
    procs: list[subprocess.Popen] = []
    host = socket.gethostname()
    cpus = cpus or os.cpu_count()
    memory_mb = memory_mb or int(psutil.virtual_memory().total / 2**20 * 0.8)
    for d in ("state", "spool", "munge"):
        (base / d).mkdir()
    os.chmod(base / "munge", 0o700)
    key = base / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    os.chmod(key, 0o400)
    msock = base / "munge" / "munge.sock"
    conf = base / "slurm.conf"
    conf.write_text(f"""\
ClusterName=catbench-test
SlurmctldHost={host}
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
AuthType=auth/munge
AuthInfo=socket={msock}
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={base}/state
SlurmdSpoolDir={base}/spool
SlurmctldPidFile={base}/slurmctld.pid
SlurmdPidFile={base}/slurmd.pid
SlurmctldLogFile={base}/slurmctld.log
SlurmdLogFile={base}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# Finished jobs stay visible to squeue long enough for Snakemake's status checks.
MinJobAge=3600
ReturnToService=2
MpiDefault=none
{f"EnforcePartLimits={enforce_part_limits}" if enforce_part_limits else ""}
NodeName={host} CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN
PartitionName={partition} Nodes={host} Default=YES MaxTime={max_time} State=UP
""")
    _srun_shim(base / "bin", conf)
    env = {**os.environ, "SLURM_CONF": str(conf), "PATH": f"{base / 'bin'}:{os.environ['PATH']}",
           "CBSLURM_BASE": str(base)}  # for leftover_daemons(): this cluster's, not another test's
    try:
        procs.append(subprocess.Popen(
            [_sbin("munged"), "--foreground", "--force", f"--socket={msock}", f"--key-file={key}",
             f"--pid-file={base}/munge/munged.pid", f"--log-file={base}/munge/munged.log",
             f"--seed-file={base}/munge/seed"],
            stdout=subprocess.DEVNULL, stderr=open(base / "munged.err", "w")))
        _wait(msock.exists, 20, "munged", [base / "munged.err", base / "munge/munged.log"])
        procs.append(subprocess.Popen([_sbin("slurmctld"), "-D", "-i", "-f", str(conf)], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
        procs.append(subprocess.Popen([_sbin("slurmd"), "-D", "-f", str(conf)], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))

        def idle():
            r = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True)
            return r.returncode == 0 and "idle" in r.stdout
        _wait(idle, 60, "the Slurm node to be idle", [base / "slurmctld.log", base / "slurmd.log"])
        yield env
    finally:
        # Jobs first (scancel, while the controller runs: without one it waits for it),
        # then the daemons; SIGKILL whatever does not stop.
        if len(procs) > 1 and procs[1].poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                subprocess.run(["scancel", "--full", "-u", "root"], env=env, capture_output=True, timeout=30)
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(procs):
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for step in _ours(str(base)):      # a step's job (its shell, Snakemake, srun) with it
            try:
                family = [*step.children(recursive=True), step]
            except psutil.Error:
                family = [step]
            for proc in family:
                with contextlib.suppress(psutil.Error):
                    proc.kill()
        shutil.rmtree(base, ignore_errors=True)


def _cluster_of(pid: int) -> str:
    """The CBSLURM_BASE a process was started with, read from the raw /proc environ: a job step
    writes its title over the start of it, where psutil's reading stops."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return ""
    return next((v.decode(errors="replace") for k, _, v in (e.partition(b"=") for e in raw.split(b"\0"))
                 if k == b"CBSLURM_BASE"), "")


def _ours(base: str) -> list[psutil.Process]:
    """This cluster's daemons (``base``: its folder, or a prefix of such folders), by their
    command lines, and its job steps, which name only their job (``slurmstepd: [5.batch]``), by
    the CBSLURM_BASE slurmd passes them."""
    out = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        try:
            if proc.info["name"] in DAEMONS and any(base in c for c in proc.info["cmdline"] or []) or \
                    proc.info["name"] == "slurmstepd" and _cluster_of(proc.pid).startswith(base):
                out.append(proc)
        except psutil.Error:
            pass
    return out


def leftover_daemons(base_prefix: str = "/tmp/cbslurm-") -> list[str]:
    out = []
    for proc in _ours(base_prefix):
        try:
            out.append(f"{proc.pid} {' '.join(proc.cmdline())}")
        except psutil.Error:
            pass
    return out
