"""A private Galera cluster for one job: N nodes on one target, each in its own
``core.server.session.private_server`` directory (owner lock, stale cleanup, room check, stop
and data removal on every exit path), talking over 127.0.0.1 only.

Formation without N-1 full SSTs: node1 is initialised and bootstrapped once (creating the
cluster's state uuid), stopped cleanly, and its datadir cloned to the other nodes; node1
then bootstraps again and the others join from the same position (no transfer, or an IST
of a few write sets). The state transfer the study measures is the restarted node's.

The SST scripts run helpers (socat, mbstream, mariadb-backup, rsync) that outlive a node
killed mid-transfer; this process is made their subreaper for the session so such
orphans come back to it and are killed at the end, with the nodes.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import re
import shutil
import signal
import socket
import struct
import time
from pathlib import Path

import mysql.connector
import psutil

from ...core.infra.settings import ServerError
from ...core.infra.targets import TargetError, check_target, human, server_bytes
from ...core.server.binaries import find_server_binary, server_version
from ...core.server.process import Launch
from ...core.server.session import Datadir, private_server
from .. import errorlog
from .node import (
    Node,
    check_tools,
    choose_ports,
    find_provider,
    port_free,
    wsrep_status,
)
from .options import ClusterError
from .spec import ClusterSpec

log = logging.getLogger(__name__)

PR_SET_CHILD_SUBREAPER = 36
HELPERS = ("socat", "mbstream", "mariadb-backup", "mariabackup", "rsync", "timeout", "wsrep_sst_")
_PORT_TAKEN = re.compile(r"Address already in use|Failed to listen|bind: .*in use")


def _subreaper(on: bool):
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)


def reap_helpers() -> list[str]:
    """Kill SST helper processes left below this process (orphans of a stopped node)."""
    me = os.getpid()
    found = []
    for p in psutil.Process(me).children(recursive=True):
        try:
            cmd = p.cmdline()
            name = p.name()
        except psutil.Error:
            continue
        words = [name, *(Path(c).name for c in cmd[:2])]
        if any(w.startswith(h) for w in words for h in HELPERS):
            found.append(p)
    for p in found:
        with contextlib.suppress(psutil.Error):
            p.send_signal(signal.SIGKILL)
    gone, _alive = psutil.wait_procs(found, timeout=10)
    for p in found:  # orphans adopted by this process are its children now: reap them
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(p.pid, os.WNOHANG)
    if found:
        log.warning("killed %d SST helper process(es) left by stopped nodes: %s", len(found),
                    ", ".join(str(p.pid) for p in found))
    return [str(p.pid) for p in found]


@contextlib.contextmanager
def joining(node: Node):
    """While ``node`` joins: a node receiving a state transfer ignores SIGTERM until the
    transfer ends, so SIGTERM/SIGINT first kill it and its SST helpers (its half-received
    data is worthless), then the handler before this one stops the others as usual."""
    sigs = (signal.SIGTERM, signal.SIGINT)
    prev = {sig: signal.getsignal(sig) for sig in sigs}

    def handler(signum, frame):
        log.warning("signal %d while %s joins: killing it and its SST helpers first", signum, node.name)
        node.srv.kill()
        reap_helpers()
        signal.signal(signum, prev[signum])
        if callable(prev[signum]):
            prev[signum](signum, frame)
        raise KeyboardInterrupt if signum == signal.SIGINT else SystemExit(128 + signum)

    for sig in sigs:
        signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig in sigs:
            if signal.getsignal(sig) is handler:
                signal.signal(sig, prev[sig])


def listening_sockets() -> dict[int, tuple[str, int]]:
    """{socket inode: (address, port)} of every TCP socket listening in this network namespace:
    asked of the kernel's socket diagnostics for listeners alone; /proc/net/tcp and tcp6 where
    that netlink family is missing (those files walk every connection's hash bucket: ~10 ms
    a read here, on the machine whose restarts are measured)."""
    try:
        return {**_diag_listeners(socket.AF_INET), **_diag_listeners(socket.AF_INET6)}
    except OSError:
        return proc_net_listeners()


# linux/netlink.h, linux/sock_diag.h, linux/inet_diag.h
NETLINK_SOCK_DIAG, SOCK_DIAG_BY_FAMILY, NLMSG_ERROR, NLMSG_DONE = 4, 20, 2, 3
NLM_F_REQUEST_DUMP = 0x1 | 0x300
NLMSG_HEADER = struct.Struct("=IHHII")      # length, type, flags, sequence, port id
TCP_LISTEN = 10
DIAG_INODE_AT = 4 + 48 + 16                 # inet_diag_msg: family..retrans, sockid, expires..uid


def _diag_listeners(family: int) -> dict[int, tuple[str, int]]:
    """One ``family``'s TCP listeners, dumped by the kernel's inet_diag (states: LISTEN only)."""
    req = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, 1 << TCP_LISTEN) + bytes(48)
    out = {}
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as nl:
        nl.sendall(NLMSG_HEADER.pack(NLMSG_HEADER.size + len(req), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST_DUMP, 1, 0) + req)
        while True:
            data, at = nl.recv(1 << 16), 0
            if not data:
                raise OSError("the socket diagnostics' dump ended without its last message")
            while at + NLMSG_HEADER.size <= len(data):
                length, kind = NLMSG_HEADER.unpack_from(data, at)[:2]
                if kind == NLMSG_DONE:
                    return out
                if kind == NLMSG_ERROR:
                    code = -struct.unpack_from("=i", data, at + NLMSG_HEADER.size)[0]
                    raise OSError(code, os.strerror(code))
                msg = data[at + NLMSG_HEADER.size:at + length]
                addr = msg[8:12] if family == socket.AF_INET else msg[8:24]
                out[struct.unpack_from("=I", msg, DIAG_INODE_AT)[0]] = (
                    socket.inet_ntop(family, addr).removeprefix("::ffff:"), struct.unpack_from(">H", msg, 4)[0])
                at += (length + 3) & ~3


def proc_net_listeners() -> dict[int, tuple[str, int]]:
    """The same from the LISTEN rows of /proc/net/tcp and tcp6."""
    out = {}
    for name, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        try:
            rows = Path(f"/proc/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            f = row.split()
            if f[3] != "0A":        # TCP_LISTEN
                continue
            addr, port = f[1].split(":")
            raw = bytes.fromhex(addr)          # 32-bit words in host (little-endian) order
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
            out[int(f[9])] = (socket.inet_ntop(family, raw).removeprefix("::ffff:"), int(port, 16))
    return out


class OwnListeners:
    """(address, port, process name) of every TCP socket listening in a descendant of this
    process: the nodes and their SST helpers (all must be on 127.0.0.1). A sample reads the
    namespace's listening sockets once and the descendants' descriptors only when one is new:
    psutil's per-process tables read the whole table again for each node process, five times a
    second, on the machine whose restarts are measured."""

    def __init__(self):
        self.owner: dict[int, str | None] = {}      # socket inode -> descendant's name, None: not ours

    def sample(self) -> set[tuple[str, int, str]]:
        table = listening_sockets()
        new = {i for i in table if i not in self.owner}
        if new:
            found = self._owners(new)
            self.owner.update({i: found.get(i) for i in new})
        return {(*table[i], self.owner[i]) for i in table if self.owner[i]}

    @staticmethod
    def _owners(inodes: set[int]) -> dict[int, str]:
        out = {}
        for p in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error, OSError):
                out.update({i: p.name() for i in socket_inodes(p.pid) & inodes})
        return out


def socket_inodes(pid: int) -> set[int]:
    """The inodes of the sockets process ``pid`` holds open (its /proc fd links)."""
    out = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
            if link.startswith("socket:["):
                out.add(int(link[8:-1]))
    return out


class Cluster:
    """The nodes of one job's cluster; node 1 bootstraps it and takes the writes."""

    def __init__(self, target: str, nodes: list[Node], start_timeout: float):
        self.target, self.nodes, self.start_timeout = target, nodes, start_timeout
        self.formation: dict = {}

    def _fail(self, node: Node, what: str, exc: Exception | None = None) -> ClusterError:
        tail = errorlog.tail(node.srv.error_log, 40)
        if _PORT_TAKEN.search(tail):
            busy = [f"{what_} {port}" for what_, port in node.ports.items() if not port_free(port)]
            return ClusterError(f"target {self.target}: {node.name} could not bind its ports on 127.0.0.1 "
                                f"({', '.join(busy) or 'a port'} taken by another process): config key "
                                f"'cluster.base_port' (null: ports picked free at run time, taken since; run "
                                f"again or set a base_port with free ports); last lines of "
                                f"{node.srv.error_log}:\n{tail}")
        return ClusterError(f"target {self.target}: {node.name}: {what}" + (f": {exc}" if exc else "") +
                            ("" if exc and "last lines of" in str(exc) else
                             f"\nlast lines of {node.srv.error_log}:\n{tail}"))

    def start_node(self, node: Node, allow_empty: bool = False) -> float:
        busy = [f"{what} port {port}" for what, port in node.ports.items()
                if what != "IST" and not port_free(port)]  # IST binds only while receiving
        if busy:
            raise ClusterError(f"target {self.target}: {node.name}: {', '.join(busy)} on 127.0.0.1 already in use; "
                               f"config key 'cluster.base_port' (null picks free ports at run time)")
        try:
            return node.srv.start(allow_empty=allow_empty)
        except ServerError as exc:
            raise self._fail(node, "did not start", exc) from None

    def conn(self, node: Node):
        return node.srv.connect(connection_timeout=10)

    def wait_synced(self, node: Node, timeout: float | None = None) -> dict:
        """Until ``node`` is Synced in a primary component of every node."""
        deadline = time.monotonic() + (timeout or self.start_timeout)
        st: dict = {}
        while time.monotonic() < deadline:
            if not node.srv.running:
                raise self._fail(node, "exited while joining the cluster")
            try:
                c = self.conn(node)
                try:
                    st = wsrep_status(c)
                finally:
                    c.close()
            except mysql.connector.Error:
                st = {}
            if (st.get("wsrep_local_state_comment") == "Synced"
                    and st.get("wsrep_cluster_size") == str(len(self.nodes))
                    and st.get("wsrep_cluster_status") == "Primary"):
                return st
            time.sleep(0.05)
        raise self._fail(node, f"not Synced in a cluster of {len(self.nodes)} within "
                               f"{timeout or self.start_timeout:.0f} s (last wsrep status: "
                               f"{ {k: st.get(k) for k in ('wsrep_local_state_comment', 'wsrep_cluster_size')} })")

    def form(self) -> dict:
        """Bootstrap node1, clone its stopped datadir, start all; every node Synced."""
        first = self.nodes[0]
        t0 = time.time()
        first.configure(bootstrap=True)
        first.srv.initialize()
        self.start_node(first)
        first.srv.stop()  # grastate.dat now holds the cluster's uuid and position
        t_init = time.time()
        for node in self.nodes[1:]:
            shutil.copytree(first.srv.datadir, node.srv.datadir, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("galera.cache", "gvwstate.dat"))
        t_clone = time.time()
        self.start_node(first)
        first.configure()  # any later start of node1 joins the others
        self.wait_synced_alone(first)
        for node in self.nodes[1:]:
            node.configure()
            self.start_node(node)
            log.info("target %s: %s joined", self.target, node.name)
        for node in self.nodes:
            self.wait_synced(node)
        self.formation = {"initialise_and_bootstrap_s": t_init - t0, "clone_s": t_clone - t_init,
                          "start_all_s": time.time() - t_clone, "total_s": time.time() - t0}
        log.info("target %s: Galera cluster of %d nodes formed in %.1f s", self.target, len(self.nodes),
                 self.formation["total_s"])
        return self.formation

    def wait_synced_alone(self, node: Node):
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            c = self.conn(node)
            try:
                if wsrep_status(c).get("wsrep_local_state_comment") == "Synced":
                    return
            finally:
                c.close()
            time.sleep(0.05)
        raise self._fail(node, "the bootstrapped node did not become Synced")

    def stop_all(self):
        """Joiners first, node1 last; a node that ignores SIGTERM is killed."""
        for node in reversed(self.nodes):
            if node.srv.running:
                try:
                    node.srv.stop(timeout=60)
                except Exception as exc:  # noqa: BLE001 - never leave a node behind
                    log.warning("target %s: stopping %s failed (%s); killing it", self.target, node.name, exc)
                    node.srv.kill()
        reap_helpers()


