"""Issue 37: the same failure against another address is the same signature. Masking hides IPv4 and IPv6
addresses in every form, host:port, ports, ids of digits or hex and durations; it stays idempotent and linear in
the text's length; words, times, versions and file:line are not addresses."""

from __future__ import annotations

import ipaddress
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluators.signatures import Failure, failure_signature, mask_message
from evaluators.signatures.addresses import _SOURCE_SUFFIXES as SOURCE_SUFFIXES

ports = st.integers(1, 65535)
ipv4 = st.ip_addresses(v=4).map(str)
ipv6_addresses = st.ip_addresses(v=6)


@st.composite
def ipv6(draw: st.DrawFn) -> str:
    """An IPv6 address as clients print one: compressed, exploded, IPv4-mapped, with a zone."""
    address = draw(ipv6_addresses)
    form = draw(st.sampled_from(["compressed", "exploded", "mapped", "zone", "loopback"]))
    if form == "exploded":
        return address.exploded
    if form == "mapped":
        return f"::ffff:{draw(ipv4)}"
    if form == "zone":
        return f"fe80::{draw(st.integers(1, 0xFFFF)):x}%eth{draw(st.integers(0, 9))}"
    if form == "loopback":
        return "::1"
    return address.compressed


hostnames = st.from_regex(
    r"[a-z][a-z0-9]{0,8}(-[a-z0-9]{1,6})?(\.[a-z][a-z0-9-]{0,8}[a-z0-9]){1,3}", fullmatch=True
).filter(
    lambda host: host.rsplit(".", 1)[-1] not in SOURCE_SUFFIXES  # `a.py:1` is a file and line, not a host (by design)
)
ips = st.one_of(ipv4, ipv6())


@st.composite
def host_port(draw: st.DrawFn) -> str:
    """An address and its port, as each client prints it: `10.0.3.17:5432`, `[fe80::1%eth0]:8080`, `::1:5432`
    (aiohttp, redis-py), `db-0.svc:5432`, or an address without a port."""
    port = draw(ports)
    form = draw(st.sampled_from(["v4", "v6_bracketed", "v6_bare", "hostname", "no_port"]))
    if form == "v4":
        return f"{draw(ipv4)}:{port}"
    if form == "v6_bracketed":
        return f"[{draw(ipv6())}]:{port}"
    if form == "v6_bare":
        return f"{draw(ipv6())}:{port}"
    if form == "hostname":
        return f"{draw(hostnames)}:{port}"
    return draw(ips)


digit_ids = st.integers(10**5, 10**15).map(str)
hex_ids = st.text("0123456789abcdef", min_size=16, max_size=32)
durations = st.one_of(
    st.floats(0.001, 600, allow_nan=False).map(lambda s: f"{s:.3f}s"), st.integers(1, 10**6).map(lambda n: f"{n}ms")
)

# the shapes of real messages (tests/fixtures/client_errors/messages.json), their variable parts as slots
SHAPES = [
    "Cannot connect to host {hp} ssl:default [Connect call failed ('{ip}', {port})]",
    'connection failed: connection to server at "{ip}", port {port} failed: Connection refused',
    "failed to connect to all addresses; last error: UNKNOWN: ipv4:{v4}:{port}: Failed to connect to remote host",
    "failed to connect to all addresses; last error: UNKNOWN: ipv6:%5B{v6}%5D:{port}: Failed to connect",
    "Error 111 connecting to {hp}. Connection refused.",
    "HTTPConnectionPool(host='{ip}', port={port}): Read timed out. (read timeout={duration})",
    "upstream {hp} answered 503 for request req_{digits} (trace {hex}) after {duration}",
    "job-{digits} on {hp} timed out after {duration}, retry id {hex}",
]


@st.composite
def occurrence(draw: st.DrawFn, shape: str) -> str:
    return shape.format(
        hp=draw(host_port()),
        ip=draw(ips),
        v4=draw(ipv4),
        v6=draw(ipv6()),
        port=draw(ports),
        digits=draw(digit_ids),
        hex=draw(hex_ids),
        duration=draw(durations),
    )


