"""The process-wide safety net of the private servers: every server running in this process is
stopped on exit (``atexit``) or on SIGTERM/SIGINT (handlers installed while one runs, the
previous ones restored after), even when the code that started it never reaches its stop."""

from __future__ import annotations

import atexit
import logging
import signal
import threading

log = logging.getLogger("catbench.core.server.process")

running: set = set()             # the Servers started and not yet stopped
lock = threading.RLock()         # re-entered when a signal arrives inside a start
_prev_handlers: dict[int, object] = {}


def stop_all_now():
    for srv in list(running):
        try:
            srv.stop(timeout=30)
        except Exception:  # noqa: BLE001 - last resort, must not raise
            srv.kill()


def _on_signal(signum, frame):
    prev = _prev_handlers.get(signum, signal.SIG_DFL)  # before stopping: that restores handlers
    log.warning("signal %d: stopping %d private server(s)", signum, len(running))
    stop_all_now()
    restore_handlers()
    if callable(prev):
        prev(signum, frame)
    elif prev == signal.SIG_DFL:
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + signum)


def install_handlers():
    if _prev_handlers or threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGINT):
        _prev_handlers[sig] = signal.signal(sig, _on_signal)


def restore_handlers():
    if threading.current_thread() is not threading.main_thread():
        return
    for sig, prev in list(_prev_handlers.items()):
        signal.signal(sig, prev)
    _prev_handlers.clear()


atexit.register(stop_all_now)
