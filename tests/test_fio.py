"""fio storage tests on small real directories (a quarter of a second per test)."""

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from catbench.core.infra.jobs.repeat import Repeats
from catbench.fio.bench import DATA_FILE, direct_io_supported, run_fio
from catbench.fio.spec import FioSpec
from support.servers import mounted

pytestmark = pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed (apt-get install fio)")
COLUMNS = {"target", "test", "MBps", "iops", "clat_p50_us", "clat_p99_us", "direct"}


@pytest.mark.slow
def test_fio_on_disk(tmp):
    rows = run_fio("disk", tmp / "target", FioSpec("8M", 0.25, 2), tmp / "out")
    assert [r["test"] for r in rows] == ["seq-write", "seq-read", "rand-read", "rand-write", "page-read", "page-write",
                                         "cache-read"]
    for r in rows:
        assert COLUMNS <= set(r) and r["target"] == "disk"
        assert r["MBps"] > 0 and r["iops"] > 0 and r["clat_p99_us"] >= r["clat_p50_us"] > 0
        # runtime_s is kept to the millisecond, not rounded up to whole seconds; the end's fsync may add
        # seconds on a busy disk, so the job file's figure is checked, not the wall time
        doc = json.loads(Path(r["json"]).read_text())
        assert doc["global options"]["runtime"] == "250ms" and doc["jobs"][0]["job_runtime"] >= 200, r["test"]
    assert {r["numjobs"] for r in rows if r["test"].startswith("rand")} == {2}
    # a page miss's cost: one job, 16 KiB, its mean latency (what predict reads)
    page = {r["test"]: r for r in rows if r["test"].startswith("page")}
    assert {r["numjobs"] for r in page.values()} == {1} and all(r["clat_mean_us"] > 0 for r in page.values())
    assert json.loads(Path(page["page-read"]["json"]).read_text())["jobs"][0]["job options"]["bs"] == "16k"
    # a page read back from RAM: buffered whatever the target, one job of 16 KiB, the file read in first
    cache = next(r for r in rows if r["test"] == "cache-read")
    doc = json.loads(Path(cache["json"]).read_text())
    assert cache["direct"] is False and doc["jobs"][0]["job options"]["bs"] == "16k"
    assert doc["global options"]["pre_read"] == "1" and doc["global options"]["direct"] == "0"
    assert not list((tmp / "target").iterdir()), "fio test files left behind"


def test_fio_falls_back_to_buffered_without_o_direct(tmp):
    # ramfs refuses O_DIRECT (EINVAL), like tmpfs before Linux 6.6
    with mounted("ramfs", "mode=755") as d:
        rows = run_fio("ram", d, FioSpec("4M", 0.25, 2, ("seq-write", "rand-read")), tmp / "out")
        assert [r["direct"] for r in rows] == [False, False]
        assert all(r["MBps"] > 0 for r in rows)
        assert not list(d.iterdir())


def test_fio_on_dev_shm_records_direct_honestly(tmp):
    # tmpfs accepts O_DIRECT since Linux 6.6, so "direct" must follow what the kernel does
    d = Path(tempfile.mkdtemp(prefix="cbf-", dir="/dev/shm"))
    try:
        rows = run_fio("shm", d, FioSpec("4M", 0.25, 2, ("seq-write",)), tmp / "out")
        assert rows[0]["direct"] is direct_io_supported(d)
        assert rows[0]["MBps"] > 0
        assert not (d / DATA_FILE).exists()
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.slow
def test_fio_repetitions_run_every_test_again(tmp):
    rows = run_fio("disk", tmp / "target", FioSpec("4M", 0.25, 1, ("seq-write", "rand-read"), Repeats(2, 2, 0.0, None)),
                   tmp / "out")
    assert [(r["repetition"], r["test"]) for r in rows] == [
        (0, "seq-write"), (0, "rand-read"), (1, "seq-write"), (1, "rand-read")]
    assert sorted(p.name for p in (tmp / "out").iterdir()) == [
        "rand-read.json", "rand-read.rep1.json", "seq-write.json", "seq-write.rep1.json"]


@pytest.mark.slow
def test_a_test_repeats_as_its_pilot_asks_up_to_the_maximum(tmp_path):
    """fio.max_repetitions: the first fio.repetitions runs are a pilot whose spread sets how
    many follow (at least fio.repetitions, at most the maximum in all); the runs after the
    pilot are the figure's rows (n per figure in the tables)."""
    rows = run_fio("t", tmp_path / "a", FioSpec("8M", 1, 2, ("seq-read",), Repeats(2, 5, 1e-9, None)),
                   tmp_path / "ja")             # never precise enough: the maximum
    assert [r["repetition"] for r in rows] == [2, 3, 4]
    rows = run_fio("t", tmp_path / "b", FioSpec("8M", 1, 2, ("seq-read",), Repeats(2, 5, 1e9, None)),
                   tmp_path / "jb")              # precise at once: the minimum after the pilot
    assert [r["repetition"] for r in rows] == [2, 3]
