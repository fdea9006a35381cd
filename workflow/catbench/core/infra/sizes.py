"""Sizes as a config writes them (``256M``, ``1.5G``) and as a person reads them, and a
duration as a person reads it: one owner, imported by the config's checks and by everything
that reads a target or words a time."""

from __future__ import annotations

import re

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}


def parse_size(text) -> int:
    """Bytes from ``4096``, ``"256M"``, ``"1.5G"``, ``"2GiB"`` (binary units)."""
    if isinstance(text, (int, float)):
        return int(text)
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([KMGTP]?)(?:i?B)?\s*", str(text), re.I)
    if not m:
        raise ValueError(f"cannot read size {text!r}; use a number of bytes or e.g. 256M, 4G")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def human(n: float | None) -> str:
    if n is None:
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return str(n)


def duration(sec: float | None) -> str:
    """'0.1 s', '45.2 s', '12.5 min', '9.2 h': a restart's phase or total at a glance."""
    if not isinstance(sec, (int, float)):
        return "–"
    for div, unit, cut in ((3600, "h", 7200), (60, "min", 120)):
        if sec >= cut:
            return f"{sec / div:,.1f} {unit}"
    return f"{sec:,.1f} s"
