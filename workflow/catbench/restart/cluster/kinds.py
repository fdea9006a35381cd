"""The restart kinds: one node of a loaded cluster taken down and brought back while the
workload runs, its return followed in its error log (and the donor's), in its wsrep
status and by a client that waits for the first correct answer.

* ``node-restart-ist``: clean shutdown (SIGTERM), start; the node asks for the write sets
  it missed (IST from a donor's gcache).
* ``node-restart-sst``: clean shutdown, datadir wiped, start: a full snapshot (SST, by
  ``cluster.sst_method``), then an IST of what was written meanwhile.
* ``node-crash``: SIGKILL under load; with ``cluster.recover_position`` the node's InnoDB
  recovers in a ``--wsrep-recover`` pass that yields its position (as systemd's
  galera_recovery does) and it rejoins by IST; without it, by SST. Which one is recorded.

The node restarted is the last one; node 1 takes the inserts (and is never restarted).
"""

from __future__ import annotations

import logging
import re
import threading
import time

import mysql.connector

from .. import errorlog
from ..probe import Prober
from . import galera_log
from .node import state_parts, wsrep_status
from .options import ClusterError
from .rows import build
from .session import OwnListeners, joining
from .stream import StagingSampler
from .workload import Workload

log = logging.getLogger(__name__)

_SYNCED = re.compile(r"WSREP: Shifting JOINED -> SYNCED")
_SST_RECEIVED = re.compile(r"WSREP: SST received")


class StatusSampler(threading.Thread):
    """The insert node's replication counters every 0.2 s (write-set sizes for the IST
    bytes, flow-control pauses), and every listening socket of the nodes and their SST
    helpers (which must all be on 127.0.0.1)."""

    def __init__(self, crun):
        super().__init__(name="catbench-wsrep-status", daemon=True)
        self.crun, self.samples, self.halt = crun, [], threading.Event()
        self.listeners: set = set()
        self._own = OwnListeners()

    def run(self):
        conn = None
        while not self.halt.is_set():
            self.listeners |= self._own.sample()
            try:
                conn = conn or self.crun.cluster.conn(self.crun.insert_node)
                st = wsrep_status(conn)
                self.samples.append((time.time(), {k: st.get(k) for k in (
                    "wsrep_last_committed", "wsrep_replicated", "wsrep_replicated_bytes",
                    "wsrep_flow_control_paused_ns", "wsrep_local_send_queue")}))
            except mysql.connector.Error:
                conn = None
            self.halt.wait(0.2)
        if conn is not None:
            conn.close()


def _wait_synced(run, node, watcher, timeout: float) -> dict:
    """Until the joiner's log says Synced (and its status agrees); notes the node's state
    bytes the moment an SST is received."""
    deadline = time.monotonic() + timeout
    seen_i, out = 0, {"sst_state_parts": None, "t_synced_status": None}
    while time.monotonic() < deadline:
        lines = watcher.lines[seen_i:]
        seen_i += len(lines)
        for _t, line in lines:
            if out["sst_state_parts"] is None and _SST_RECEIVED.search(line):
                out["sst_state_parts"] = state_parts(node.srv.datadir)
            if _SYNCED.search(line):
                st = run.cluster.wait_synced(node, timeout=max(1.0, deadline - time.monotonic()))
                out["t_synced_status"] = time.time()
                out["status"] = st
                return out
        if not node.srv.running:
            raise ClusterError(f"target {run.cluster.target}: {node.name} exited while rejoining; last lines "
                               f"of {node.srv.error_log}:\n{errorlog.tail(node.srv.error_log, 40)}")
        time.sleep(0.01)
    raise ClusterError(f"target {run.cluster.target}: {node.name} not Synced within {timeout:.0f} s of its "
                       f"start; last lines of {node.srv.error_log}:\n{errorlog.tail(node.srv.error_log, 40)}")


def _take_down(run, kind: str, node, obs: dict):
    """Stop (or kill) the node, wipe or recover as the kind says; fills ``obs``."""
    obs["t_down"] = time.time()
    if kind == "node-crash":
        node.srv.kill()
    else:
        node.srv.stop(timeout=120)
    obs["t_exit"] = time.time()
    if kind == "node-restart-sst":
        obs["wipe_s"] = node.wipe()
    time.sleep(run.spec.load.down_s)  # the write sets the node misses pile up meanwhile
    position = None
    if kind == "node-crash" and run.spec.recover_position:
        rec = node.recover_position(run.spec.start_timeout_s)
        position = rec.pop("position")
        obs["recover"] = rec
        obs["recovered_position"] = position
    node.configure(start_position=position)


