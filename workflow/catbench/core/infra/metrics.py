"""Per-job metrics (rows, wall time, peak RSS), progress lines with rate and ETA, and the
stage summary that turns job metrics into rows/s per stage and end to end."""

from __future__ import annotations

import json
import logging
import re
import resource
import time
from pathlib import Path

from .files import atomic_path

log = logging.getLogger("catbench")


def peak_rss_mb() -> float:
    """Peak resident set size of this process (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# A load's results folder of the layout before storage engines (load/<target>/<variant>/<strategy>/),
# refused wherever results are read, naming the version that reads it.
# A prediction's figure is a hit where predicted ÷ measured lies within this (every far check's rule).
PREDICTION_BAND = (0.67, 1.5)
OLD_LOAD_LAYOUT = ("written before storage engines (load/<target>/<variant>/<strategy>/): catbench before "
                   "commit 3df751e reads it (git checkout 3df751e~1); or run its loads again")

class Progress:
    """Log 'done/total, rows/s, ETA' at most every ``every`` seconds."""

    def __init__(self, what: str, total: int, every: float = 5.0):
        self.what, self.total, self.every = what, total, every
        self.t0 = self.last = time.monotonic()

    def __call__(self, done: int, total: int | None = None, rows: int | None = None):
        now = time.monotonic()
        total = total or self.total
        if now - self.last < self.every and done < total:
            return
        self.last = now
        el = max(now - self.t0, 1e-9)
        eta = el / done * (total - done) if done else float("nan")
        rate = f", {rows / el:,.0f} rows/s" if rows is not None else ""
        log.info("%s: %d/%d done%s, elapsed %.1fs, ETA %.1fs", self.what, done, total, rate, el, eta)


class JobTimer:
    """Context manager writing {stage, rows, seconds, start, end, peak_rss_mb, ...}."""

    def __init__(self, stage: str, path):
        self.stage, self.path, self.extra = stage, Path(path), {}

    def __enter__(self):
        self.start = time.time()
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            return False
        end = time.time()
        rec = {"stage": self.stage, "start": self.start, "end": end,
               "seconds": end - self.start, "peak_rss_mb": round(peak_rss_mb(), 1), **self.extra}
        if "rows" in rec and rec["seconds"] > 0:
            rec["rows_per_s"] = rec["rows"] / rec["seconds"]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(self.path) as tmp:
            tmp.write_text(json.dumps(rec, indent=1) + "\n")
        log.info("%s done: %s", self.stage, json.dumps({k: v for k, v in rec.items()
                                                          if k not in ("start", "end")}))
        return False


def summarise(job_files, out_path, rows_stage: str = "catalog", extra: dict | None = None) -> dict:
    """Stage summary from job metrics: wall time (first start to last end), rows/s,
    peak RSS; end to end = catalog rows over the wall time of all stages together; ``extra``
    (more top-level keys) written with it."""
    jobs = []
    for p in job_files:
        try:
            jobs.append(json.loads(Path(p).read_text()))
        except (OSError, json.JSONDecodeError) as e:
            raise ValueError(f"{p}: unreadable job metrics ({e}); re-run the job that writes it")
    stages = {}
    for j in jobs:
        s = stages.setdefault(j["stage"], {"jobs": 0, "rows": 0, "busy_seconds": 0.0,
                                           "start": j["start"], "end": j["end"],
                                           "peak_rss_mb": 0.0})
        s["jobs"] += 1
        s["rows"] += j.get("rows", 0)
        s["busy_seconds"] += j["seconds"]
        s["start"], s["end"] = min(s["start"], j["start"]), max(s["end"], j["end"])
        s["peak_rss_mb"] = max(s["peak_rss_mb"], j["peak_rss_mb"])
    for s in stages.values():
        s["wall_seconds"] = s["end"] - s["start"]
        s["rows_per_s"] = s["rows"] / s["wall_seconds"] if s["wall_seconds"] > 0 else None
    rows = stages.get(rows_stage, {}).get("rows", 0)
    wall = max(j["end"] for j in jobs) - min(j["start"] for j in jobs)
    out = {"stages": stages, "end_to_end": {
        "rows": rows, "wall_seconds": wall, "rows_per_s": rows / wall if wall > 0 else None,
        "peak_rss_mb": max(j["peak_rss_mb"] for j in jobs)}, **(extra or {})}
    with atomic_path(out_path) as tmp:
        Path(tmp).write_text(json.dumps(out, indent=1) + "\n")
    return out


def setup_logging(level=logging.INFO):
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


# a failed job's logs: the rule's own, then under Slurm the job's Slurm log ("log: a, b (check …)")
_FAILED = re.compile(r"^Error in rule (\S+):\n(?:.*\n)*?\s+log: (.+?)(?: \(check log file\(s\)[^\n]*)?$", re.M)


def failed_jobs(snakemake_log: str) -> list[str]:
    """For the console when a run fails: each failed job's rule, its own first error line
    (not Snakemake's long command line) and the log path, from Snakemake's own log."""
    out = []
    for rule, paths in dict.fromkeys(_FAILED.findall(snakemake_log)):
        path = paths.split(", ")[0]
        first = _first_error(Path(path))
        out.append(f"{rule} failed: {first}  (log: {path})")
    return out


def _first_error(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log written)"
    for pattern in (r"^catbench [\w-]+: (error|interrupted)", r" ERROR ", r"Error|error"):
        hit = next((ln for ln in lines if re.search(pattern, ln)), None)
        if hit:
            return _short(hit.strip())
    return _short(lines[-1].strip()) if lines else "(empty log)"


def _short(line: str, most: int = 600) -> str:
    """A long line keeps its start and its end (where a message says what to do)."""
    return line if len(line) <= most else f"{line[:most // 2 - 3]} … {line[-(most // 2 - 3):]}"
