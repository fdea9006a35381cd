"""Low-level storage tests with fio (sequential 1 MiB and random 4 KiB, read and write; random
16 KiB pages at queue depth 1, the cost of one page miss)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import time
from pathlib import Path

from ..core.infra.jobs.repeat import Repeats
from ..core.infra.resources import resources_dir
from ..core.infra.targets import check_target, parse_size
from .spec import FioSpec

log = logging.getLogger(__name__)

BUFFERED = ("cache-read",)   # always through the page cache, whatever the target accepts
DATA_FILE = "catbench-fio.dat"


class FioError(RuntimeError):
    """fio is missing or a job failed."""


def find_fio() -> str:
    found = shutil.which("fio")
    if not found:
        raise FioError("fio not found in PATH; install it (apt-get install fio, or "
                       "conda install -c conda-forge fio)")
    return found


def direct_io_supported(directory) -> bool:
    """True if the filesystem accepts O_DIRECT (ramfs, older tmpfs and some FUSE refuse it)."""
    probe = Path(directory) / ".catbench-odirect-probe"
    try:
        fd = os.open(probe, os.O_CREAT | os.O_WRONLY | os.O_NOFOLLOW | getattr(os, "O_DIRECT", 0), 0o600)
    except OSError:
        return False
    finally:
        # ramfs creates the file, then refuses the open with EINVAL
        if "fd" in locals():
            os.close(fd)
        probe.unlink(missing_ok=True)
    return hasattr(os, "O_DIRECT")


def _refused_direct(text: str) -> bool:
    t = text.lower()
    return "o_direct" in t or "direct=1" in t or "invalid argument" in t


def _load_json(path: Path) -> dict:
    text = path.read_text(errors="replace")
    # fio may print notes before the JSON document
    start = text.find("{")
    if start < 0:
        raise FioError(f"no JSON in {path}")
    return json.loads(text[start:])


def _row(target: str, test: str, doc: dict, direct: bool, numjobs: int, size: int, runtime_s: float,
         json_path: Path) -> dict:
    job = doc["jobs"][0]
    if job.get("error"):
        raise FioError(f"fio test {test} on target {target} failed with error {job['error']} (see {json_path})")
    side = job["write"] if "write" in test else job["read"]
    pct = (side.get("clat_ns") or {}).get("percentile") or {}
    p50, p99 = pct.get("50.000000"), pct.get("99.000000")
    return {
        "target": target, "test": test,
        "MBps": side["bw_bytes"] / 1e6,
        "iops": side["iops"],
        "clat_p50_us": p50 / 1e3 if p50 is not None else None,
        "clat_p99_us": p99 / 1e3 if p99 is not None else None,
        "clat_mean_us": (side.get("clat_ns") or {}).get("mean", 0) / 1e3 or None,
        "direct": direct and test not in BUFFERED,
        "numjobs": numjobs if test.startswith("rand") else 1,
        "size_bytes": size, "runtime_s": runtime_s,
        "json": str(json_path),
    }


def _schedule(tests, repeats: Repeats, seen: dict):
    """(repetition, test) in rounds: every test that ``repeats`` still wants another run of."""
    t0, rep = time.monotonic(), 0
    while True:
        todo = [t for t in tests if repeats.more(seen[t], time.monotonic() - t0)]
        if not todo:
            return
        for t in todo:
            yield rep, t
        rep += 1


def run_fio(target_name: str, directory, spec: FioSpec, out_dir, fio_binary: str | None = None) -> list[dict]:
    """Run the job files in ``resources/fio`` on ``directory``, every test as often as
    ``spec.repeats`` asks (all tests once, then again; core/infra/jobs/repeat.py: more runs of a
    test until its MB/s are as precise as asked); raw JSON goes to ``out_dir``
    (``<test>.json`` for the first repetition, ``<test>.rep<N>.json`` after).

    Rows: target, test, repetition, MBps (10^6 B/s), iops, clat_p50_us, clat_p99_us, direct, ...
    """
    fio = fio_binary or find_fio()
    tests, runtime_s, numjobs, repeats = spec.tests, spec.runtime_s, spec.numjobs, spec.repeats
    size_b = parse_size(spec.size)
    directory = Path(directory).absolute()
    if ":" in str(directory):
        raise FioError(f"target {target_name}: fio cannot use a directory with ':' in it ({directory})")
    check_target(target_name, directory, need_bytes=int(size_b * 1.05) + (16 << 20))
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    direct = direct_io_supported(directory)
    if not direct:
        log.warning("target %s: %s refuses O_DIRECT; fio runs buffered (direct=false)", target_name, directory)
    rows = []
    try:
        seen: dict = {t: [] for t in tests}
        for rep, test in _schedule(tests, repeats, seen):
            job_file = resources_dir() / "fio" / f"{test}.fio"
            json_path = out_dir / (f"{test}.json" if rep == 0 else f"{test}.rep{rep}.json")
            while True:
                env = dict(os.environ, DIRECTORY=str(directory), SIZE=str(size_b),
                           RUNTIME=f"{max(1, round(runtime_s * 1000))}ms", NUMJOBS=str(int(numjobs)),
                           DIRECT="1" if direct else "0")
                proc = subprocess.run([fio, "--output-format=json", f"--output={json_path}", str(job_file)],
                                      env=env, capture_output=True, text=True)
                text = proc.stderr + proc.stdout
                if proc.returncode != 0 and direct and _refused_direct(text + json_path.read_text(errors="replace")
                                                                      if json_path.exists() else text):
                    log.warning("target %s: fio refused direct=1 (%s); retrying buffered",
                                target_name, text.strip().splitlines()[-1:] or "")
                    direct = False
                    continue
                if proc.returncode != 0:
                    raise FioError(f"fio {test} on target {target_name} ({directory}) failed "
                                   f"(exit {proc.returncode}): {text.strip()[-2000:]}")
                break
            row = _row(target_name, test, _load_json(json_path), direct, numjobs, size_b, runtime_s, json_path)
            row["repetition"] = rep
            log.info("target %s: %s (repetition %d) %.1f MB/s %.0f IOPS p99 %.0f us", target_name, test, rep,
                     row["MBps"], row["iops"], row["clat_p99_us"] or -1)
            rows.append(row)
            seen[test].append(row["MBps"])
    finally:
        for leftover in directory.glob(DATA_FILE + "*"):
            leftover.unlink()
    # adaptive repeats' pilot set n and is not judged (core/infra/jobs/repeat.py)
    first = {t: repeats.min_n if len(repeats.kept(v)) < len(v) else 0 for t, v in seen.items()}
    return [r for r in rows if r["repetition"] >= first[r["test"]]]
