"""What a run will need on each storage target, said before any job starts: the index
input, and per variant x strategy the table and the peak bytes of its load, from a model
fitted to measured loads (``estimate.md``: the figures, where they came from, how to refit
them). The pre-flight (``cli/workflow/preflight.py``) prints it and refuses, while the DAG is built, a
target whose free space is smaller; ``catbench estimate`` prints and writes it by hand.

A target's need is its largest job, not the sum: measuring jobs run one at a time per
node (core/infra/jobs/requests.py) and each removes its server's data when it ends.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from ..core.index.input import MANIFEST
from ..core.index.table import VARIANTS
from ..core.infra.files import dir_bytes
from ..core.infra.targets import human, server_bytes
from ..core.server.session import load_server, restart_server, server_dir
from ..core.sky.copies import COPY_STRIDE   # objectId = local id * COPY_STRIDE + copy
from .spec import EstimateSpec
from .strategies import REGISTRY
from .strategies.base import BytesPerRow


# Each strategy's bytes per row (its module's ``bytes_per_row``) were fitted to loads of
# 1,008,800 and 5,044,000 generated rows (config/index-study.yaml's input) on ext4, MariaDB
# 10.11: the slope of bytes over rows between the two (estimate.md has every load's figures
# and how to measure them again on another filesystem or server). bulk wrote the same bytes
# as sorted at every size measured (200k, 500k, 1M rows).
MODEL: dict[tuple[str, str], BytesPerRow] = {(v, name): fit for name, s in REGISTRY.items()
                                     for v, fit in s.bytes_per_row.items()}
MARGIN = 1.10        # InnoDB grows files in steps, purge lags behind, and a fit is a fit
FIXED_BYTES = 16 << 20   # a table's first extents, above the slope (the fits' intercepts: 9-16 MB)
KEY_CHARS = {"char28": 28}   # CHAR(28) keys (core.index.table); bigint keys are decimal objectIds


def input_row_bytes(spec: EstimateSpec, variant: str) -> int:
    """An upper bound of a TSV line: key, chunkId, subChunkId, two tabs and a newline."""
    ns, nsub = spec.num_stripes, spec.num_sub_stripes
    key = KEY_CHARS.get(variant) or len(str(spec.patch_objects * COPY_STRIDE + COPY_STRIDE))
    # chunkId < 2 ns^2; subChunkId < nsub * (sub-chunks per chunk), which stays under 8 nsub^2
    return key + len(str(2 * ns * ns)) + len(str(8 * nsub * nsub)) + 3


def input_bytes(spec: EstimateSpec, variant: str, rows: int, results: Path | None = None) -> tuple[int, bool]:
    """(bytes, measured): the manifest's bytes when the input is already in ``results``."""
    manifest = results / "index" / VARIANTS[variant].folder / MANIFEST if results else None
    if manifest and manifest.is_file():
        try:
            doc = json.loads(manifest.read_text())
            return sum(f["bytes"] for f in doc["files"].values()), True
        except (OSError, ValueError, KeyError, TypeError):
            pass   # a broken manifest: the load's own check names it; estimate from the model
    return rows * input_row_bytes(spec, variant), False


def input_rows(files: list[Path], in_bytes: int) -> int:
    """Rows of a load's input: its manifest's (the workflow's inputs have one), else from the
    first file's mean line length."""
    try:
        doc = json.loads((files[0].parent / MANIFEST).read_text())
        names = {f.name for f in files}
        return sum(int(f["rows"]) for n, f in doc["files"].items() if n in names)
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        pass
    with open(files[0], "rb") as fh:
        head = fh.read(1 << 16)
    return math.ceil(in_bytes * max(1, head.count(b"\n")) / max(1, len(head)))


def load_need(variant: str, strategy: str, rows: int, in_bytes: int, settings: dict) -> dict:
    """One load's bytes on its target: table, peak (server files, margin included)."""
    fit = MODEL[(variant, strategy)]
    scratch = REGISTRY[strategy].scratch_copies * in_bytes
    server = server_bytes(settings)
    need = server + math.ceil(MARGIN * (FIXED_BYTES + fit.peak * rows + scratch))
    return {"job": f"load {variant}/{strategy}", "table_bytes": FIXED_BYTES + math.ceil(fit.table * rows),
            "scratch_bytes": scratch, "server_bytes": server, "need_bytes": need}


def _jobs(spec: EstimateSpec, inputs: dict) -> list[dict]:
    """Every job of one target whose bytes the model knows (queries and cluster jobs check
    their own room at their start, from the chunk files' real sizes)."""
    stages, rows, jobs = spec.stages, spec.rows, []
    if "fio" in stages:
        jobs.append({"job": "fio", "need_bytes": int(spec.fio_bytes * 1.05) + (16 << 20)})
    if "load_index" in stages:
        # MyRocks (load.engines: rocksdb) has no fit of its own yet: InnoDB's figures stand in
        pairs = spec.loads.pairs()
        jobs += [{**load_need(v, s, rows, inputs[v], spec.load_settings), "job": f"load {v}/{e}/{s}",
                  "server": load_server(v, e, s)} for v in spec.loads.variants for e, s in pairs]
    if "restart" in stages:
        v = spec.restart_variant
        r = load_need(v, "one-file-at-a-time", rows, inputs[v], spec.restart_settings)
        # the table and the copy a crash diagnosis keeps beside it
        jobs.append({**r, "job": f"restart {v}", "need_bytes": r["need_bytes"] + r["table_bytes"],
                     "server": restart_server(v)})
    return jobs


