"""How catbench's own writers hand bytes to the kernel (core/infra/files.py)."""

import numpy as np


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
    assert files.append_bytes(path, data[:1000]) == 1000
    assert files.append_bytes(path, data) == len(data)
    assert path.read_bytes() == data[:1000] + data
    assert max(sizes) <= files.WRITE_BYTES and len(sizes) > 2 * len(data) // files.WRITE_BYTES
