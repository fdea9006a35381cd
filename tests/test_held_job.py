"""A job without a server held as a server is (server.page_cache): the job and what it starts in
one memory cgroup whose clean page cache stays at the hold while they read far more; back in its
own cgroup after, nothing of the cgroup left."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from catbench.core.infra.config import ConfigError, validate

from support.servers import cgroup_paths, no_memory_cgroup

MiB = 2 ** 20
HELD = 2 * MiB

JOB = """
import json, os, subprocess, sys
from pathlib import Path
from catbench.core.server.memory import held_here
from catbench.query.recorder import evict
big, small = sys.argv[1:3]
mine = lambda: [l for l in Path("/proc/self/cgroup").read_text().splitlines()
                if "memory" in l.split(":")[1] or l.startswith("0::")]
before = mine()
with held_here("heldjob", int(sys.argv[3]), "big") as held:
    evict([big, small])
    inside = mine()
    with open(big, "rb") as f:
        while f.read(1 << 20):
            pass
    held.phase("small")
    subprocess.run(["cat", small], stdout=subprocess.DEVNULL, check=True)   # a child's reads count too
print(json.dumps({"before": before, "inside": inside, "after": mine(), "peaks": held.peaks}))
"""


def _resident(path: Path) -> int:
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)],
                         capture_output=True, text=True, check=True).stdout
    return int(out.split()[0])


@pytest.mark.skipif(bool(no_memory_cgroup()), reason=no_memory_cgroup() or "-")
def test_a_held_job_and_its_child_read_past_their_page_cache_and_leave_no_cgroup():
    folder = Path(tempfile.mkdtemp(dir="/var/tmp"))     # a disk: tmpfs pages are not page cache
    try:
        big, small = folder / "big", folder / "small"
        big.write_bytes(os.urandom(160 * MiB))
        small.write_bytes(os.urandom(64 * MiB))
        r = subprocess.run([sys.executable, "-c", JOB, str(big), str(small), str(HELD)], capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-3000:]
        seen = json.loads(r.stdout)
        assert seen["inside"] != seen["before"] and seen["after"] == seen["before"]
        from catbench.core.server.memory import JOB_HOLD_MARGIN
        # the hold steps every 10 ms: a read may run a step's worth past it before the next
        bound = HELD + JOB_HOLD_MARGIN + 16 * MiB
        # each phase's peak apart: the big file's reads, then the child's
        assert list(seen["peaks"]) == ["big", "small"] and all(0 < p <= bound for p in seen["peaks"].values()), seen
        assert _resident(big) + _resident(small) <= bound, (_resident(big), _resident(small))
        assert not cgroup_paths("heldjob")
    finally:
        shutil.rmtree(folder)


def test_a_slurm_clusters_workers_cannot_be_held_and_the_keys_are_named():
    with pytest.raises(ConfigError, match=r"server\.page_cache.*queries\.lsdb\.cluster"):
        validate({"run": "x", "server": {"page_cache": "64M"},
                  "queries": {"engines": ["duckdb", "lsdb"], "lsdb": {"cluster": "slurm"}}})
    validate({"run": "x", "server": {"page_cache": "64M"}, "queries": {"engines": ["duckdb", "lsdb"]}})


@pytest.mark.skipif(bool(no_memory_cgroup()), reason=no_memory_cgroup() or "-")
def test_a_holder_that_died_fails_the_job_naming_the_key_and_leaves_no_cgroup():
    from catbench.core.server.memory import MemoryLimitError, held_here
    with pytest.raises(MemoryLimitError, match=r"server\.page_cache.*holder.*'queries'"):
        with held_here("heldjob-gone", HELD, "build") as held:
            held._holder.kill()
            held._holder.wait()
            held.phase("queries")
    with pytest.raises(MemoryLimitError, match=r"server\.page_cache.*holder.*exited \(-9\) while the job ran"):
        with held_here("heldjob-gone", HELD, "queries") as held:
            held._holder.kill()
            held._holder.wait()
    assert not cgroup_paths("heldjob-gone")
