"""The words a figure and a verdict of the comparison rule (``stats``) are said in: a figure with
its interval (or why its repetitions cannot bound one), a ratio with its p-value, and the
sentences the findings, the summary and ``catbench compare`` are made of."""

from __future__ import annotations

import math
import re

from ..core.infra.jobs.repeat import MAX_SUGGEST_N, UNBOUNDED
from .stats import MAX_SEE_N, MDR_SAID, MIN_N, SEE, Figure, Verdict, ci_note, holds_under_holm


def fmt(v, unit: str = "") -> str:
    """A figure with 3 significant digits (thousands separated), and its unit."""
    if v is None or (isinstance(v, float) and (math.isnan(v) or math.isinf(v))):
        return "–"
    a = abs(v)
    if a >= 1000:
        s = f"{v:,.0f}"
    elif a >= 100:
        s = f"{v:.0f}"
    elif a >= 10:
        s = f"{v:.1f}"
    elif a >= 1:
        s = f"{v:.2f}"
    elif a == 0:
        s = "0"
    else:
        s = f"{v:.3g}"
    return f"{s} {unit}".rstrip() if unit and unit not in ("x", "%") else s + unit


def num(v, digits=3) -> str:
    """A table cell: a count with thousands separators, a float to ``digits`` significant figures, – for none."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if v == 0:
            return "0"
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.{digits}g}" if abs(v) < 1 else f"{v:,.{max(digits - len(str(int(abs(v)))), 0)}f}"
    return str(v)


def interval_text(f: Figure, unit: str = "", bold: bool = False) -> str:
    """'1.32 s [1.20–1.41, n=3]' (the interval of the typical value), or '1.32 s [single run]';
    ``bold`` marks the median up as **Markdown**."""
    if f.n == 0 or f.median is None:
        return "not measured"
    med = f"**{fmt(f.median, unit)}**" if bold else fmt(f.median, unit)
    if not f.has_interval:
        note = ci_note(f.values) if len(f.values) == f.n else None
        return f"{med} [single run]" if f.n == 1 else f"{med} ({note})" if note else f"{med} [n={f.n}]"
    return f"{med} [{fmt(f.lo)}–{fmt(f.hi)}, n={f.n}]"


def _too_few(v: Verdict) -> str:
    return f"too few repetitions to tell (n={v.a.n} vs {v.b.n}; the rule needs n ≥ {MIN_N} each)"


def _untested(v: Verdict) -> str:
    """Why the rule gave no test: too few repetitions, no spread, or a value <= 0."""
    if v.kind == "nonpositive":
        return f"not judged: a value ≤ 0 among the repetitions (n={v.a.n} vs {v.b.n}), so no ratio to test"
    if v.kind == "flat":
        if v.a.values and set(v.a.values) == set(v.b.values):
            return f"identical: every repetition of both gave {fmt(v.a.median)} (n={v.a.n} vs {v.b.n}), nothing to test"
        return (f"not judged: no spread within either figure (n={v.a.n} vs {v.b.n}), "
                f"so no noise to test {fmt(v.ratio, 'x')} against")
    return _too_few(v)


def reach(v: Verdict) -> str:
    """What a verdict that is no finding could have seen: 'could not see a difference under
    1.8x; 6 repetitions each would see 1.3x'."""
    if v.mdr is None:
        return ""
    text = (f"could not see a difference under {fmt(v.mdr, 'x')}" if v.mdr < MDR_SAID else
            f"could not see even a {fmt(MDR_SAID, 'x')} difference")   # n=2 with a wide spread: no useful bound
    if v.mdr <= SEE:
        return text
    n = v.n_see
    if n is None:
        why = "the spread between runs alone hides it" if v.between.var > 0 else f"over {MAX_SEE_N} needed"
        return f"{text}; no number of repetitions would see {fmt(SEE, 'x')} ({why})"
    return f"{text}; {n} repetitions each would see {fmt(SEE, 'x')}"


def p_text(v: Verdict) -> str:
    return f"p={v.p:.2g}" + (", holds under Holm's correction" if holds_under_holm(v) else "")


def _ratio_text(v: Verdict, word: str) -> str:
    """'2.00x [1.71–2.34] faster' (the ratio turned to >= 1, with its interval)."""
    r, lo, hi = (v.ratio, v.lo, v.hi) if v.kind == "better" else (
        1 / v.ratio, 1 / v.hi if v.hi else None, 1 / v.lo if v.lo else None)
    ci = f" [{fmt(lo)}–{fmt(hi)}]" if lo is not None and hi is not None else ""
    return f"{fmt(r, 'x')}{ci} {word}"


def _counts(v: Verdict, note: str = "") -> str:
    """The repetitions behind a verdict within noise (with its p-value) or below the threshold,
    and what they could have seen: 'n=3 vs 3, p=0.21; ...'."""
    p = f", p={v.p:.2g}" if v.kind == "noise" else ""
    return f"n={v.a.n} vs {v.b.n}{p}{note}; {reach(v)}"


