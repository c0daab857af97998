"""The access rules without a server: peer classification, the guess limiter's backoff and bounds, session
values and their revocation, the config key and the start-up line."""

from __future__ import annotations

import asyncio
import logging

import pytest

from monitor.auth import SESSION_TTL, RevokedSessions, session_authorized, session_nonce, session_value
from monitor.config import ConfigError, load_config
from monitor.daemon import Daemon
from monitor.web.access import Access
from monitor.web.peers import GuessLimiter, client_key, is_loopback, peer_address


@pytest.mark.parametrize(
    ("remote", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),  # all of 127.0.0.0/8
        ("::1", True),
        ("::ffff:127.0.0.1", True),  # an IPv4 client of a dual-stack socket
        ("fe80::1%eth0", False),
        ("10.1.2.3", False),
        ("192.168.0.1", False),
        ("::ffff:10.0.0.1", False),
        ("2001:db8::1", False),
        ("0.0.0.0", False),
        ("", False),
        (None, False),
        ("not-an-address", False),
    ],
)
def test_peer_classification(remote: str | None, loopback: bool) -> None:
    assert is_loopback(remote) is loopback


def test_client_keys_group_ipv6_by_64_and_unmap_ipv4() -> None:
    assert client_key("2001:db8:1:2::5") == client_key("2001:db8:1:2:ffff::9") == "2001:db8:1:2::/64"
    assert client_key("2001:db8:1:3::5") != client_key("2001:db8:1:2::5")
    assert client_key("::ffff:10.0.0.1") == client_key("10.0.0.1") == "10.0.0.1"
    assert client_key(None) == "unknown"
    assert str(peer_address("fe80::1%eth0")) == "fe80::1"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_guess_limiter_backs_off_exponentially_and_forgets() -> None:
    clock = Clock()
    limiter = GuessLimiter(free=3, base=1.0, cap=60.0, forget_after=600.0, clock=clock)
    assert [limiter.failed("a") for _ in range(3)] == [0, 0, 0]
    waits = []
    for _ in range(8):
        waits.append(limiter.failed("a"))
        clock.now += waits[-1]  # the client waits as told, then guesses again
    assert waits == [1, 2, 4, 8, 16, 32, 60, 60]  # doubling, capped
    assert limiter.failed("a") == 60
    assert limiter.retry_after("a") == 60 and limiter.retry_after("b") == 0
    clock.now += 30
    assert limiter.retry_after("a") == 30
    clock.now += 601
    assert limiter.failed("a") == 0  # quiet long enough: it starts over
    assert limiter.attempt("a", lambda: True) == (True, 0)
    assert len(limiter) == 1  # a success erases nothing: the failures go when quiet long enough


def test_guess_limiter_memory_is_bounded() -> None:
    limiter = GuessLimiter(free=0, max_clients=100, clock=Clock())
    for n in range(10_000):
        limiter.failed(f"10.0.{n // 256}.{n % 256}")
    assert len(limiter) == 100
    assert limiter.retry_after("10.0.39.15") > 0  # the most recent is kept
    assert limiter.retry_after("10.0.0.0") == 0  # the oldest dropped


def test_sessions_are_signed_expire_and_hold_no_token() -> None:
    value = session_value("tok", now=0.0)
    assert "tok" not in value and value.startswith("v2.")
    assert session_authorized(value, "tok", now=SESSION_TTL - 1)
    assert not session_authorized(value, "tok", now=SESSION_TTL + 1)  # expired
    assert not session_authorized(value, "other", now=1)
    assert session_value("tok") != session_value("tok")  # each login its own session
    forged = value.split(".")
    forged[2] = str(int(forged[2]) + 10**6)  # a later expiry: the HMAC no longer matches
    assert not session_authorized(".".join(forged), "tok", now=1)
    for junk in ("", "v2", "v2.a.b.c", "x" * 5000, "v2.a." + "9" * 5000 + ".c", value + ".x"):
        assert session_nonce(junk, "tok", now=1) is None
    assert session_authorized("anything", None)  # no token: sessions are not what guards the page


def test_revoked_sessions_are_bounded() -> None:
    revoked = RevokedSessions(max_entries=10)
    for n in range(50):
        revoked.revoke(f"n{n}")
    assert len(revoked) == 10 and "n49" in revoked and "n0" not in revoked


def test_access_refuses_revoked_sessions() -> None:
    access = Access("tok")
    value = session_value("tok")
    nonce = access.session(value)
    assert nonce is not None
    access.revoked.revoke(nonce)
    assert access.session(value) is None
    assert Access("tok").session(value) is not None  # revocation is per process (another replica's own set)


def test_allow_unauthenticated_config() -> None:
    assert load_config(None, env={}).api.allow_unauthenticated == "loopback"  # the embedded default
    assert load_config(None, env={"AGENT_MONITOR_API__ALLOW_UNAUTHENTICATED": "any"}).api.allow_unauthenticated == "any"
    with pytest.raises(ConfigError, match="allow_unauthenticated"):
        load_config(None, env={"AGENT_MONITOR_API__ALLOW_UNAUTHENTICATED": "everyone"})


def test_the_start_up_line_says_what_is_open_to_whom() -> None:
    where = "http://0.0.0.0:9464"
    line = Access(None).summary(where)
    assert "loopback clients only" in line and "api.auth.bearer_token_file" in line and where in line
    assert "/metrics, /healthz and /readyz" in line and "open to all" in line
    assert "ANY client" in Access(None, "any").summary(where)
    assert "closed" in Access(None, "none").summary(where)
    assert "need the API token" in Access("tok").summary(where)


@pytest.mark.integration
def test_the_daemon_logs_the_access_line_at_start(caplog: pytest.LogCaptureFixture) -> None:
    env = {
        "AGENT_MONITOR_METRICS__HOST": "127.0.0.1",
        "AGENT_MONITOR_METRICS__PORT": "0",
        "AGENT_MONITOR_RECEIVERS__GRPC__ENABLED": "false",
        "AGENT_MONITOR_RECEIVERS__HTTP__ENABLED": "false",
        "AGENT_MONITOR_STORE__ENABLED": "false",
        "AGENT_MONITOR_EVALUATION__WORKERS": "1",
    }
    config = load_config(None, env=env)

    async def run() -> None:
        daemon = Daemon(config)
        try:
            await daemon.start()
        finally:
            await daemon.shutdown()

    with caplog.at_level(logging.INFO, logger="monitor.daemon"):
        asyncio.run(asyncio.wait_for(run(), 120))
    lines = [r.getMessage() for r in caplog.records if "/review and /api" in r.getMessage()]
    assert len(lines) == 1 and "loopback clients only" in lines[0] and "http://127.0.0.1:" in lines[0], lines
