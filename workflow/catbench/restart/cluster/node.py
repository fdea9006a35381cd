"""One Galera node: a ``core.server.process.Server`` plus the options only catbench may set (the
provider, the cluster address, its three ports on 127.0.0.1), given to the server as its
trusted ``internal`` options, never through the user's settings. Also what a node needs
beside its server: the tools of the SST method, the wsrep status, the position recovery
after a crash (``--wsrep-recover``, as systemd's galera_recovery does) and a wiped datadir.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ...core.server.process import Server
from ...core.server.address import free_tcp_port
from .. import errorlog
from .options import ClusterError

log = logging.getLogger(__name__)

PROVIDERS = ("/usr/lib/galera/libgalera_smm.so", "/usr/lib/galera-4/libgalera_smm.so",
             "/usr/lib64/galera-4/libgalera_smm.so", "/usr/lib64/galera/libgalera_smm.so",
             "/usr/local/lib/libgalera_smm.so")
INSTALL_HINT = ("install Galera and the SST tools (Debian/Ubuntu: apt-get install galera-4 "
                "mariadb-backup rsync socat; `make run` with the cluster stage, or `make test`, does it as root)")
# what each SST method runs besides its wsrep_sst_<method> script
SST_TOOLS = {"mariabackup": (("mariadb-backup", "mariabackup"), ("socat",)), "rsync": (("rsync",),)}
# Files of a datadir that are not state: the gcache ring buffer (allocated at start), the
# redo log (sized by the config, recreated by an SST),
# the view state of a running node, and logs of an earlier SST.
NOT_STATE = ("galera.cache", "gvwstate.dat", "ib_logfile*", "mariabackup.*.log", "*.pid", "wsrep_recovery.*")
_POSITION = re.compile(r"WSREP: Recovered position: *([0-9a-f-]{36}:-?\d+)")


@dataclass
class Ports:
    gcomm: int  # group communication (base_port)
    ist: int    # incremental state transfer receiver (ist.recv_addr)
    sst: int    # state snapshot receiver (wsrep_sst_receive_address)

    def items(self):
        return (("group communication", self.gcomm), ("IST", self.ist), ("SST", self.sst))


def find_provider() -> str:
    for p in PROVIDERS:
        if os.path.exists(p):
            return p
    raise ClusterError(f"the Galera provider libgalera_smm.so is not in {', '.join(PROVIDERS)}; {INSTALL_HINT}")


def check_tools(binary: str, version: str, method: str):
    """The server must be MariaDB (MySQL has no wsrep) and the SST method's tools present."""
    if "mariadb" not in version.lower():
        raise ClusterError(f"{binary} is not MariaDB ({version[:80]!r}): a Galera cluster needs MariaDB "
                           f"with wsrep; set server.binary to a mariadbd, or {INSTALL_HINT}")
    bindir = str(Path(binary).resolve().parent.parent / "bin")
    path = os.pathsep.join([os.environ.get("PATH", ""), bindir, "/usr/bin", "/usr/local/bin"])
    script = f"wsrep_sst_{method}"
    need = [(script,), *SST_TOOLS[method]]
    missing = [" or ".join(names) for names in need if not any(shutil.which(n, path=path) for n in names)]
    if missing:
        raise ClusterError(f"config key 'cluster.sst_method': {method} needs {', '.join(missing)}, not found "
                           f"in PATH; {INSTALL_HINT}, or choose the other method "
                           f"({'rsync' if method == 'mariabackup' else 'mariabackup'})")
    if method == "rsync" and os.geteuid() == 0:
        # the joiner's rsync daemon, started as root, drops to user nobody (rsync's default),
        # which cannot write a root-owned datadir: every transfer (IST included) fails
        raise ClusterError("config key 'cluster.sst_method': rsync does not work when catbench runs as root "
                           "(the joiner's rsync daemon drops to user nobody, which cannot write the node's "
                           "datadir); use mariabackup, or run catbench as an ordinary user")


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def choose_ports(n: int, base_port: int | None) -> list[Ports]:
    """Three ports per node on 127.0.0.1: ``base_port`` + 3 i .. + 2, or free ones the kernel
    hands out now (distinct: a closed port may be handed out again)."""
    if base_port is not None:
        out = [Ports(base_port + 3 * i, base_port + 3 * i + 1, base_port + 3 * i + 2) for i in range(n)]
        for i, p in enumerate(out):
            for what, port in p.items():
                if port > 65535 or not port_free(port):
                    raise ClusterError(
                        f"config key 'cluster.base_port': port {port} (node{i + 1} {what}) on 127.0.0.1 is "
                        f"{'out of range' if port > 65535 else 'already in use'}; choose another base_port "
                        f"(node i uses base_port + 3(i-1) .. + 2) or null for free ports chosen at run time")
        return out
    seen: set[int] = set()
    while len(seen) < 3 * n:
        seen.add(free_tcp_port())
    ports = sorted(seen)
    return [Ports(*ports[3 * i:3 * i + 3]) for i in range(n)]