def versus(b_name: str, v: Verdict, *, unit: str = "", better: str = "faster", worse: str = "slower") -> str:
    """The rule's answer for A against ``b_name``, as the second half of a sentence about A."""
    fb = f"{b_name}, {interval_text(v.b, unit)}"
    if v.kind == "single":
        return f"{fmt(v.ratio, 'x')} the speed of {fb} — {_too_few(v)}"
    if not v.tested:
        return f"against {fb} {_untested(v)}"
    if v.kind in ("noise", "small"):
        what, note = ("noise", "") if v.kind == "noise" else (f"{v.threshold:.0%}", ": below the practical threshold")
        return f"within {what} of {fb} ({_counts(v, note)})"
    return f"{_ratio_text(v, better if v.kind == 'better' else worse)} than {fb} ({p_text(v)})"


def sentence(a_name: str, b_name: str, v: Verdict, *, unit: str = "", better: str = "faster",
             worse: str = "slower") -> str:
    """The rule's answer in words, with both figures and their intervals."""
    both = f"{interval_text(v.a, unit)} vs {interval_text(v.b, unit)}"
    if not v.tested:
        return f"{a_name} vs {b_name}: {both} — {_untested(v)}, not a finding."
    if v.kind in ("noise", "small"):
        same = ("are within noise" if v.kind == "noise"
                else f"differ by less than the {v.threshold:.0%} practical threshold")
        return f"{a_name} and {b_name} {same} ({_counts(v)}): {both}."
    return (f"{a_name} is {_ratio_text(v, better if v.kind == 'better' else worse)} than {b_name} "
            f"({p_text(v)}): {both}.")


def short(v: Verdict, a_name: str = "A", b_name: str = "B", better: str = "better",
          worse: str = "worse") -> str:
    """The rule's answer in a few words (for ``catbench compare``)."""
    if not v.tested:
        return f"not a finding: {_untested(v)}"
    if v.kind == "noise":
        return f"within noise (n={v.a.n} vs {v.b.n}, p={v.p:.2g}; {reach(v)})"
    if v.kind == "small":
        return f"below the {v.threshold:.0%} threshold (n={v.a.n} vs {v.b.n}; {reach(v)})"
    name = a_name if v.kind == "better" else b_name
    return f"{name} {_ratio_text(v, better)} ({p_text(v)})"


# A figure's own note when its repetitions cannot bound it (core/infra/jobs/repeat.py ``unbounded``),
# as ``interval_text`` writes it after the median: "(n = 2 cannot bound this (its interval spans
# 40x); n = 5 would give ±38 %)".
_UNBOUNDED = re.compile(rf" \(n = (\d+) {UNBOUNDED}(?: \(its interval spans [^()]*\))?(?:; ([^()]*))?\)")
_WOULD = re.compile(r"n = (\d+) would give ±(\d+) %")


def _shorten(text: str, cures: list) -> str:
    """``text`` with each unbounded figure's note cut to ", n = N"; what each note said would
    bound it added to ``cures``."""
    def cut(m: re.Match) -> str:
        cures.append(m.group(2) or "")
        return f", n = {m.group(1)}"
    return _UNBOUNDED.sub(cut, text)


def _cure(cures: list) -> str:
    """One sentence for a section's unbounded figures: why they show only their n, and the
    repetitions that would bound them."""
    asks = sorted({int(n) for c in cures for n, _ in _WOULD.findall(c)})
    would = (f"; n = {asks[0]}" + (f" to {asks[-1]}" if len(asks) > 1 else "") + " would" if asks else "")
    never = (f"; for some, no n up to {MAX_SUGGEST_N} would at their spread"
             if any("no n up to" in c for c in cures) else "")
    return (f"Figures shown as “value, n = N” ({len(cures)} in this section) have no interval: their "
            f"repetitions cannot bound one at their spread{would}{never} (each figure's own reason in its "
            "table's `…ci_note…` column).")


def unbounded_once(blocks: list) -> list:
    """The report's blocks with every "n = 2 cannot bound this; …" note cut to its n, and the
    reason and the cure said once at the end of each section (an ``h2`` and what follows it)."""
    out, cures = [], []

    def close():
        if cures:
            out.append(("p", _cure(cures)))
            cures.clear()

    for block in blocks:
        kind = block[0]
        if kind == "h2":
            close()
            out.append(block)
        elif kind in ("p", "h3"):
            out.append((kind, _shorten(block[1], cures)))
        elif kind == "ul":
            out.append((kind, [_shorten(item, cures) for item in block[1]]))
        elif kind == "table":
            _, caption, header, rows = block
            out.append((kind, _shorten(caption, cures), header,
                        [[_shorten(c, cures) if isinstance(c, str) else c for c in r] for r in rows]))
        else:
            out.append(block)
    close()
    return out


_NOTE = re.compile(rf"^n = \d+ {UNBOUNDED}(?: \(its interval (spans [^()]*)\))?(?:; (.*))?$")


def note_cell(note):
    """A ``ci_note_…`` table cell without its "n = N cannot bound this" (the table's section
    says it once): the interval's span where one was drawn, and what would bound it."""
    m = _NOTE.match(note) if isinstance(note, str) else None
    if not m:
        return note
    return "; ".join(p for p in (m.group(1), m.group(2)) if p) or "unbounded"
