"""The test servers' ports (tests/support/ports.py) come from below the kernel's ephemeral range, so no outgoing
connection on the machine can take one between the pick and the server's bind (a CI run failed on that)."""

from __future__ import annotations

import socket

from tests.support import ports


def test_ports_are_below_the_ephemeral_range_distinct_and_bindable() -> None:
    picked = [ports.free_port() for _ in range(50)]
    assert len(set(picked)) == len(picked)
    assert all(ports.LOWEST <= port < ports._ephemeral_start() for port in picked)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", picked[0]))


def test_a_port_in_use_is_not_handed_out(monkeypatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", ports.free_port()))
        port = taken.getsockname()[1]
        ports._HANDED_OUT.discard(port)
        real_randint, draws = ports.random.randint, [port, port]  # the taken port twice, then random ones
        monkeypatch.setattr(
            ports.random, "randint", lambda low, high: draws.pop() if draws else real_randint(low, high)
        )
        assert ports.free_port() != port and not draws
