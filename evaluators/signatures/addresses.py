"""Network addresses in an error message masked (part of `mask_message`): the same failure against another pod,
replica, host or port reads the same.

An address, with or without its port, becomes `<addr>`: IPv4 addresses, IPv6 addresses in every form (`::1`,
`fe80::1%eth0`, `[fe80::1%eth0]:8080`, IPv4-mapped `::ffff:10.0.3.17`, gRPC's `ipv6:%5B::1%5D:5432`, and unbracketed
with a port as aiohttp and redis-py print one, `::1:48403`), a hostname with a port (`db-0.db.svc:5432`,
`localhost:6379`) and a Python socket address (`('10.0.3.17', 5432)`, `('::1', 5432, 0, 0)`). One token for all:
whether a port is printed, or an unbracketed IPv6 address ends in a group that reads as one, does not split a
failure. A number after the word "port" (`port 5432`, `port=5432`) becomes `<port>`. Candidates are found by
bounded patterns (linear time) and confirmed by the standard `ipaddress` module, so a time (`12:34:56`), a version
(`1.2.3`) or a file and line (`app.py:42`) is not an address.
"""

from __future__ import annotations

import ipaddress
import re

ADDRESS = "<addr>"

# a run of hex digits, colons and dots with a colon in it, bracketed (optionally URL-encoded, with a zone and a
# port) or bare (with a zone and its port); confirmed by `ipaddress` (every run is bounded: an address has at most
# 45 characters)
_IPV6 = re.compile(
    r"(?<![\w.])(?:(?:\[|%5[Bb])(?P<inner>[0-9A-Fa-f:.]{2,45}?)(?:%(?!5[Dd])[\w.-]{1,32}?)?(?:\]|%5[Dd])"
    r"(?::\d{1,5}(?!\d))?"
    r"|(?P<bare>[0-9A-Fa-f]{0,4}:[0-9A-Fa-f:.]{1,50})(?P<zone>%[A-Za-z](?:[\w-]|\.(?=\w)){0,31}(?::\d{1,5})?)?(?!\w))"
)
_IPV4 = re.compile(r"(?<![\w.])(\d{1,3}(?:\.\d{1,3}){3})(?::\d{1,5})?(?!\w|\.\d)")
# a hostname (labels of letters, digits and hyphens, dot-separated) and a port; confirmed by `_is_hostname`
_HOST_PORT = re.compile(
    r"(?<![\w.\-<])([A-Za-z0-9][A-Za-z0-9-]{0,62}(?:\.[A-Za-z0-9][A-Za-z0-9-]{0,62}){0,8}):\d{1,5}(?!\w|\.\d|:\d)"
)
# a Python socket address as exceptions print it: (host, port) or, IPv6, (host, port, flowinfo, scope_id)
_SOCKADDR = re.compile(r"\(\s*(['\"])<addr>\1\s*,\s*\d{1,5}(?:\s*,\s*\d{1,10}\s*,\s*\d{1,10})?\s*\)")
# what each pattern needs, found by a quick scan first (most messages have no address: masking runs on every one)
_MAY_BE_IPV4 = re.compile(r"\d\.\d{1,3}\.\d")
_MAY_BE_HOST_PORT = re.compile(r"[A-Za-z0-9]:\d")
_PORT_WORD = re.compile(r"(\bport\b[\s=:]{0,3})\d{1,5}\b", re.IGNORECASE)
# file names with a line number (`app.py:42`) are not hosts
_SOURCE_SUFFIXES = frozenset((
    "py", "pyx", "js", "mjs", "cjs", "ts", "tsx", "jsx", "go", "rb", "rs", "java", "kt", "scala", "swift", "c", "h",
    "cc", "cpp", "hpp", "cs", "php", "ex", "exs", "lua", "sh", "json", "yaml", "yml", "toml", "txt", "log", "html",
))  # fmt: skip


def _is_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def _ipv6_length(text: str) -> int:
    """How many leading characters of `text` are an IPv6 address, with a port printed after it unbracketed
    (`::1:48403`), a dot or colon ending the sentence left aside; 0 when it is none."""
    for candidate in dict.fromkeys((text, text.rstrip("."), text.rstrip(".:"))):
        head, _, last = candidate.rpartition(":")
        if last.isdigit() and int(last) <= 65535 and _is_ipv6(head):
            return len(candidate)
        if candidate.count(":") >= 2 and _is_ipv6(candidate):
            return len(candidate)
    return 0


def _mask_ipv6(match: re.Match[str]) -> str:
    inner = match.group("inner")
    if inner is not None:
        return ADDRESS if _is_ipv6(inner) else match.group(0)
    bare = match.group("bare")
    length = _ipv6_length(bare)
    if not length:
        return match.group(0)
    return ADDRESS + bare[length:] if length < len(bare) else ADDRESS


def _mask_ipv4(match: re.Match[str]) -> str:
    try:
        ipaddress.IPv4Address(match.group(1))
    except ValueError:
        return match.group(0)
    return ADDRESS


def _is_hostname(name: str) -> bool:
    """A hostname rather than a word or a file name: localhost, or a dotted or hyphenated name whose last label
    starts with a letter and is not a source file's suffix."""
    if name.lower() == "localhost":
        return True
    last = name.rsplit(".", 1)[-1]
    if not last[:1].isalpha() or last.lower() in _SOURCE_SUFFIXES:
        return False
    return "." in name or "-" in name


def _mask_host_port(match: re.Match[str]) -> str:
    return ADDRESS if _is_hostname(match.group(1)) else match.group(0)


def mask_addresses(text: str) -> str:
    """`text` with its network addresses and ports masked (see the module doc)."""
    if "::" in text or text.count(":") >= 7:  # an IPv6 address has one or the other
        text = _IPV6.sub(_mask_ipv6, text)
    if "." in text and _MAY_BE_IPV4.search(text) is not None:
        text = _IPV4.sub(_mask_ipv4, text)
    if ":" in text and _MAY_BE_HOST_PORT.search(text) is not None:
        text = _HOST_PORT.sub(_mask_host_port, text)
    if "(" in text and ADDRESS in text:
        text = _SOCKADDR.sub(ADDRESS, text)
    if "port" in text.lower():
        text = _PORT_WORD.sub(r"\1<port>", text)
    return text