def _bring_back(run, kind: str, node, wl: Workload, watcher, obs: dict):
    """Start the node with the LV1 probe beside it; until Synced and a correct answer."""
    last = wl.last_acked()  # written while the node was down: right only once caught up
    probe_key = last if last is not None else run.keys[0]
    probe = Prober(node.srv, run.lookup_sql, probe_key, run.spec.start_timeout_s, poll_s=0.005)
    obs["probe_key"] = repr(probe_key[0])
    obs["t_call"] = time.time()
    probe.start()
    staging = StagingSampler(node.srv.datadir / ".sst") if kind == "node-restart-sst" else None
    if staging:
        staging.start()
    try:
        with joining(node):
            run.cluster.start_node(node, allow_empty=(kind == "node-restart-sst"))
            obs["t_start_returned"] = time.time()
            obs.update(_wait_synced(run, node, watcher, run.spec.start_timeout_s))
        probe.join(run.spec.start_timeout_s)
    finally:
        probe.halt.set()
        probe.join(5)
        if staging:
            staging.halt.set()
            staging.join(5)
            obs["sst_staging"] = staging.samples
        node.configure()  # a recovered position is for this start only
    obs["t_spawn"] = probe.t_spawn or obs["t_call"]
    obs["t_connect"], obs["t_answer"], obs["probe_errors"] = probe.t_connect, probe.t_answer, probe.errors
    if probe.t_answer is None:
        raise ClusterError(f"target {run.cluster.target}: {node.name} is Synced but never answered the LV1 "
                           f"lookup of {probe_key[0]!r} correctly ({'; '.join(probe.errors) or 'no answer'})")


def _backup_redo(cluster, donor: str | None) -> int | None:
    """The redo the donor's backup copied (its log stays in the donor's datadir until the next)."""
    for n in cluster.nodes:
        if n.name == donor:
            try:
                return galera_log.backup_redo_bytes((n.srv.datadir / "mariabackup.backup.log").read_text(
                    errors="replace"))
            except OSError:
                return None
    return None


def restart_node(run, kind: str, rep: int) -> tuple[list[dict], list[dict], dict]:
    """One restart of ``kind`` under load: (phase rows, load-window rows, detail)."""
    c, node, ld = run.cluster, run.restart_node, run.spec.load
    wl = Workload(c.nodes, run.insert_node, run.lookup_sql, run.keys, run.insert_sql, run.next_rows, ld,
                  run.seed * 1_000_003 + rep * 31 + len(kind))
    watchers = {n.name: errorlog.LogWatcher(n.srv.error_log, n.error_log_size()) for n in c.nodes}
    sampler = StatusSampler(run)
    obs: dict = {"kind": kind, "repetition": rep, "node": node.name, "fresh_state_parts": run.fresh_parts}
    for w in watchers.values():
        w.start()
    sampler.start()
    wl.start()
    try:
        time.sleep(ld.before_s)
        log.info("target %s: %s, repetition %d: taking %s down", c.target, kind, rep, node.name)
        _take_down(run, kind, node, obs)
        log.info("target %s: %s down; starting it again", c.target, node.name)
        _bring_back(run, kind, node, wl, watchers[node.name], obs)
        t_synced = obs["t_synced_status"]
        log.info("target %s: %s Synced %.2f s after it went down", c.target, node.name, t_synced - obs["t_down"])
        time.sleep(ld.after_s)
        obs["t_end"] = time.time()
    finally:
        wl.stop()
        sampler.halt.set()
        sampler.join(5)
        for w in watchers.values():
            w.stop()
    run.acked += wl.acked
    run.in_doubt += wl.in_doubt
    obs["joiner_events"] = galera_log.scan(watchers[node.name].lines)
    donor = galera_log.donor_name(obs["joiner_events"])
    obs["donor"] = donor
    obs["donor_events"] = galera_log.scan(watchers[donor].lines, galera_log.DONOR) if donor in watchers else []
    obs["sst_redo_bytes"] = _backup_redo(c, donor) if kind == "node-restart-sst" else None
    obs["status_samples"] = sampler.samples
    obs["listeners"] = sorted(sampler.listeners)
    if wl.wrong:
        obs["wrong_answers"] = wl.wrong[:20]
    return build(run, obs, wl)