@settings(max_examples=400, deadline=None)
@given(st.data(), st.sampled_from(SHAPES))
def test_the_same_message_with_other_addresses_ports_ids_and_durations_has_one_signature(
    data: st.DataObject, shape: str
) -> None:
    one, other = data.draw(occurrence(shape)), data.draw(occurrence(shape))
    first = failure_signature("error_free", "trace", None, Failure("tool", "lookup", "error", one))
    second = failure_signature("error_free", "trace", None, Failure("tool", "lookup", "error", other))
    assert first.template == second.template, (one, other)
    assert first.id == second.id
    assert mask_message(first.template) == first.template


@settings(max_examples=300, deadline=None)
@given(ips, ports)
def test_no_address_survives_masking(address: str, port: int) -> None:
    for text in (f"dial {address} failed", f"dial [{address}]:{port} failed", f"dial {address}:{port}: refused"):
        masked = mask_message(text)
        assert "<addr>" in masked, (text, masked)
        plain = address.split("%")[0]
        assert plain not in masked and str(port) not in masked.replace("<addr>", ""), (text, masked)
        assert ipaddress.ip_address(plain)  # the drawn address is real


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("Cannot connect to host 10.0.3.17:5432 ssl:default [Connect call failed ('10.0.3.17', 5432)]",
         "Cannot connect to host <addr> ssl:default [Connect call failed <addr>]"),
        ('connection to server at "10.0.3.17", port 5432 failed: Connection refused',
         'connection to server at "<addr>", port <port> failed: Connection refused'),
        ("ipv4:10.0.3.17:5432: Failed to connect to remote host", "ipv4:<addr>: Failed to connect to remote host"),
        ("ipv6:%5B::1%5D:50051: Failed", "ipv6:<addr>: Failed"),
        ("GET http://[fe80::1%eth0]:8080/v1 failed", "GET http://<addr>/v1 failed"),
        ("peer ::ffff:10.0.3.17 reset", "peer <addr> reset"),
        ("Error 111 connecting to ::1:48403. Connection refused.",
         "Error <num> connecting to <addr>. Connection refused."),
        ("Error 111 connecting to redis-0.cache.svc:6379.", "Error <num> connecting to <addr>."),
        ("connecting to localhost:6379", "connecting to <addr>"),
        ("request req_123456789 of job-1234567 (id abc_8f3a9b2c4d1e)", "request req_<id> of job-<id> (id abc_<id>)"),
        ("in organization org-9kUesx6Hhg0nCqPpsfxuXf5l", "in organization org-<id>"),
        ("req_123456 req_1234567890123456 trace 0000000000000000000000000a000000",
         "req_<id> req_<id> trace <hex>"),  # a glued id whatever its length; a hex id that ends in digits
    ],
)  # fmt: skip
def test_real_address_forms(text: str, masked: str) -> None:
    assert mask_message(text) == masked


@pytest.mark.parametrize(
    "text",
    [
        "at 12:34:56 the job started",  # a time
        "File app.py:42 raised",  # a file and line
        "std::vector Foo::Bar",  # C++/Rust paths
        "ServiceUnavailableError in XMLHttpRequestHandlerFactory",  # CamelCase names
        "model gpt-4o refused",  # a model name keeps its digit
        "mac 00:1A:2B:3C:4D:5E",  # not an IPv6 address
    ],
)
def test_what_is_not_an_address_is_left_alone(text: str) -> None:
    assert "<addr>" not in mask_message(text) and "<id>" not in mask_message(text)


@pytest.mark.parametrize(
    "text",
    [
        "1:" * 50_000,
        "a" * 100_000 + ":1",
        "[" + "f:" * 50_000,
        "%5B" + "::1" * 30_000,
        ("a-" * 30_000) + ".b:1",
        "1." * 50_000,
        "req_" + "9" * 100_000,
        "aB3" * 30_000,
    ],
    ids=["colons", "long-word", "bracket", "encoded", "hyphens", "dots", "digits", "token"],
)
def test_masking_takes_linear_time_on_adversarial_text(text: str) -> None:
    started = time.perf_counter()
    masked = mask_message(text)
    assert time.perf_counter() - started < 2.0
    assert len(masked) <= 200


@settings(max_examples=500, deadline=None)
@given(st.text("0123456789abcdefABZ:.[]%5_-'(), port/", max_size=120))
def test_masking_an_address_like_text_is_idempotent(text: str) -> None:
    masked = mask_message(text)
    assert mask_message(masked) == masked
