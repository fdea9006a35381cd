"""A Slurm cluster's partition limits, read with ``scontrol`` and ``sinfo``, and the check
that every job's request fits them before anything is submitted. A job asking more time
than MaxTime, more CPUs or memory than any node of its partition, or a node outside it,
would otherwise sit PENDING forever (Slurm's default EnforcePartLimits=NO) or be refused
by sbatch; the check names the rule, its request, the limit and what to edit instead."""

from __future__ import annotations

import atexit
import getpass
import re
import signal
import subprocess
from dataclasses import dataclass, field

UNLIMITED = ("UNLIMITED", "INFINITE", "NONE", "N/A")
_BAD_NODE_STATES = ("DOWN", "DRAIN", "FAIL", "FUTURE", "NOT_RESPONDING", "POWERED_DOWN", "INVAL")


class SlurmError(RuntimeError):
    """The cluster cannot be read, or requests do not fit it."""


@dataclass
class SlurmPartition:
    name: str
    default: bool = False
    state: str = "UP"
    max_time: int | None = None          # minutes; None = unlimited
    max_cpus_per_node: int | None = None
    max_mem_per_node: int | None = None  # MB
    nodes: dict = field(default_factory=dict)  # name -> {"cpus": int, "mem_mb": int, "state": str}


def minutes(text: str) -> int | None:
    """Slurm's [days-]hours:minutes:seconds (or minutes, or minutes:seconds) in whole
    minutes, rounded up; None for UNLIMITED/INFINITE."""
    text = text.strip()
    if not text or text.upper() in UNLIMITED:
        return None
    days, dash, rest = text.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    if dash:                                   # days-hours[:minutes[:seconds]]
        h, m, s = (parts + [0, 0])[:3]
    else:                                      # minutes | minutes:seconds | hours:minutes:seconds
        h, m, s = {1: [0, *parts, 0], 2: [0, *parts], 3: parts}[len(parts)]
    total = (int(days or 0) * 24 + h) * 60 + m
    return total + (1 if s else 0)


def _number(text: str | None) -> int | None:
    if text is None or text.strip().upper() in UNLIMITED:
        return None
    m = re.match(r"\d+", text.strip())
    return int(m.group()) if m else None


def _run(cmd: list[str], env=None) -> str:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SlurmError(f"cannot read the Slurm cluster: {' '.join(cmd)}: {exc}") from exc
    if r.returncode != 0:
        raise SlurmError(f"cannot read the Slurm cluster: {' '.join(cmd)} failed: "
                         f"{(r.stderr or r.stdout).strip()[-500:]}")
    return r.stdout


def parse_slurm_partitions(scontrol_out: str, sinfo_out: str) -> dict[str, SlurmPartition]:
    """``scontrol show partition -o`` and ``sinfo -h -N -o '%N|%R|%c|%m|%T'``."""
    parts = {}
    for line in scontrol_out.splitlines():
        f = dict(re.findall(r"(\w+)=(\S*)", line))
        if "PartitionName" not in f:
            continue
        parts[f["PartitionName"]] = SlurmPartition(
            name=f["PartitionName"], default=f.get("Default") == "YES", state=f.get("State", "UP"),
            max_time=minutes(f.get("MaxTime", "UNLIMITED")),
            max_cpus_per_node=_number(f.get("MaxCPUsPerNode")),
            max_mem_per_node=_number(f.get("MaxMemPerNode")))
    for line in sinfo_out.splitlines():
        cols = line.strip().split("|")
        if len(cols) < 5 or cols[1] not in parts:
            continue
        parts[cols[1]].nodes[cols[0]] = {"cpus": _number(cols[2]) or 0, "mem_mb": _number(cols[3]) or 0,
                                         "state": cols[4].upper()}
    return parts


def read_slurm_partitions(env=None) -> dict[str, SlurmPartition]:
    """The cluster's partitions with their nodes (as the submitting user sees them)."""
    return parse_slurm_partitions(_run(["scontrol", "show", "partition", "-o"], env),
                                  _run(["sinfo", "-h", "-N", "-o", "%N|%R|%c|%m|%T"], env))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _fix(job: dict, what: str, default: str) -> str:
    """What to edit: the config key behind the number, or the profile that overrode it."""
    key = (job.get("keys") or {}).get(what)
    if job.get("overridden", {}).get(what):
        return "the workflow profile's set-threads/set-resources for this rule (it overrides the config)"
    return f"config key '{key}'" if key else default


