"""A server left behind by a crashed earlier run: found by its config file on the command line
or by its pid file, and stopped; dead pid and socket files removed."""

from __future__ import annotations

import os
from pathlib import Path

import psutil

from ..infra.settings import ServerError
from .binaries import SERVER_NAMES


def server_processes() -> list[psutil.Process]:
    """The host's processes named as a server is (bootstraps too), by each process's /proc comm:
    one small read a process, where psutil's scan of every command line costs ~6x it."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/comm") as f:
                    if f.read().rstrip("\n") in SERVER_NAMES:
                        out.append(psutil.Process(int(entry)))
            except (OSError, psutil.Error):
                pass
    return out


def cleanup(srv) -> list[str]:
    """Stop a leftover server of this datadir; remove dead pid/socket files."""
    actions = []
    ours = f"--defaults-file={srv.config_file}"
    for proc in server_processes():
        if proc.pid == srv.pid:
            continue
        try:
            cmdline = proc.cmdline()
        except psutil.Error:
            continue
        if ours in cmdline and Path(cmdline[0]).name in SERVER_NAMES:
            actions.append(f"stopped leftover server pid {proc.pid} of {srv.datadir}")
            proc.terminate()
            try:
                proc.wait(60)
            except psutil.TimeoutExpired:
                proc.kill()
                proc.wait(30)
    if srv.pid_file.exists():
        try:
            pid = int(srv.pid_file.read_text().split()[0])
        except (ValueError, IndexError):
            pid = None
        alive = pid is not None and psutil.pid_exists(pid) and pid != srv.pid
        if alive:
            try:
                proc = psutil.Process(pid)
                mine = proc.name() in SERVER_NAMES and str(srv.datadir) in " ".join(
                    proc.cmdline() + [proc.cwd()])
            except psutil.AccessDenied:
                mine = None  # cannot tell: do not guess
            except psutil.Error:
                mine = False
            if mine:
                proc.terminate()
                try:
                    proc.wait(60)
                except psutil.TimeoutExpired:
                    proc.kill()
                actions.append(f"stopped leftover server pid {pid}")
            elif mine is None:
                raise ServerError(f"target {srv.name}: {srv.pid_file} names live process {pid} "
                                  f"that cannot be inspected; stop it or remove the file")
            else:
                # The pid was reused (after a crash or reboot) by a process that does not
                # serve this datadir: the file is stale, the process is left alone.
                actions.append(f"pid file {srv.pid_file} named pid {pid}, now an unrelated "
                               f"process (left running)")
        if srv.pid_file.exists():
            srv.pid_file.unlink()
            actions.append(f"removed stale pid file {srv.pid_file}")
    if srv.socket.exists() or srv.socket.is_symlink():
        srv.socket.unlink()
        actions.append(f"removed stale socket {srv.socket}")
    return actions
