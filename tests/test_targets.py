"""Storage target checks: they fail before any work starts and name the target."""

import psutil
import pytest
from catbench.core.infra.targets import (
    TargetError,
    check_target,
    describe_target,
    device_for,
    parse_size,
)
from support.servers import mounted


def test_missing_but_creatable(tmp):
    target = tmp / "a" / "b"
    info = check_target("nvme", target, need_bytes=1 << 20)
    assert target.is_dir()
    assert info["fstype"] and info["total_bytes"] > 0 and info["free_bytes"] > 0
    assert not list(target.iterdir())  # the write test leaves nothing behind


def test_file_is_not_a_target(tmp):
    f = tmp / "afile"
    f.write_text("x")
    with pytest.raises(TargetError, match="'ssd'.*not a directory"):
        check_target("ssd", f)


def test_read_only_filesystem():
    # root ignores chmod 0500, so a really read-only mount is used
    with mounted("tmpfs", "ro,size=1m") as d:
        with pytest.raises(TargetError, match="'raid6'.*not writable"):
            check_target("raid6", d)
        with pytest.raises(TargetError, match="'raid6'.*cannot be created"):
            check_target("raid6", d / "sub")


def test_not_enough_free_space():
    with mounted("tmpfs", "size=1m") as d:
        with pytest.raises(TargetError, match="'tiny'.*needs 10.0 MiB"):
            check_target("tiny", d, need_bytes=10 << 20)
        check_target("tiny", d, need_bytes=100 << 10)


def test_describe_tmpfs():
    info = describe_target("/dev/shm")
    assert info["fstype"] == "tmpfs" and info["device"] is None
    assert info["mount_point"] == "/dev/shm"


def test_device_for_block_device_or_none(tmp):
    dev = device_for(tmp)
    info = describe_target(tmp)
    assert info["device"] == dev
    if dev is not None:  # usable with psutil, as the sampler needs
        assert dev in psutil.disk_io_counters(perdisk=True)
    else:
        assert info["fstype"] in ("tmpfs", "overlay", "nfs", "nfs4", "fuse", "zfs", "btrfs", "9p", "virtiofs")


@pytest.mark.parametrize("text,value", [(4096, 4096), ("4096", 4096), ("256M", 256 << 20),
                                        ("1.5G", 3 << 29), ("2GiB", 2 << 30), ("1k", 1024)])
def test_parse_size(text, value):
    assert parse_size(text) == value


def test_parse_size_rejects_garbage():
    with pytest.raises(ValueError, match="256M"):
        parse_size("lots")
