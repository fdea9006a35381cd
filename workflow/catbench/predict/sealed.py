"""A sealed prediction (``make far-seal``: its JSON written and hashed before its target ran)
held against the prediction made now from the same rungs and config: a check scores the
sealed figures, and only while the rungs and the config still give them. Rungs edited, rerun
or added after the seal, or a config changed, would otherwise score a prediction nobody sealed."""

from __future__ import annotations

import json
import math
from pathlib import Path

from ..core.infra.config.yamlfile import read_bytes

SHOWN = 4   # differences named in the refusal; the rest counted
MAX_SEALED = 64 * 2 ** 20   # a prediction with its curves is a few MiB


def read(path) -> dict:
    """The sealed prediction's JSON (``catbench predict --out``); ValueError naming the file."""
    p = Path(path)
    if not p.exists():
        raise ValueError(f"--sealed {p}: no such file; seal the prediction first (make far-seal)")
    data = read_bytes(p, "--sealed", MAX_SEALED, "a prediction written by catbench predict --out")
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise ValueError(f"--sealed {p}: not a prediction written by catbench predict --out ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("predictions"), list) or \
            not all(isinstance(e, dict) and isinstance(e.get("key"), dict) for e in doc["predictions"]):
        raise ValueError(f"--sealed {p}: not a prediction written by catbench predict --out (its 'predictions')")
    return doc


def name(entry: dict) -> str:
    return "/".join(str(v) for v in entry["key"].values())


def by_load(doc: dict) -> dict:
    """{load's name: its prediction without its key}."""
    return {name(e): {k: v for k, v in e.items() if k != "key"} for e in doc["predictions"]}


def _short(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    text = json.dumps(v, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _walk(sealed, now, path: str, out: list) -> None:
    if isinstance(sealed, dict) and isinstance(now, dict):
        for k in dict.fromkeys([*sealed, *now]):
            sub = f"{path}.{k}" if path else str(k)
            if k not in now or k not in sealed:
                out.append(f"{sub}: sealed {_short(sealed.get(k, 'none'))}, now {_short(now.get(k, 'none'))}")
            else:
                _walk(sealed[k], now[k], sub, out)
    elif isinstance(sealed, list) and isinstance(now, list) and len(sealed) == len(now) and \
            any(isinstance(v, (dict, list)) for v in sealed):
        for i, (a, b) in enumerate(zip(sealed, now)):
            _walk(a, b, f"{path}[{i}]", out)
    elif isinstance(sealed, list) and isinstance(now, list) and len(sealed) == len(now):
        if not all(_same(a, b) for a, b in zip(sealed, now)):
            out.append(f"{path}: sealed {_short(sealed)}, now {_short(now)}")
    elif not _same(sealed, now):
        out.append(f"{path}: sealed {_short(sealed)}, now {_short(now)}")


def differences(sealed: dict, now: dict) -> list[str]:
    """What differs between the sealed prediction and the one made now (both as their JSON):
    the rows, cache and RAM asked for, a load predicted in one only, and each figure of each
    load ('disk/char28/innodb/sorted/random seconds: sealed 5.47, now 4.25')."""
    out: list[str] = []
    for k in ("rows", "pool_bytes", "ram_bytes"):
        if not _same(sealed.get(k), now.get(k)):
            out.append(f"{k}: sealed {_short(sealed.get(k))}, now {_short(now.get(k))}")
    a, b = by_load(sealed), by_load(now)
    for load in dict.fromkeys([*a, *b]):
        if load not in b:
            out.append(f"{load}: sealed, not predicted now (its rungs are not given or not read)")
        elif load not in a:
            out.append(f"{load}: predicted now, not sealed")
        else:
            found: list[str] = []
            _walk(a[load], b[load], "", found)
            out += [f"{load} {d}" for d in found]
    return out


def refusal(path, found: list) -> str:
    """The one line a check refuses with: what changed since the seal and what to do."""
    shown = "; ".join(found[:SHOWN]) + (f"; and {len(found) - SHOWN} more" if len(found) > SHOWN else "")
    return (f"--sealed {path}: the prediction made now from the rungs and the config differs from the sealed "
            f"one ({shown}): the rungs' results, their configs or the config changed since the seal; restore "
            f"them as they were sealed (a sealed prediction is not made again once its target has run)")
