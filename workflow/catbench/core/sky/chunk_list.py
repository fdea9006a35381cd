"""The partition's chunk list (``results/<run>/chunks/chunks.tsv``, written by ``catbench
chunk-list``): one strict reader for every stage that takes it. An empty count is 0 (the list's
SUM of a table a chunk does not hold: an overlap-only chunk has no Object row)."""

from __future__ import annotations

from dataclasses import dataclass

COUNTS = {"object_rows": "objects", "source_rows": "sources", "overlap_rows": "overlap"}


class ChunkListError(ValueError):
    pass


@dataclass(frozen=True)
class ChunkRows:
    chunk_id: int
    objects: int
    sources: int | None      # None: the list has no such column
    overlap: int | None


def parse_chunk_list(text: str, where: str, need: tuple[str, ...] = ("chunkId", "object_rows")) -> list[ChunkRows]:
    """Every chunk of a chunk list's ``text``; ChunkListError naming ``where`` and the line of a
    column in ``need`` missing, a count that is not a whole number ≥ 0, or a chunk given twice."""
    lines = text.splitlines()
    head = lines[0].split("\t") if lines else []
    missing = [c for c in need if c not in head]
    if missing:
        raise ChunkListError(f"{where} line 1 lacks {' or '.join(missing)}")
    col = {c: head.index(c) for c in ("chunkId", *COUNTS) if c in head}
    out, seen = [], set()
    for n, line in enumerate(lines[1:], 2):
        cells = line.split("\t")
        try:
            vals = {c: int(cells[i]) if cells[i].strip() or c == "chunkId" else 0 for c, i in col.items()}
        except (ValueError, IndexError):
            raise ChunkListError(f"{where} line {n}: {line[:80]!r} is not a chunk's whole counts") from None
        if any(v < 0 for c, v in vals.items() if c != "chunkId"):
            raise ChunkListError(f"{where} line {n}: a count below 0")
        if vals["chunkId"] in seen:
            raise ChunkListError(f"{where} line {n}: chunk {vals['chunkId']} is given twice")
        seen.add(vals["chunkId"])
        out.append(ChunkRows(vals["chunkId"], vals["object_rows"],
                             *(vals.get(c) for c in ("source_rows", "overlap_rows"))))
    return out
