"""The noise between runs: how much one run's figures move against another's on the same
machine and config, which the repetitions inside a run never see (the machine's state drifts
between runs: page cache, CPU frequency, the VM's neighbours). It has two parts:

- a **common offset**, shared by every figure of a run (the whole run a little slower):
  ``offset`` estimates it from the figures of the two runs being compared (the median of their
  log ratios, with its distribution-free interval); ``catbench compare`` reports it and judges
  every figure against it;
- the **figure's own move** beyond that offset, of variance ``between_var`` per figure family
  (table and column, e.g. ``storage.MBps``). A twin (two runs of the same config, one after the
  other: ``make aa``) measures it: for every figure, r = its log ratio less the twin's common
  offset and w = the rule's within-run variance of r; the family's between-run variance (per
  run) is max(0, mean(r^2 - w) / 2), and its degrees of freedom those of that mean (Satterthwaite:
  K (2 v / (2 v + mean w))^2 over K figures). Compare carries them into the test's degrees of
  freedom (``stats.spread``). Without a measurement, ``report.between_run_cv`` is assumed with
  ``FALLBACK_DF`` degrees of freedom: a stated guess, never a floor under a measurement.
"""

from __future__ import annotations

import json
import math
import os
import socket
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import binom

FLOOR_FILE = "noise-floor.json"
FALLBACK_DF = 4          # an assumed spread is a guess: few degrees of freedom
MIN_OFFSET_FIGURES = 6   # fewer: no common offset estimated (its interval needs 6 at 95 %)


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


@dataclass(frozen=True)
class Diff:
    """One figure of two runs: ``d`` = log of how many times slower B is than A (mean logs),
    ``w`` the within-run variance of d, known to ``df_w`` degrees of freedom."""
    family: str
    d: float
    w: float
    df_w: int


def diff(family_: str, a: tuple, b: tuple, higher_is_better: bool) -> Diff | None:
    """The Diff of a figure's repetitions in A and B; None unless both have >= 2 positive values."""
    la, lb = np.log(np.asarray(a, dtype=float)), np.log(np.asarray(b, dtype=float))
    na, nb = len(la), len(lb)
    if na < 2 or nb < 2 or np.any(~np.isfinite(la)) or np.any(~np.isfinite(lb)):
        return None
    pooled = ((na - 1) * la.var(ddof=1) + (nb - 1) * lb.var(ddof=1)) / (na + nb - 2)
    d = float(lb.mean() - la.mean())
    return Diff(family_, -d if higher_is_better else d, float(pooled * (1 / na + 1 / nb)), na + nb - 2)


@dataclass(frozen=True)
class Offset:
    """The runs' common offset: ``log`` (log of B's slowness over A's), its interval ``lo``-``hi``
    (log scale), the variance of the estimate ``var``, over ``figures`` figures."""
    log: float
    lo: float
    hi: float
    var: float
    figures: int


def offset(diffs: list, confidence: float = 0.95) -> Offset | None:
    """The median of the figures' log ratios and its order-statistic (sign-test) interval; None
    for fewer than MIN_OFFSET_FIGURES figures. The median, not the mean: figures that truly
    moved must not drag the offset the others are judged against."""
    d = np.sort([x.d for x in diffs])
    k = len(d)
    if k < MIN_OFFSET_FIGURES:
        return None
    j = max(int(binom.ppf((1 - confidence) / 2, k, 0.5)), 1)
    med = float(np.median(d))
    mad = 1.4826 * float(np.median(np.abs(d - med)))
    return Offset(med, float(d[j - 1]), float(d[k - j]), math.pi / 2 * mad * mad / k, k)


def estimate(diffs: list, runs: tuple[str, str]) -> dict:
    """The floor of a twin from its figures' Diffs (compare.diffs)."""
    off = offset(diffs)
    c = off.log if off else 0.0
    acc: dict[str, list] = {}
    for x in diffs:
        acc.setdefault(x.family, []).append(((x.d - c) ** 2 - x.w, x.w))
    fams = {}
    for f, v in sorted(acc.items()):
        excess, w = np.asarray(v).T
        var = max(0.0, float(excess.mean()) / 2)
        df = len(v) * (2 * var / (2 * var + float(w.mean()))) ** 2
        fams[f] = {"between_var": var, "df": round(max(df, 1.0), 2), "figures": len(v),
                   "between_cv": round(math.sqrt(math.expm1(var)), 4)}
    return {"machine": machine(), "runs": list(runs), "families": fams,
            "offset": None if off is None else round(math.exp(off.log), 4)}


def save(floor: dict, path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(floor, indent=1) + "\n")
    return p


def load(path, this_machine: dict | None = None) -> tuple[dict | None, str]:
    """(the floor's {family: (between_var, df)}, a note). None when there is no file or it was
    measured on another machine (the note says which)."""
    p = Path(path)
    if not p.is_file():
        return None, f"no noise floor at {p}"
    try:
        doc = json.loads(p.read_text())
        fams = {k: (float(v["between_var"]), float(v["df"])) for k, v in doc["families"].items()}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{p}: not a noise floor written by `catbench noise-floor` ({exc})") from exc
    here = this_machine or machine()
    if doc.get("machine") != here:
        return None, f"the noise floor {p} was measured on {doc.get('machine')}, not on this machine ({here})"
    return fams, f"noise floor {p} (twin {' and '.join(doc.get('runs', []))})"
