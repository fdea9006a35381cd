"""Checks of a message, log or report by the values it must carry, not by its sentences:
wording may improve, the key, file, figure and unit must stay."""

from __future__ import annotations


def line_with(text: str, *parts: str) -> str:
    """The first line of ``text`` that holds every one of ``parts`` (so the figures are checked
    together, on one line, whatever words join them); an AssertionError naming them if none does."""
    for line in str(text).splitlines():
        if all(p in line for p in parts):
            return line
    raise AssertionError(f"no line holds all of {parts!r} in:\n{str(text)[-3000:]}")
