"""An SST's copy rate while it copies: the joiner's staging folder (``<datadir>/.sst``, where
``mbstream -x`` writes what the donor's backup streams) sampled every 10 ms. mariabackup's
stream spends a part of its time not copying (its start, a pause before the redo, the wait
for its log-copying thread's next one-second tick at the end), so a rung's stream of 100–200 MB
takes ~2 s whatever its bytes; the rate while bytes arrive is what a larger stream pays a byte
while it copies (a 2 GB stream also stood idle longer than its rungs: predict/restarts/model.md).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from ...core.infra.files import dir_bytes

INTERVAL_S = 0.01


class StagingSampler(threading.Thread):
    """(time.time(), bytes staged) every :data:`INTERVAL_S` until halted."""

    def __init__(self, folder: Path):
        super().__init__(name="catbench-sst-staging", daemon=True)
        self.folder, self.samples, self.halt = folder, [], threading.Event()

    def run(self):
        while not self.halt.is_set():
            self.samples.append((time.time(), dir_bytes(self.folder)))
            self.halt.wait(INTERVAL_S)


def copy_rate(samples: list, start: float | None, end: float | None) -> dict | None:
    """Bytes staged between ``start`` and ``end`` (the donor's stream), the seconds in which
    they grew (intervals with no growth left out) and their rate; None where nothing grew."""
    if start is None or end is None:
        return None
    pts = [(t, b) for t, b in samples if start <= t <= end]
    grew = [(t1 - t0, b1 - b0) for (t0, b0), (t1, b1) in zip(pts, pts[1:]) if b1 > b0]
    busy, moved = sum(d for d, _ in grew), sum(b for _, b in grew)
    if not grew or busy <= 0:
        return None
    return {"bytes": moved, "busy_s": round(busy, 6), "MBps": moved / 1e6 / busy, "samples": len(pts)}
