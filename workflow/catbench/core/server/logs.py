"""What a failed server's logs say: their last lines, and whether the failure was a full disk."""

from __future__ import annotations

import os
import re
from pathlib import Path

LOG_TAIL_LINES = 30


def log_tail(path: Path, n: int = LOG_TAIL_LINES) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"(no log at {path})"
    return "\n".join(lines[-n:])


# errno 28; a handler's 135 (no more room in a record file): what a DDL on a full disk says
_NO_SPACE = re.compile(r"No space left on device|(?:errno|error|errcode|OS error):? ?(?:28|135)\b|disk is full", re.I)


def out_of_space(name: str, where: Path, *logs: Path, said: str = "", who: str = "the server") -> str | None:
    """The first line of a failure that is really a full disk, or None: from the server's
    ``logs`` and the failed statement's own message (``said``)."""
    text = "\n".join([said, *(log_tail(p, 200) for p in logs)])
    if not _NO_SPACE.search(text):
        return None
    probe = next((a for a in [where, *where.parents] if a.exists()), where)
    st = os.statvfs(probe)
    return (f"target {name}: out of space on {probe} ({st.f_bavail * st.f_frsize / 2**20:.0f} MiB free): "
            f"{who} could not write there (errno 28); free space, use a bigger disk or "
            f"lower the scale or server settings (redo log, buffer pool) in the config")
