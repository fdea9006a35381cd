"""Raw input files loaded by N connections at once (strategies ``parallel``,
``deferred-pk`` and each batch of ``trans-partitioned``): every connection validates one
file (``scan_file``) and loads it, then takes the next; the first failure stops all."""

from __future__ import annotations

import concurrent.futures as cf
import queue
import threading
import time
from pathlib import Path

from ..core.index.input import scan_file
from ..core.index.table import IndexDestination, load_file
from .job import LoadProgress, trace_row


def load_files_parallel(server, into: IndexDestination, files: list[Path], connections: int, *,
                        progress: LoadProgress | None = None, stop=None,
                        record=None) -> tuple[list[dict], list]:
    """Validate and load ``files`` (of ``into.files``) with ``connections`` connections (one file per
    connection at a time). ``stop()`` is asked before each file (a time limit);
    ``record(cursor, info, start, end)`` commits with each file (the resumable loads'
    ledger). Returns (trace rows in no particular order, FileInfo per loaded file)."""
    variant, trans_id = into.variant, into.trans_id
    progress = progress or LoadProgress(f"loading {len(files)} files", len(files))
    todo: queue.Queue = queue.Queue()
    for i, f in enumerate(files):
        todo.put((i, f))
    trace, infos = [], [None] * len(files)
    failed = threading.Event()
    lock = threading.Lock()

    def worker():
        conn = server.connect()
        try:
            while not failed.is_set():
                if stop is not None and stop():
                    return
                try:
                    i, f = todo.get_nowait()
                except queue.Empty:
                    return
                info = scan_file(f, variant)
                start = time.time()
                rec = None if record is None else (lambda c, n, info=info, start=start:
                                                   record(c, info, start, time.time()))
                rows = load_file(conn, into, f, info.rows, record=rec)
                end = time.time()
                with lock:
                    infos[i] = info
                    trace.append(trace_row(f, rows, info.bytes, start, end, trans_id=trans_id))
                progress.add(rows)
        except BaseException:
            failed.set()
            raise
        finally:
            conn.close()

    n = max(1, min(connections, len(files)))
    with cf.ThreadPoolExecutor(n, thread_name_prefix="catbench-load") as ex:
        futs = [ex.submit(worker) for _ in range(n)]
        errors = [f.exception() for f in futs]
    errors = [e for e in errors if e is not None]
    if errors:
        raise errors[0]
    return trace, [i for i in infos if i is not None]
