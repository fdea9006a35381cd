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
  offset and w = the rule's within-run variance of r; the between-run variance (per run) is
  max(0, mean(r^2 - w) / 2) over a family's figures (over all figures for a family of fewer than
  OWN_FAMILY_FIGURES), and its degrees of freedom those of that mean (Satterthwaite:
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

from ..core.infra.jobs.repeat import binom_ppf
from .stats import log_diff

FLOOR_FILE = "noise-floor.json"
FALLBACK_DF = 4          # an assumed spread is a guess: few degrees of freedom
MIN_OFFSET_FIGURES = 6   # fewer: no common offset estimated (its interval needs 6 at 95 %)
OWN_FAMILY_FIGURES = 30  # a smaller family takes the between-run variance of all figures
ALL = "all"              # the floor's entry over all figures: for families it does not name


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
    with np.errstate(divide="ignore", invalid="ignore"):
        la, lb = np.log(np.asarray(a, dtype=float)), np.log(np.asarray(b, dtype=float))
    if len(la) < 2 or len(lb) < 2 or np.any(~np.isfinite(la)) or np.any(~np.isfinite(lb)):
        return None
    d, w, df_w, _ = log_diff(lb, la)
    return Diff(family_, float(-d if higher_is_better else d), float(w), df_w)


@dataclass(frozen=True)
class Offset:
    """The runs' common offset: ``log`` (log of B's slowness over A's), its interval ``lo``-``hi``
    (log scale), the variance of the estimate ``var``, over ``figures`` figures."""
    log: float
    lo: float
    hi: float
    var: float
    figures: int


def offset_of(d, confidence: float = 0.95):
    """(median, interval low, high, variance of the median) of log ratios d over the last axis:
    the order-statistic (sign-test) interval, and pi/2 x (1.4826 MAD)^2 / k. The median, not
    the mean: figures that truly moved must not drag the offset the others are judged against."""
    d = np.sort(d, axis=-1)
    k = d.shape[-1]
    j = max(binom_ppf((1 - confidence) / 2, k, 0.5), 1)
    med = np.median(d, axis=-1)
    mad = 1.4826 * np.median(np.abs(d - med[..., None]), axis=-1)
    return med, d[..., j - 1], d[..., k - j], math.pi / 2 * mad * mad / k


def offset(diffs: list, confidence: float = 0.95) -> Offset | None:
    """The runs' common offset from their figures' Diffs; None for fewer than MIN_OFFSET_FIGURES."""
    if len(diffs) < MIN_OFFSET_FIGURES:
        return None
    med, lo, hi, var = (float(x) for x in offset_of(np.array([x.d for x in diffs]), confidence))
    return Offset(med, lo, hi, var, len(diffs))


def between_of(r, w):
    """(between-run variance per run, its degrees of freedom) from residual log ratios r (the
    common offset taken off) and their within-run variances w, over the last axis:
    max(0, mean(r^2 - w) / 2) and Satterthwaite's K (2 v / (2 v + mean w))^2, at least 1."""
    k = r.shape[-1]
    var = np.maximum(0.0, (r * r - w).mean(axis=-1) / 2)
    return var, np.maximum(k * (2 * var / (2 * var + w.mean(axis=-1))) ** 2, 1.0)


def estimate(diffs: list, runs: tuple[str, str]) -> dict:
    """The floor of a twin from its figures' Diffs (compare.diffs): per family, its own
    between-run variance when it has at least OWN_FAMILY_FIGURES figures, else that of all
    figures (a small family's own estimate has too few degrees of freedom to be worth its noise)."""
    off = offset(diffs)
    c = off.log if off else 0.0
    acc: dict[str, list] = {}
    for x in diffs:
        acc.setdefault(x.family, []).append((x.d - c, x.w))
        acc.setdefault(ALL, []).append((x.d - c, x.w))
    fams = {}
    for f, v in sorted(acc.items()):
        r, w = np.asarray(v).T
        var, df = (float(x) for x in between_of(r, w))
        fams[f] = {"between_var": var, "df": round(df, 2), "figures": len(v), "own": True}
    for f, e in fams.items():
        if f != ALL and e["figures"] < OWN_FAMILY_FIGURES:
            e.update(between_var=fams[ALL]["between_var"], df=fams[ALL]["df"], own=False)
    for e in fams.values():
        e["between_cv"] = round(math.sqrt(math.expm1(e["between_var"])), 4)
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
        dfs = [v.get("df") for v in doc["families"].values()]
        fams = {k: (float(v["between_var"]), float(v.get("df") or 0)) for k, v in doc["families"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{p}: not a noise floor written by `catbench noise-floor` ({exc})") from exc
    if None in dfs:
        raise ValueError(f"{p}: its families have no degrees of freedom; measure the floor again (make aa)")
    if not fams:
        return None, f"the noise floor {p} measured no figure"
    here = this_machine or machine()
    if doc.get("machine") != here:
        return None, f"the noise floor {p} was measured on {doc.get('machine')}, not on this machine ({here})"
    return fams, f"noise floor {p} (twin {' and '.join(doc.get('runs', []))})"
