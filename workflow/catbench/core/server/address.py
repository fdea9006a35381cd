"""Where a private server listens: the length a unix socket's path may have, and a free TCP port."""

from __future__ import annotations

import socket

# sun_path is 108 bytes including the terminating NUL.
SOCKET_PATH_MAX = 107


class _PortTaken(Exception):
    """The chosen TCP port was taken by someone else before the server could bind it."""

    def __init__(self, port):
        super().__init__(port)
        self.port = port


def free_tcp_port() -> int:
    """A currently free port on 127.0.0.1 (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