def _check_room(target: str, root, spec: ClusterSpec, input_bytes: int) -> int:
    per_node = spec.node_bytes(input_bytes)
    n = spec.nodes
    try:
        check_target(target, root, n * per_node)
    except TargetError as exc:
        raise ClusterError(
            f"target {target}: {n} Galera nodes (config key 'cluster.nodes') on targets.{target}.path each "
            f"need room for a full copy of the index and its SST staging ({human(per_node)} per node: server "
            f"files, gcache {spec.gcache_size} (cluster.gcache_size), {human(input_bytes)} of input); "
            f"{exc}") from None
    return per_node


@contextlib.contextmanager
def cluster_session(target: str, root, spec: ClusterSpec, input_bytes: int, name: str):
    """Yield a ``Cluster`` of ``spec.nodes`` nodes under ``root`` (not yet formed); on every
    exit path each node is stopped, SST helpers are killed and the nodes' data removed
    (unless ``spec.keep_data``)."""
    provider = find_provider()
    binary = find_server_binary(spec.binary)
    check_tools(binary, server_version(binary), spec.sst_method)  # before anything is created
    per_node = _check_room(target, root, spec, input_bytes)
    ports = choose_ports(spec.nodes, spec.base_port)
    settings = spec.settings
    _subreaper(True)
    cl = None
    try:
        with contextlib.ExitStack() as stack:
            nodes = []
            for i, p in enumerate(ports):
                srv = stack.enter_context(private_server(
                    target, root, f"{name}-node{i + 1}", settings, Launch(binary, False, spec.start_timeout_s),
                    data=Datadir(keep=spec.keep_data), start=False, data_bytes=per_node - server_bytes(settings)))
                nodes.append(Node(i, srv, p, f"catbench-{name}", spec.sst_method, spec.gcache_size,
                                  provider))
            for node in nodes:
                node.peers = ports
            cl = Cluster(target, nodes, spec.start_timeout_s)
            try:
                yield cl
            finally:
                cl.stop_all()
    finally:
        reap_helpers()
        _subreaper(False)