class Node:
    """A Galera node: its server, ports and name; ``configure`` sets the options of the next
    start (bootstrap, recovered position)."""

    def __init__(self, index: int, srv: Server, ports: Ports, cluster_name: str, method: str,
                 gcache_size: str, provider: str):
        self.index, self.srv, self.ports = index, srv, ports
        self.name = f"node{index + 1}"
        self.cluster_name, self.method, self.gcache_size, self.provider = cluster_name, method, gcache_size, provider
        self.peers: list[Ports] = []

    def options(self, bootstrap: bool = False, start_position: str | None = None) -> dict:
        p = self.ports
        # gmcast.listen_addr and ist.recv_bind keep Galera off 0.0.0.0; the [sst] sockopt
        # makes the SST script's socat listen on 127.0.0.1 only (rsync binds a local address).
        provider = (f"base_host=127.0.0.1;base_port={p.gcomm};gmcast.listen_addr=tcp://127.0.0.1:{p.gcomm};"
                    f"ist.recv_addr=127.0.0.1:{p.ist};ist.recv_bind=127.0.0.1:{p.ist};gcache.size={self.gcache_size}")
        address = "" if bootstrap else ",".join(f"127.0.0.1:{q.gcomm}" for q in self.peers)
        opts = {"wsrep_on": "ON", "wsrep_provider": self.provider, "wsrep_cluster_name": self.cluster_name,
                "wsrep_cluster_address": f"gcomm://{address}", "wsrep_node_name": self.name,
                "wsrep_node_address": f"127.0.0.1:{p.gcomm}", "wsrep_provider_options": f'"{provider}"',
                "wsrep_sst_receive_address": f"127.0.0.1:{p.sst}", "wsrep_sst_method": self.method,
                "binlog_format": "ROW", "innodb_autoinc_lock_mode": "2", "default_storage_engine": "InnoDB"}
        if start_position:
            opts["wsrep_start_position"] = start_position
        opts["sst"] = {"sockopt": '",bind=127.0.0.1"'}
        return opts

    def configure(self, **kw):
        self.srv.internal = self.options(**kw)

    def error_log_size(self) -> int:
        return self.srv.error_log.stat().st_size if self.srv.error_log.exists() else 0

    def recover_position(self, timeout: float) -> dict:
        """``mariadbd --wsrep-recover``: InnoDB crash recovery in a pass of its own that ends
        by printing the last committed position; the next start passes it on, so the node
        can ask for an IST instead of a full SST. Times the pass from its error-log lines."""
        srv = self.srv
        srv.config_file.write_text(srv.render_config())
        cmd = [srv.binary, f"--defaults-file={srv.config_file}", "--wsrep-recover",
               *(["--user=root"] if os.geteuid() == 0 else [])]
        with errorlog.LogWatcher(srv.error_log) as watcher:
            t0 = time.time()
            with open(srv.basedir / "wsrep_recover.out", "ab") as out:
                rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    timeout=timeout).returncode
            t1 = time.time()
        text = "\n".join(line for _, line in watcher.lines)
        found = _POSITION.findall(text)
        if rc != 0:
            raise ClusterError(f"{self.name}: `mariadbd --wsrep-recover` after the crash exited with {rc}; "
                               f"last lines of {srv.error_log}:\n{errorlog.tail(srv.error_log)}")
        position = found[-1] if found and not found[-1].endswith(":-1") else None
        return {"t_start": t0, "t_end": t1, "seconds": t1 - t0, "position": position,
                "events": list(watcher.events), "lines": list(watcher.lines)}

    def wipe(self) -> float:
        """Remove the datadir (the node comes back empty and needs a full SST)."""
        t0 = time.time()
        shutil.rmtree(self.srv.datadir, ignore_errors=True)
        self.srv.datadir.mkdir(parents=True)
        return time.time() - t0


def wsrep_status(conn) -> dict[str, str]:
    cur = conn.cursor()
    cur.execute("SHOW GLOBAL STATUS LIKE 'wsrep%'")
    return {k.lower(): (v.decode() if isinstance(v, (bytes, bytearray)) else v) for k, v in cur.fetchall()}


# the server's own schemas: what a datadir holds before any table of the user's
SERVER_SCHEMAS = ("mysql", "performance_schema", "sys")
# a datadir's state by part: the tables, the system tablespace (the undo too, where
# innodb_undo_tablespaces is 0, MariaDB's default), undo tablespaces, the temporary tablespace,
# and the rest (the server's schemas, Aria's files): what an SST streams beside the data
PARTS = ("tables", "system", "undo", "temp", "server")


def _part(rel: Path) -> str:
    if len(rel.parts) > 1:
        return "server" if rel.parts[0] in SERVER_SCHEMAS or rel.parts[0].startswith(".") else "tables"
    name = rel.name
    return ("system" if name.startswith("ibdata") else "undo" if re.fullmatch(r"undo\d+", name)
            else "temp" if name.startswith("ibtmp") else "server")


def state_parts(datadir: Path) -> dict[str, int]:
    """Bytes of a node's state in its datadir (what a state transfer moves: every file but the
    gcache, view state and SST logs) by :data:`PARTS`."""
    out = dict.fromkeys(PARTS, 0)
    for root, _dirs, files in os.walk(datadir):
        for f in files:
            if any(Path(f).match(p) for p in NOT_STATE):
                continue
            path = Path(root, f)
            try:
                out[_part(path.relative_to(datadir))] += path.stat().st_size
            except OSError:
                pass  # moved or removed by the SST script meanwhile
    return out