def _still_needed(job: dict, place) -> int:
    """What ``job`` still needs on a local target: its need less what its own server's folder
    there already holds (a killed load resumes in it; any other job's start replaces it)."""
    held = dir_bytes(server_dir(place.path, job["server"])) if job.get("server") and not place.node else 0
    return max(0, job["need_bytes"] - held)


def estimate(spec: EstimateSpec, results: Path | None = None) -> dict:
    """The run's estimate: rows, input bytes per variant, and per target its jobs' needs and
    the largest of them (``need_bytes``)."""
    rows = spec.rows
    variants = sorted({*spec.loads.variants, spec.restart_variant, *VARIANTS})
    measured = {v: input_bytes(spec, v, rows, results) for v in variants}
    inputs = {v: b for v, (b, _) in measured.items()}
    jobs = _jobs(spec, inputs)
    targets = {}
    for t, place in spec.targets.items():
        need = {j["job"]: _still_needed(j, place) for j in jobs}
        largest = max(need, key=need.get, default=None)
        targets[t] = {"path": str(place.path), "node": place.node, "need_bytes": need.get(largest, 0),
                      "largest_job": largest}
    return {"rows": rows, "input_bytes": inputs, "input_measured": {v: m for v, (_, m) in measured.items()},
            "results_need_bytes": sum(inputs[v] for v in VARIANTS), "jobs": jobs, "targets": targets,
            "model": "workflow/catbench/load/estimate.md"}


def with_rungs(est: dict, rungs: dict[str, dict]) -> dict:
    """The run's estimate with the predict stage's rungs (``{name: their estimate}``) beside its
    jobs: a rung loads on its ladder's targets after the run's own jobs, one job at a time, so a
    target's peak is the larger of the two (the rung's named as its largest job)."""
    targets = {t: dict(v) for t, v in est["targets"].items()}
    for name, r in rungs.items():
        for t, need in r["targets"].items():
            if t in targets and need["need_bytes"] > targets[t]["need_bytes"]:
                targets[t].update(need_bytes=need["need_bytes"], largest_job=f"{name}'s {need['largest_job']}")
    return {**est, "targets": targets}


def lines(est: dict, jobs: bool = True) -> list[str]:
    """The estimate for a person: one line for the input, one per target, one per job."""
    src = "measured" if all(est["input_measured"].values()) else "estimated"
    out = [f"estimate: {est['rows']:,} index rows; input "
           + " + ".join(f"{human(est['input_bytes'][v])} ({v})" for v in VARIANTS) + f", {src}"]
    for name, t in est["targets"].items():
        out.append(f"estimate: target {name} ({t['path']}) needs {human(t['need_bytes'])} at its peak "
                   f"(largest job: {t['largest_job']})")
    for j in est["jobs"] if jobs else []:
        table = f", table {human(j['table_bytes'])}" if "table_bytes" in j else ""
        out.append(f"estimate:   {j['job']}: {human(j['need_bytes'])}{table}")
    return out


# Strategies whose rate holds as the table grows: a short load tells their time.
STEADY = tuple(name for name, s in REGISTRY.items() if s.steady)


def _duration(s: float) -> str:
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min" if s < 7200 else f"{s / 3600:.1f} h"


def time_lines(times: list[dict]) -> list[str]:
    return [f"estimate: time on {t['target']}: {t['job']}: {t['rows_per_s']:,.0f} rows/s over "
            f"{t['calibration_rows']:,} rows ({t['calibration_files']} files) -> about "
            f"{_duration(t['seconds'])} for all rows" for t in times if t["seconds"]]


def fit_tables(summaries: list) -> dict:
    """Table bytes per row per variant x engine x strategy from load summaries (summary.json
    of several sizes): the least-squares slope of table_bytes over rows, to refit MODEL."""
    points: dict = {}
    for p in summaries:
        s = json.loads(Path(p).read_text())
        if s.get("table_bytes") and s.get("rows"):
            key = (s["variant"], s["engine"], s["strategy"])
            points.setdefault(key, []).append((s["rows"], s["table_bytes"]))
    out = {}
    for key, pts in sorted(points.items()):
        n = len(pts)
        mx, my = sum(r for r, _ in pts) / n, sum(b for _, b in pts) / n
        sxx = sum((r - mx) ** 2 for r, _ in pts)
        slope = sum((r - mx) * (b - my) for r, b in pts) / sxx if sxx else my / mx
        out["/".join(key)] = {"loads": n, "bytes_per_row": round(slope, 1)}
    return out
