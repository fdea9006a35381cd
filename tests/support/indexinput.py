"""Secondary-index input files for tests: `key \t chunkId \t subChunkId`, keys in random
order across and within files, like the real input."""

from __future__ import annotations

import random
from pathlib import Path


def make_key(variant: str, i: int) -> str:
    return f"{i:028d}" if variant == "char28" else str(1_000_000_000_000 + i)


def write_files(d: Path, variant: str, nfiles: int, rows: int, seed: int = 1) -> list[Path]:
    """Index input with keys in random order across and within files (like the real input)."""
    rng = random.Random(seed)
    keys = list(range(nfiles * rows))
    rng.shuffle(keys)
    d.mkdir(parents=True, exist_ok=True)
    files = []
    for f in range(nfiles):
        p = d / f"part-{f:05d}.tsv"
        with open(p, "w") as out:
            for k in keys[f * rows:(f + 1) * rows]:
                out.write(f"{make_key(variant, k)}\t{rng.randrange(9000)}\t{rng.randrange(600)}\n")
        files.append(p)
    return files
