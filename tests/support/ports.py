"""Loopback ports for test servers the tests start themselves, picked outside the kernel's ephemeral range.

A port picked with bind(0) comes from the ephemeral range, the range the kernel also takes the source port of
every outgoing connection from: between the pick and the server's own bind (seconds, for a daemon starting up)
any client on the machine may get it, and the server cannot bind (CI saw this). Ports below that range are never
handed out by the kernel, so only another test picking at random could take one, and each pick is checked free.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

LOWEST = 10_000
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_HANDED_OUT: set[int] = set()


def _ephemeral_start() -> int:
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A loopback port below the ephemeral range, free now and not handed out before in this process."""
    top = _ephemeral_start() - 1
    if top <= LOWEST:  # an unusual range: let the kernel pick
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return int(sock.getsockname()[1])
    for _ in range(200):
        port = random.randint(LOWEST, top)
        if port not in _HANDED_OUT and _bindable(port):
            _HANDED_OUT.add(port)
            return port
    raise RuntimeError(f"no free loopback port in {LOWEST}-{top}")


def closed_port() -> int:
    """A loopback port nothing listens on (one free_port, never bound by a server)."""
    return free_port()
