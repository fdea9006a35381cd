"""The cross-check (``catbench queries-check``): every query's answer must agree across
all targets and engines that ran the suite, and all must have run with the same
parameters. Equal digests agree; different digests are compared with the suite's
tolerance (``suite.compare``).
"""

from __future__ import annotations

import json
from pathlib import Path

from .suite import QUERY_NAMES, Answer, QueryError, compare


def _read_run(d: Path) -> tuple[str, dict, dict[str, Answer]]:
    try:
        s = json.loads((d / "summary.json").read_text())
        a = json.loads((d / "answers.json").read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise QueryError(f"{d}: no readable summary.json/answers.json ({exc}); run `catbench queries` first")
    engine = s.get("query_engine", s.get("engine"))     # "engine" in a summary from before
    return f"{s['target']}/{engine}", s, {q: Answer.from_json(v) for q, v in a.items()}


def _query_order(q: str):
    return (QUERY_NAMES.index(q) if q in QUERY_NAMES else 99, q)


def _check_query(q: str, runs: list, errors: list[str]) -> dict:
    """One query's row of the check: every run's digest and answer, and whether they agree."""
    row = {"digests": {}, "answers": {}, "agree": True}
    base = next(((n, a[q]) for n, _, a in runs if q in a), None)
    for n, s, a in runs:
        if q not in a:
            row["agree"] = False
            errors.append(f"query {q}: {n} has no answer")
            continue
        row["digests"][n] = s["digests"][q]
        row["answers"][n] = s["answers"][q]
        if s["digests"][q] != runs[0][1]["digests"].get(q):
            msg = compare(q, base[1], a[q], base[0], n)
            if msg:
                row["agree"] = False
                errors.append(msg)
    return row


def check_answers(inputs, out=None) -> dict:
    """Compare every query's answer across the given output directories (targets and engines).

    Equal digests agree; different digests are compared with the tolerance (a double that
    rounds differently at the 9th digit is not a mismatch). Raises QueryError naming the
    query and both answers on a real mismatch; ``out`` (JSON) is written either way.
    """
    runs = [_read_run(Path(d)) for d in inputs]
    if len(runs) < 1:
        raise QueryError("queries-check needs at least one input directory")
    errors: list[str] = []
    ref_name, ref, _ = runs[0]
    for name, s, _ in runs[1:]:
        if s["params"] != ref["params"]:
            errors.append(f"{name} ran with other parameters than {ref_name}: {s['params']} vs {ref['params']}")
    queries = sorted({q for _, _, a in runs for q in a}, key=_query_order)
    table = {q: _check_query(q, runs, errors) for q in queries}
    result = {"ok": not errors, "inputs": [str(Path(d)) for d in inputs], "queries": table, "errors": errors}
    if out:
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    if errors:
        raise QueryError("query answers disagree:\n  " + "\n  ".join(errors))
    return result
