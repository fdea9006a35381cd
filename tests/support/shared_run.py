"""One tiny run (every stage of tests/configs/tiny.yaml on one target) that the whole test
session shares: the first worker to ask builds it under a file lock, under umask 000 (what a
careless shell gives: MariaDB ignores a world-writable my.cnf), its servers' listeners watched
while they run; the others wait and read it. Read-only for the tests: a test that changes it
copies it first (faultkit.copy_workdir)."""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from pathlib import Path

import psutil
from catbench.restart.cluster.session import listening_sockets, socket_inodes

from .faultkit import ENV, fingerprint, snakemake_cmd, tiny_config
from .servers import kill_servers, server_procs
from . import preloaded

# set by conftest.py before the workers start; removed by it once they have all finished
SHARED_ENV = "CATBENCH_TEST_SHARED"
UMASK = 0o000


class ListenWatch:
    """Polls every server under ``under`` during a run: its TCP listeners and unix sockets."""

    def __init__(self, under: Path):
        self.under, self.seen, self._stop = under, {}, threading.Event()
        self._t = threading.Thread(target=self._poll, daemon=True)

    def _poll(self):
        while not self._stop.is_set():
            # the namespace's TCP listeners once a poll, each server's by its sockets' inodes:
            # psutil's per-process inet table reads /proc/net/tcp whole (~10 ms) for each
            listeners = listening_sockets()
            for p in server_procs(self.under):
                try:
                    cmd = p.cmdline()
                    if "--bootstrap" in cmd:
                        continue
                    inet = {listeners[i] for i in socket_inodes(p.pid) if i in listeners}
                    unix = {c.laddr for c in p.net_connections("unix") if c.laddr}
                except (psutil.Error, OSError):
                    continue
                rec = self.seen.setdefault(p.pid, {"cmdline": cmd, "inet": set(), "unix": set()})
                rec["inet"] |= inet
                rec["unix"] |= unix
            time.sleep(0.2)     # a server of the tiny run lives seconds

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


def _seen_json(seen: dict) -> dict:
    return {str(pid): {"cmdline": r["cmdline"], "inet": sorted(r["inet"]), "unix": sorted(r["unix"])}
            for pid, r in seen.items()}


def _seen_of(doc: dict) -> dict:
    return {int(pid): {"cmdline": r["cmdline"], "inet": {tuple(a) for a in r["inet"]}, "unix": set(r["unix"])}
            for pid, r in doc.items()}


def shared_tiny_run() -> dict:
    """{"wd", "disk", "seen" (pid -> cmdline, inet, unix), "fp" (faultkit.fingerprint)} of the
    session's tiny run, built on first use."""
    root = Path(os.environ[SHARED_ENV])
    wd, disk, done = root / "tiny" / "wd", root / "tiny" / "disk", root / "tiny" / "done.json"
    with open(root / "tiny.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            disk.mkdir(parents=True, exist_ok=True)
            tiny_config(wd, {"disk": disk})
            try:
                with ListenWatch(disk) as watch:
                    r = preloaded.run(snakemake_cmd(wd), env=ENV, capture_output=True, text=True,
                                       timeout=600, umask=UMASK)
                assert r.returncode == 0, f"the shared tiny run failed:\n{r.stdout[-3000:]}\n{r.stderr[-5000:]}"
            finally:
                kill_servers(disk)
            doc = {"seen": _seen_json(watch.seen), "fp": fingerprint(wd)}
            tmp = done.with_suffix(".part")
            tmp.write_text(json.dumps(doc))
            tmp.rename(done)
        doc = json.loads(done.read_text())
    return {"wd": wd, "disk": disk, "seen": _seen_of(doc["seen"]), "fp": doc["fp"]}