def check_job(job: dict, parts: dict[str, SlurmPartition]) -> list[str]:
    """Problems of one job: ``job`` has rule, slurm_partition (None: the default), threads,
    mem_mb, runtime (min), node (from --nodelist, or None), keys and overridden; ``beside``: the
    CPUs of the jobs it submits to its own node (the lsdb engine's Dask workers), if any."""
    rule = job["rule"]
    name = job.get("slurm_partition") or next((p.name for p in parts.values() if p.default), None)
    if name is None:
        return [f"rule {rule}: the cluster has no default partition; set slurm_partition under "
                f"default-resources in the workflow profile (partitions: {', '.join(sorted(parts))})"]
    if name not in parts:
        return [f"rule {rule}: partition '{name}' (resource slurm_partition) does not exist "
                f"(partitions: {', '.join(sorted(parts))})"]
    p, out = parts[name], []
    where = f"partition '{name}'"
    if p.state.upper() != "UP":
        out.append(f"rule {rule}: {where} is {p.state}: its jobs would wait forever; ask the site or "
                   "choose another partition (slurm_partition)")
    nodes = p.nodes
    if job.get("node"):
        if job["node"] not in nodes:
            return out + [f"rule {rule}: node {job['node']} ({_fix(job, 'node', 'targets.<target>.node')}) "
                          f"is not in {where} (nodes: {', '.join(sorted(nodes)) or 'none'})"]
        nodes, where = {job["node"]: nodes[job["node"]]}, f"node {job['node']} of partition '{name}'"
    if p.max_time is not None and job["runtime"] > p.max_time:
        fix = _fix(job, "runtime", "its runtime")
        if fix.startswith("config key"):
            fix += (" (time limits are sized from the config's scale at that rate), or give the rule a "
                    "partition with a longer MaxTime (slurm_partition in the workflow profile)")
        out.append(f"rule {rule}: asks a time limit of {job['runtime']} min, but partition '{name}' "
                   f"allows at most {p.max_time} min (MaxTime); edit {fix}")
    cpus = max((n["cpus"] for n in nodes.values()), default=0)
    if p.max_cpus_per_node is not None:
        cpus = min(cpus, p.max_cpus_per_node)
    if job["threads"] > cpus:
        out.append(f"rule {rule}: asks {_plural(job['threads'], 'CPU')} per task, but {where} has at most "
                   f"{_plural(cpus, 'CPU')} per node; set {_fix(job, 'threads', 'its threads')} to at most {cpus}")
    elif job["threads"] + job.get("beside", 0) > cpus:    # its own jobs must fit on its node beside it
        out.append(f"rule {rule}: its Dask worker jobs (queries.lsdb.cluster: slurm) ask "
                   f"{_plural(job['beside'], 'CPU')} on its node beside its own {job['threads']}, but {where} "
                   f"has at most {_plural(cpus, 'CPU')} per node; set config key 'jobs.cpus' to at most "
                   f"{cpus - job['threads']}, or queries.lsdb.cluster to local")
    mem = max((n["mem_mb"] for n in nodes.values()), default=0)
    if p.max_mem_per_node is not None:
        mem = min(mem, p.max_mem_per_node)
    if job.get("mem_mb") and job["mem_mb"] > mem:
        out.append(f"rule {rule}: asks {job['mem_mb']} MB of memory, but {where} has at most {mem} MB per "
                   f"node (RealMemory/MaxMemPerNode); lower {_fix(job, 'mem_mb', 'its mem_mb')}")
    return out


def unusable_nodes(job: dict, parts: dict[str, SlurmPartition]) -> str | None:
    """A warning when every node the job may use is down or drained (it would wait)."""
    name = job.get("slurm_partition") or next((p.name for p in parts.values() if p.default), None)
    nodes = dict(parts[name].nodes) if name in parts else {}
    if job.get("node") in nodes:
        nodes = {job["node"]: nodes[job["node"]]}
    if nodes and all(any(s in n["state"] for s in _BAD_NODE_STATES) for n in nodes.values()):
        states = ", ".join(f"{k} {v['state'].lower()}" for k, v in sorted(nodes.items()))
        return f"rule {job['rule']}: every node it may use is unavailable ({states}); its jobs will wait"
    return None


def check_jobs(jobs: list[dict], parts: dict[str, SlurmPartition]) -> tuple[list[str], list[str]]:
    """(problems, warnings) over all jobs, each message once."""
    problems, warnings = [], []
    for job in jobs:
        for msg in check_job(job, parts):
            if msg not in problems:
                problems.append(msg)
        warn = unusable_nodes(job, parts)
        if warn and warn not in warnings:
            warnings.append(warn)
    return problems, warnings


def nodelist(slurm_extra: str | None) -> str | None:
    """The single node named by ``--nodelist=X`` / ``-w X`` in a job's slurm_extra."""
    m = re.search(r"(?:--nodelist[= ]|-w\s*)['\"]?([A-Za-z0-9][A-Za-z0-9_.-]*)", slurm_extra or "")
    return m.group(1) if m else None


def cancel_on_signal(job_name: str | None):
    """SIGTERM (and SIGINT) unwind the submitting Snakemake like Ctrl-C, which cancels the
    jobs it knows; at exit every job named ``job_name`` (the plugin names each job of a run
    after the run) is cancelled too, including one whose sbatch was in flight."""
    def handler(signum, frame):
        if job_name:
            atexit.register(subprocess.run, ["scancel", "--name", job_name, "--user", getpass.getuser()],
                            capture_output=True, timeout=60)
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
