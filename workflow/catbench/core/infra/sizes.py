"""Sizes as a config writes them (``256M``, ``1.5G``) and as a person reads them: one owner,
imported by the config's checks and by everything that reads a target."""

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
