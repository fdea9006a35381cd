"""Worker processes that never outlive the command that started them.

A forkserver's workers each hold a pipe that keeps the others and the forkserver waiting: when
the command is SIGKILLed (an OOM kill, a batch system's limit, a user), nothing closes them,
and they stay for good. Each worker here watches the command's pid and exits once it is gone."""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time

WATCH_S = 1.0


def _watch(pid: int) -> None:
    while True:
        time.sleep(WATCH_S)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            os._exit(1)
        except PermissionError:     # the pid taken by another user's process: the command is gone
            os._exit(1)


def die_with(pid: int, then=None, *args) -> None:
    """A pool's initializer: watch ``pid``, then run the pool's own initializer ``then(*args)``."""
    threading.Thread(target=_watch, args=(pid,), daemon=True, name="die-with").start()
    if then is not None:
        then(*args)


def forkserver_pool(workers: int, initializer=None, initargs: tuple = ()):
    """multiprocessing's forkserver Pool (not fork: Arrow's thread pools do not survive a fork of
    a process that used them) whose workers exit with this process."""
    return mp.get_context("forkserver").Pool(workers, initializer=die_with,
                                             initargs=(os.getpid(), initializer, *initargs))


def forkserver_executor(workers: int):
    """concurrent.futures' ProcessPoolExecutor on a forkserver, its workers exiting with this process."""
    import concurrent.futures as cf
    return cf.ProcessPoolExecutor(workers, mp_context=mp.get_context("forkserver"), initializer=die_with,
                                  initargs=(os.getpid(),))
