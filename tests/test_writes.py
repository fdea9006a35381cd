"""How catbench's own writers hand bytes to the kernel (core/infra/files.py)."""

import numpy as np
from support.faultkit import dead_pid


def test_text_reaches_the_kernel_in_small_writes(tmp_path, monkeypatch):
    """A chunk's text of several MB goes out in writes of at most WRITE_BYTES (a larger
    write makes the page cache take 2 MiB folios), short writes resumed, bytes unchanged."""
    from catbench.core.infra import files

    sizes, real = [], files.os.write

    def short_write(fd, data):  # the kernel may write less than asked: take half
        sizes.append(len(data))
        return real(fd, bytes(data[:max(1, len(data) // 2)]))

    monkeypatch.setattr(files.os, "write", short_write)
    data = np.random.default_rng(0).integers(0, 256, 3 * files.WRITE_BYTES + 12345, np.uint8).tobytes()
    path = tmp_path / "chunk.tsv"
    with open(path, "wb", buffering=0) as f:
        assert files.write_all(f.fileno(), data[:1000]) == 1000
        assert files.write_all(f.fileno(), data) == len(data)
    assert path.read_bytes() == data[:1000] + data
    assert max(sizes) <= files.WRITE_BYTES and len(sizes) > 2 * len(data) // files.WRITE_BYTES


def test_a_reduce_keeps_a_bounded_number_of_files_open_and_their_bytes_whole(tmp_path, monkeypatch):
    """Text for more chunks than OPEN_FILES, interleaved: each file gets its bytes in order
    (closed ones reopened to append), no more than OPEN_FILES are open at once, none after
    finish, and the reduce's own temporary folder is gone."""
    import os
    from catbench.prepare import chunkfiles

    monkeypatch.setattr(chunkfiles, "OPEN_FILES", 3)
    files = chunkfiles.ChunkFiles(tmp_path / "chunks", ("tsv",))
    before = len(os.listdir("/proc/self/fd"))
    want = {}
    for rnd in range(4):
        for cid in range(8):
            files.add("Object", cid, 1, None)
            text = f"{cid}\t{rnd}\n".encode() * (cid + 1)
            files.add_text([("Object", cid, text)])
            want[cid] = want.get(cid, b"") + text
            assert len(files.open) <= 3 and len(os.listdir("/proc/self/fd")) <= before + 3
    manifest = files.finish(None)
    assert len(os.listdir("/proc/self/fd")) <= before - len(files.open) and not files.open
    for cid, text in want.items():
        assert (tmp_path / "chunks" / "Object" / f"chunk_{cid}.tsv").read_bytes() == text
    assert {r["chunkId"]: r["tsv_bytes"] for r in manifest} == {c: len(t) for c, t in want.items()}
    assert not list((tmp_path / "chunks").rglob("*.tmp-*"))


def test_a_killed_reduces_folder_is_removed_by_the_next_and_a_running_ones_kept(tmp_path):
    import os
    from catbench.core.infra.files import remove_stale_temps

    d = tmp_path / "Object"
    dead = dead_pid()
    for pid in (dead, os.getpid()):
        (d / f".reduce.tmp-{pid}").mkdir(parents=True)
        (d / f".reduce.tmp-{pid}" / "chunk_1.tsv").write_text("partial")
    assert remove_stale_temps(d) == 1
    assert not (d / f".reduce.tmp-{dead}").exists() and (d / f".reduce.tmp-{os.getpid()}" / "chunk_1.tsv").exists()
