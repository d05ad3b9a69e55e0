"""A free TCP port on the loopback interface: the one place Assay asks the kernel for one.

Used by the command line's background Prefect server, the data-parallel training launcher
(torchrun's rendezvous port) and the tests' own servers.
"""

from __future__ import annotations

import socket

LOOPBACK = "127.0.0.1"


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port the kernel considers free on ``host``: bind port 0 and read back the port it chose.

    The socket is closed before returning, so another program could take the port before the
    caller binds it; a caller that can tell (a server that fails with "address already in use")
    asks again.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
