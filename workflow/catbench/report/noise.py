"""The between-run noise floor: how much one run's figures move against another's on the same
machine and config, which the repetitions inside a run never see (the machine's state drifts
between runs: page cache, CPU frequency, the VM's neighbours). ``catbench compare`` adds it to
the comparison rule's variance, so two runs of one config are "within noise" as often as the
rule promises (docs/noise.md).

A twin (two runs of the same config, one after the other: ``make aa``) measures it: for every
figure of a family (table and column, e.g. ``storage.MBps``), r = mean log B - mean log A and
w = the rule's within-run variance of r; the family's between-run variance (log scale, per
run) is max(0, mean((r^2 - w) / 2)). Compare uses, per family, the larger of that and
``report.between_run_cv``: one twin's estimate is noisy (n = 2 repetitions give w little
precision), so the config's spread is a floor under the measured one.
"""

from __future__ import annotations

import json
import math
import os
import socket
from pathlib import Path

import numpy as np

FLOOR_FILE = "noise-floor.json"


def cv_var(cv: float) -> float:
    """The log-scale variance of a spread given as a coefficient of variation."""
    return math.log1p(cv * cv)


def family(table: str, column: str) -> str:
    return f"{table}.{column}"


def machine() -> dict:
    """What identifies the machine a floor belongs to."""
    model = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"hostname": socket.gethostname(), "cpu": model, "cpus": os.cpu_count()}


def _within(a: tuple, b: tuple) -> float | None:
    la, lb = np.log(np.asarray(a)), np.log(np.asarray(b))
    na, nb = len(la), len(lb)
    if na < 2 or nb < 2 or np.any(~np.isfinite(la)) or np.any(~np.isfinite(lb)):
        return None
    pooled = ((na - 1) * la.var(ddof=1) + (nb - 1) * lb.var(ddof=1)) / (na + nb - 2)
    return float(pooled * (1 / na + 1 / nb))


def estimate(pairs, runs: tuple[str, str]) -> dict:
    """The floor of a twin from compare's figure pairs ((table, column, key, Figure A, Figure B))."""
    acc: dict[str, list] = {}
    for table, column, _key, fa, fb in pairs:
        if not (fa.values and fb.values) or min(fa.values + fb.values) <= 0:
            continue
        w = _within(fa.values, fb.values)
        if w is None:
            continue
        r = float(np.mean(np.log(fb.values)) - np.mean(np.log(fa.values)))
        acc.setdefault(family(table, column), []).append((r * r - w) / 2)
    fams = {f: {"between_var": max(0.0, float(np.mean(v))), "figures": len(v)} for f, v in sorted(acc.items())}
    for f in fams.values():
        f["between_cv"] = round(math.sqrt(math.expm1(f["between_var"])), 4)
    return {"machine": machine(), "runs": list(runs), "families": fams}


def save(floor: dict, path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(floor, indent=1) + "\n")
    return p


def load(path, this_machine: dict | None = None) -> tuple[dict | None, str]:
    """(the floor's {family: between_var}, a note). None when there is no file or it was
    measured on another machine (the note says which)."""
    p = Path(path)
    if not p.is_file():
        return None, f"no noise floor at {p}"
    try:
        doc = json.loads(p.read_text())
        fams = {k: float(v["between_var"]) for k, v in doc["families"].items()}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{p}: not a noise floor written by `catbench noise-floor` ({exc})") from exc
    here = this_machine or machine()
    if doc.get("machine") != here:
        return None, f"the noise floor {p} was measured on {doc.get('machine')}, not on this machine ({here})"
    return fams, f"noise floor {p} (twin {' and '.join(doc.get('runs', []))})"
