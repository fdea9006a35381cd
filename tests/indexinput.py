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


def servers_under(d: Path) -> list[int]:
    """Pids of the mariadbd processes whose command line names ``d``."""
    import psutil
    return [p.info["pid"] for p in psutil.process_iter(["pid", "cmdline"])
            if str(d) in " ".join(p.info["cmdline"] or []) and "mariadbd" in " ".join(p.info["cmdline"] or [])]


def scratch_root(prefix: str):
    """A fixture body: a scratch dir under /tmp (short socket paths) that no server of the
    test may outlive; leftovers are killed and fail the test."""
    import shutil
    import tempfile
    import time

    import psutil
    d = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    yield d
    deadline = time.time() + 30
    while time.time() < deadline and servers_under(d):
        time.sleep(0.2)
    left = servers_under(d)
    for pid in left:
        try:
            psutil.Process(pid).kill()
        except psutil.Error:
            pass
    shutil.rmtree(d, ignore_errors=True)
    assert not left, f"mariadbd left running: {left}"
