"""provenance.json: what produced a run's numbers - software versions, the server settings in
force (from the load summaries), the host (CPU, cores, memory, caches) and each storage target.

Nothing secret is written: any key that looks like a password, secret, token or credential is
dropped, wherever it occurs.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import re
import shutil
import subprocess
from importlib import metadata
from pathlib import Path

from .inputs import collect as collect_inputs

PACKAGES = ("catbench", "snakemake", "duckdb", "pyarrow", "polars", "mysql-connector-python",
            "numpy", "matplotlib", "psutil", "jsonschema", "pyyaml")
SECRET = re.compile(r"pass(word|wd)?|secret|token|credential|auth|private[_-]?key", re.I)
# differ between loads by construction; reported per load, not as "settings in force"
PER_LOAD = {"datadir", "tmpdir", "socket", "pid_file", "log_error", "general_log_file",
            "innodb_data_home_dir", "innodb_log_group_home_dir", "port"}


def scrub(value):
    """Drop every key that looks secret, recursively."""
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items() if not SECRET.search(str(k))}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def _version(pkg: str):
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


def _run(cmd: list) -> str | None:
    if not shutil.which(cmd[0]):
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return (out.stdout or out.stderr).strip() or None


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def versions(summaries=()) -> dict:
    v = {pkg: _version(pkg) for pkg in PACKAGES}
    v["python"] = platform.python_version()
    v["fio"] = _run(["fio", "--version"])
    v["kernel"] = platform.release()
    osr = _read("/etc/os-release") or ""
    m = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', osr, re.M)
    v["os"] = m.group(1) if m else platform.platform()
    short = sorted({((s.get("server") or {}).get("variables") or {}).get("version")
                    or (s.get("server") or {}).get("version") for _, s in summaries} - {None})
    full = sorted({(s.get("server") or {}).get("version") for _, s in summaries} - {None})
    v["server"] = short[0] if len(short) == 1 else (short or None)
    v["server_binary"] = full[0] if len(full) == 1 else (full or None)
    return v


def cpu() -> dict:
    info = {"model": None, "logical_cpus": os.cpu_count(), "physical_cores": None, "sockets": None,
            "threads_per_core": None, "mhz_max": None, "caches": [], "usable_cpus": None}
    try:
        info["usable_cpus"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        pass
    lscpu = _run(["lscpu"]) or ""
    fields = dict(line.split(":", 1) for line in lscpu.splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    info["model"] = fields.get("Model name")
    try:
        sockets = int(fields.get("Socket(s)", "0"))
        cores = int(fields.get("Core(s) per socket", "0"))
        info.update(sockets=sockets or None, physical_cores=(sockets * cores) or None,
                    threads_per_core=int(fields.get("Thread(s) per core", "0")) or None)
    except ValueError:
        pass
    info["mhz_max"] = fields.get("CPU max MHz")
    if not info["model"]:
        m = re.search(r"^model name\s*:\s*(.*)$", _read("/proc/cpuinfo") or "", re.M)
        info["model"] = m.group(1) if m else platform.processor() or None
    for idx in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        c = {k: _read(str(idx / k)) for k in ("level", "type", "size", "shared_cpu_list",
                                              "coherency_line_size")}
        info["caches"].append(c)
    for key in ("L1d cache", "L1i cache", "L2 cache", "L3 cache"):
        if key in fields:
            info.setdefault("cache_totals", {})[key] = fields[key]
    return info


def memory() -> dict:
    mem = {}
    for line in (_read("/proc/meminfo") or "").splitlines():
        k, _, v = line.partition(":")
        if k in ("MemTotal", "MemAvailable", "SwapTotal", "Hugepagesize"):
            parts = v.split()
            if parts:
                mem[k + "_bytes"] = int(parts[0]) * (1024 if parts[-1] == "kB" else 1)
    return mem


def server_settings(summaries) -> dict:
    """The variables the server reported (SHOW VARIABLES) during each load: those equal in every
    load as ``variables``, the rest per load; plus the settings requested in the config, and the
    RAM each load's server and its page cache had (``server.ram``: its cgroup's limit and peak)."""
    per, ram = {}, {}
    requested = {}
    for path, s in summaries:
        server = s.get("server") or {}
        name = f"{s.get('target', path.parts[-5])}/{s.get('variant', path.parts[-4])}/" \
               f"{s.get('engine') or 'innodb'}/{s.get('strategy', path.parts[-2])}"
        per[name] = dict(server.get("variables") or {})
        if server.get("ram"):
            ram[name] = {"limit_bytes": server["ram"], "peak_bytes": server.get("ram_peak")}
        for k, v in (server.get("settings") or {}).items():
            requested.setdefault(k, set()).add(str(v))
    common = {}
    if per:
        first = next(iter(per.values()))
        common = {k: v for k, v in first.items()
                  if k not in PER_LOAD and all(d.get(k) == v for d in per.values())}
    by_load = {n: {k: v for k, v in d.items() if k not in common} for n, d in per.items()}
    return {
        "variables": common,
        "variables_by_load": {n: d for n, d in by_load.items() if d},
        "requested_settings": {k: sorted(v)[0] if len(v) == 1 else sorted(v) for k, v in requested.items()},
        "binaries": sorted({(s.get("server") or {}).get("binary") for _, s in summaries} - {None}),
        "ram_by_load": ram,
    }


def collect(run_dir, inputs=None) -> dict:
    """Provenance of ``run_dir`` (results/<run>); ``inputs`` = the inputs.collect() result if at hand."""
    inp = inputs if inputs is not None else collect_inputs(run_dir)
    uname = platform.uname()
    doc = {
        "run": Path(run_dir).resolve().name,
        "results_dir": str(Path(run_dir)),
        "generated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "note": "host, cpu and memory describe the machine that built the tables; the load "
                "summaries and targets describe the benchmark runs",
        "versions": versions(inp.summaries),
        "host": {"hostname": uname.node, "machine": uname.machine, "kernel": uname.release,
                 "cpu": cpu(), "memory": memory()},
        "server": server_settings(inp.summaries),
        "targets": {name: doc for name, doc in sorted(inp.targets.items())},
        "load_storage": {f"{s.get('target')}/{s.get('variant')}/{s.get('engine') or 'innodb'}/{s.get('strategy')}":
                         s.get("storage")
                         for _, s in inp.summaries if isinstance(s.get("storage"), dict)},
        "stages_present": sorted(inp.present),
        "left_out": [p.relative_to(inp.run_dir).as_posix() for p in inp.stale],   # another config's results
        "metrics_files": len(inp.files),
    }
    if "index" in inp.own:   # index.source: file: each of the user's files (path, bytes, mtime, CRC-32, rows)
        doc["index_sources"] = inp.own["index"]
    if "patch" in inp.own:   # catalog.patch.file: each patch file (path, bytes, mtime, CRC-32, rows), the footprint
        doc["patch_files"] = inp.own["patch"]
    return scrub(doc)
