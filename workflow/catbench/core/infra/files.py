"""File formats of the data products: Parquet and LOAD DATA-ready TSV, written
atomically (a temp name renamed at the end) so a failed job leaves nothing that
looks complete. The user's own catalog files are sources.py's."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .addrspace import polars
from .errors import TargetError

# Random doubles do not dictionary-encode; trying costs 10x the write time.
log = logging.getLogger(__name__)

PARQUET_OPTIONS = {"use_dictionary": False, "compression": "snappy"}


def dir_bytes(path) -> int:
    """Bytes of the files under ``path`` (0 when it does not exist)."""
    total = 0
    for root, _dirs, names in os.walk(path):
        for n in names:
            try:
                total += os.lstat(os.path.join(root, n)).st_size
            except OSError:
                pass
    return total


_TEMP = re.compile(r"\..+\.tmp-(\d+)")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temps(directory) -> int:
    """Remove the temporary files and folders (``atomic_path``'s ``.<name>.tmp-<pid>``) that a
    killed job left in ``directory``: those whose process is gone (a running job's are kept).
    Returns how many."""
    gone = 0
    for p in Path(directory).glob(".*.tmp-*"):
        m = _TEMP.fullmatch(p.name)
        if m and not _alive(int(m.group(1))):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
            gone += 1
    if gone:
        log.warning("%s: removed %d temporary files of killed jobs", directory, gone)
    return gone


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary sibling path; rename it to ``path`` only on success."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


# Bytes one write() hands the kernel at most. The page cache takes folios as large as a
# write (a 4 MiB write: 2 MiB folios, whole free blocks), and a VM that reports free memory
# to its host in 2 MiB blocks (virtio-balloon free page reporting) gets each such block back
# from the host page by page: 1 GiB to ext4 took 2.5 sys-s in 4 MiB writes, 1.5 in 1 MiB
# and 0.2 in 64-128 KiB ones (medians; prepare/partition.md has the table).
WRITE_BYTES = 1 << 17


def write_all(fd: int, data) -> int:
    """Write ``data`` (bytes-like) to the open file ``fd`` in writes of at most WRITE_BYTES."""
    view = memoryview(data).cast("B")
    for a in range(0, len(view), WRITE_BYTES):
        piece = view[a:a + WRITE_BYTES]
        while len(piece):
            piece = piece[os.write(fd, piece):]
    return len(view)


def write_parquet(table: pa.Table, path, **options):
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, **{**PARQUET_OPTIONS, **options})


def write_tsv(table: pa.Table, path):
    """Tab-separated, no header, ``\\N`` for NULL: what ``LOAD DATA INFILE`` reads.
    Floats are written in their shortest exact form (polars' writer, 1.5-3x faster
    than Arrow's at formatting floats, which dominates partitioning time)."""
    pl = polars()  # here: only TSV writers pay its 0.25 s import

    with atomic_path(path) as tmp:
        pl.from_arrow(table).write_csv(tmp, separator="\t", include_header=False,
                                       null_value="\\N", quote_style="never")


@contextlib.contextmanager
def parquet_errors(path):
    """A truncated or foreign Parquet file fails naming the path and what to do."""
    try:
        yield
    except (pa.ArrowException, OSError) as e:
        raise ValueError(f"{path}: not a readable Parquet file ({e}); re-run the stage "
                         f"that writes it") from e


def read_parquet(path, columns=None) -> pa.Table:
    """Read a Parquet file (ParquetFile, not pq.read_table: that imports pyarrow.dataset,
    0.4 s a job)."""
    f = open_parquet(path)
    with parquet_errors(path):
        return f.read(columns=columns)


def open_parquet(path) -> pq.ParquetFile:
    with parquet_errors(path):
        return pq.ParquetFile(path)


@contextlib.contextmanager
def staged_output(out_dir):
    """A stage's result directory, written as a hidden ``.<name>.partial-*`` sibling and
    renamed to ``out_dir`` only when the body succeeds. The partial folder is locked (flock)
    while its job lives, before anything else is touched; what an earlier, killed run left
    (unlocked partials, and the previous results, which a re-run replaces) is then removed, so
    after any failure nothing that looks complete remains. A partial another live job holds
    is never removed: TargetError, and this job leaves everything as it was."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.partial-", dir=out_dir.parent))
    held = None
    try:
        held = _flock_dir(work)
        for stale in out_dir.parent.glob(f".{out_dir.name}.partial-*"):
            if stale != work and not _remove_unheld(stale):
                raise TargetError(f"{out_dir} is being written by another live job ({stale} is held); "
                                  f"it was left untouched: wait for that job, or give this run another name")
        if out_dir.exists():
            log.info("removing the previous results in %s", out_dir)
            shutil.rmtree(out_dir)
        yield work
        work.chmod(0o755)  # mkdtemp's 0700 would make these results unlike every other
        work.rename(out_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if held is not None:
            os.close(held)


def _flock_dir(path: Path) -> int:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def _remove_unheld(stale: Path) -> bool:
    """Remove a partial folder no live job holds; False (kept) when one does."""
    try:
        fd = _flock_dir(stale)
    except BlockingIOError:
        return False
    except OSError:       # gone meanwhile, or not a folder: nothing of a live job
        fd = None
    try:
        log.warning("removing %s left by an interrupted run", stale)
        if stale.is_dir() and not stale.is_symlink():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)
    finally:
        if fd is not None:
            os.close(fd)
    return True
