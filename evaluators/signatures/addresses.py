"""Network addresses in an error message masked (part of `mask_message`): the same failure against another pod,
replica or port reads the same.

IPv6 addresses in every form (`::1`, `fe80::1%eth0`, `[fe80::1%eth0]:8080`, IPv4-mapped `::ffff:10.0.3.17`,
gRPC's `ipv6:%5B::1%5D:5432`) and IPv4 addresses become `<ip>`, a port after one `<port>`; a hostname with a port
(`db-0.db.svc:5432`, `localhost:6379`) becomes `<host>:<port>`; a number after the word "port" (`port 5432`,
`port=5432`) becomes `<port>`, and a socket address tuple (`('10.0.3.17', 5432)`, `('::1', 5432, 0, 0)`) becomes
`('<ip>', <port>)`. An unbracketed IPv6 address followed by a port (`::1:48403`, as aiohttp and redis-py print it)
is read as address and port when its last group is decimal. Candidates are found by bounded patterns (linear time) and confirmed by the standard
`ipaddress` module, so a time (`12:34:56`) or a version (`1.2.3`) is not an address.
"""

from __future__ import annotations

import ipaddress
import re

# a run of hex digits, colons and dots with a colon in it, bracketed (optionally URL-encoded) or bare, its zone and,
# bracketed, its port; confirmed by `ipaddress` (the run is bounded: an address has at most 45 characters)
_IPV6 = re.compile(
    r"(?<![\w.])(?:(?P<open>\[|%5[Bb])(?P<inner>[0-9A-Fa-f:.]{2,45}?)(?P<izone>%(?!5[Dd])[\w.-]{1,32}?)?"
    r"(?:\]|%5[Dd])(?::(?P<port>\d{1,5})(?!\d))?"
    r"|(?P<bare>[0-9A-Fa-f]{0,4}:[0-9A-Fa-f:.]{1,44})(?P<zone>%[A-Za-z][\w.-]{0,31})?(?!\w))"
)
_IPV4 = re.compile(r"(?<![\w.])(\d{1,3}(?:\.\d{1,3}){3})(?:(:)(\d{1,5}))?(?![\w]|\.\d)")
# a hostname (labels of letters, digits and hyphens, dot-separated) and a port; confirmed by `_is_hostname`
_HOST_PORT = re.compile(r"(?<![\w.\-<])([A-Za-z0-9][A-Za-z0-9-]{0,62}(?:\.[A-Za-z0-9][A-Za-z0-9-]{0,62}){0,8}):(\d{1,5})(?!\w|\.\d|:\d)")
# a Python socket address as exceptions print it: (host, port) or, IPv6, (host, port, flowinfo, scope_id)
_SOCKADDR = re.compile(r"\(\s*(['\"])<ip>\1\s*,\s*\d{1,5}(?:\s*,\s*\d{1,10}\s*,\s*\d{1,10})?\s*\)")
_PORT_WORD = re.compile(r"(\bport\b[\s=:]{0,3})\d{1,5}\b", re.IGNORECASE)
# file names with a line number (`app.py:42`) are not hosts
_SOURCE_SUFFIXES = frozenset(
    "py pyx js mjs cjs ts tsx jsx go rb rs java kt scala swift c h cc cpp hpp cs php ex exs lua sh json yaml yml toml"
    " txt log html".split()
)


def _with_port(text: str) -> str | None:
    """The IPv6 address of `text` printed unbracketed with a port (`::1:48403`, as aiohttp and redis-py print
    one), else None: the last group is read as the port when it is decimal and the rest is a whole address."""
    head, _, last = text.rpartition(":")
    if not last.isdigit() or int(last) > 65535 or not head or head.endswith(":") or "::" not in head:
        return None
    try:
        ipaddress.IPv6Address(head)
    except ValueError:
        return None
    return head


def _ipv6(text: str) -> str | None:
    """`text` if it is an IPv6 address (a trailing dot or colon of the sentence left aside), else None."""
    for candidate in (text, text.rstrip(".:")):
        if candidate.count(":") >= 2:
            try:
                ipaddress.IPv6Address(candidate)
            except ValueError:
                continue
            return candidate
    return None


def _mask_ipv6(match: re.Match[str]) -> str:
    if match.group("open") is not None:
        if _ipv6(match.group("inner")) != match.group("inner"):
            return match.group(0)
        return "<ip>" + (":<port>" if match.group("port") else "")
    bare = match.group("bare")
    trimmed = bare.rstrip(".:")
    if _with_port(trimmed) is not None:
        return "<ip>:<port>" + bare[len(trimmed) :]
    address = _ipv6(bare)
    if address is None:
        return match.group(0)
    return "<ip>" + bare[len(address) :]


def _mask_ipv4(match: re.Match[str]) -> str:
    try:
        ipaddress.IPv4Address(match.group(1))
    except ValueError:
        return match.group(0)
    return "<ip>" + (":<port>" if match.group(2) else "")


def _is_hostname(name: str) -> bool:
    """A hostname rather than a word or a file name: a dotted or hyphenated name whose last label starts with a
    letter (not a source file suffix), or localhost."""
    last = name.rsplit(".", 1)[-1]
    if name.lower() == "localhost":
        return True
    if not last[:1].isalpha() or last.lower() in _SOURCE_SUFFIXES:
        return False
    return "." in name or "-" in name


def _mask_host_port(match: re.Match[str]) -> str:
    return "<host>:<port>" if _is_hostname(match.group(1)) else match.group(0)


def mask_addresses(text: str) -> str:
    """`text` with its IP addresses, host:port pairs and ports masked (see the module doc)."""
    if ":" in text:
        text = _IPV6.sub(_mask_ipv6, text)
    if "." in text:
        text = _IPV4.sub(_mask_ipv4, text)
    if ":" in text:
        text = _HOST_PORT.sub(_mask_host_port, text)
    if "(" in text and "<ip>" in text:
        text = _SOCKADDR.sub(r"(\1<ip>\1, <port>)", text)
    if "port" in text.lower():
        text = _PORT_WORD.sub(r"\1<port>", text)
    return text
