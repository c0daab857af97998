"""Who is asking: the peer address of a request as the metrics port classifies it (loopback or not) and keys it
for the credential-guess limit (one key per IPv4 address, per IPv6 /64: one host's whole allocation)."""

from __future__ import annotations

import ipaddress
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def peer_address(remote: str | None) -> IPAddress | None:
    """The peer's IP address (an IPv4-mapped IPv6 address as IPv4, a zone index dropped); None when unknown."""
    if not remote:
        return None
    try:
        address = ipaddress.ip_address(remote.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def is_loopback(remote: str | None) -> bool:
    """True for 127.0.0.0/8, ::1 and their IPv4-mapped forms: a client on this host (or in this pod)."""
    address = peer_address(remote)
    return address is not None and address.is_loopback


def client_key(remote: str | None) -> str:
    """The limiter's key of a peer: its IPv4 address, or its IPv6 /64 network."""
    address = peer_address(remote)
    if address is None:
        return "unknown"
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


@dataclass
class _Client:
    failures: int = 0
    last_failure: float = 0.0
    blocked_until: float = 0.0


class GuessLimiter:
    """Failed credential checks (a wrong bearer token, a wrong token in the login form) per client, with
    exponential backoff: the first `free` failures cost nothing, each later one blocks the client for
    `base`·2ⁿ seconds (n = 0, 1, …; at most `cap`). `forget_after` seconds without a failure start the client
    over; a success does not (`attempt`). At most `max_clients` are remembered (least recently failed dropped
    first), so an address sweep costs bounded memory. Thread-safe; `clock` is monotonic seconds."""

    def __init__(
        self,
        free: int = 5,
        base: float = 1.0,
        cap: float = 300.0,
        forget_after: float = 900.0,
        max_clients: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.free, self.base, self.cap, self.forget_after = free, base, cap, forget_after
        self.max_clients = max_clients
        self._clock = clock
        self._clients: OrderedDict[str, _Client] = OrderedDict()
        self._lock = threading.Lock()

    def retry_after(self, key: str) -> int:
        """Whole seconds until `key` may try again; 0 when it may now."""
        with self._lock:
            return self._wait(key, self._clock())

    def attempt(self, key: str, right: Callable[[], bool]) -> tuple[bool, int]:
        """One credential check of `key`, atomically: refused unchecked while `key` must wait, else `right()` is
        asked and a wrong answer counted, all under one lock, so concurrent guesses cannot all pass a check made
        before any of them was counted. (True, 0) when right; else (False, the seconds `key` must now wait).
        A right answer erases nothing: the failures are forgotten `forget_after` after the last (a client that
        knows the token, such as a script on the same address, must not reset a guesser's count)."""
        with self._lock:
            now = self._clock()
            wait = self._wait(key, now)
            if wait:
                return False, wait
            if right():
                return True, 0
            return False, self._failed(key, now)

    def failed(self, key: str) -> int:
        """Count a failure of `key`; the seconds it must now wait (0 while within its free failures)."""
        with self._lock:
            return self._failed(key, self._clock())

    def _wait(self, key: str, now: float) -> int:
        client = self._clients.get(key)
        return 0 if client is None else max(0, math.ceil(client.blocked_until - now))

    def _failed(self, key: str, now: float) -> int:
        client = self._clients.pop(key, None)
        if client is None or now - client.last_failure > self.forget_after:
            client = _Client()
        self._clients[key] = client  # the most recent failure last
        while len(self._clients) > self.max_clients:
            self._clients.popitem(last=False)
        client.failures += 1
        client.last_failure = now
        over = client.failures - self.free
        if over > 0:
            client.blocked_until = now + min(self.cap, self.base * 2 ** min(over - 1, 32))
        return max(0, math.ceil(client.blocked_until - now))

    def __len__(self) -> int:
        return len(self._clients)
