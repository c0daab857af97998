"""A trace's dimensions as the store keeps them: a code per (dimension, value), packed as bytes, and the pairs
as text beside them.

A code is 64 bits: the top `DIMENSION_BITS` a hash of the dimension's name, the rest a hash of the value within
it (BLAKE2b), so that a worker process codes a value alone, with no dictionary shared between processes and
replicas, and a reader finds each code's dimension with a shift. Two values colliding (within one dimension,
one chance in 2**44 per pair) are counted as one. The text (`dimension \\x1e value`, pairs joined by \\x1f) names
the codes a reader reports: it is decoded only for the few rows that hold them.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Sequence
from functools import lru_cache

DIMENSION_BITS = 20
VALUE_BITS = 64 - DIMENSION_BITS
_VALUE_MASK = (1 << VALUE_BITS) - 1
PAIR = "\x1e"
SEPARATOR = "\x1f"
MAX_PAIRS = 64  # per trace
MAX_VALUE_CHARS = 128
_CONTROL = dict.fromkeys(range(32), " ")

Pair = tuple[str, str]
# The dimensions whose values are the agent's developers' vocabulary (services, models, tools, agents, Kubernetes
# and cloud resources) or buckets: stored as they are. Every other value (the user, session and tenant ids, the
# prompt templates, the configured attributes) is masked like every stored text before it is coded
# (store/packing.py): a user id may be an e-mail address. monitor/explain/dimensions.py makes them (a test holds
# this set to its built-in names).
UNMASKED = frozenset({
    "service", "service.version", "deployment.environment", "k8s.namespace.name", "k8s.deployment.name",
    "k8s.pod.name", "cloud.region", "cloud.availability_zone", "host.name", "agent", "model", "provider", "tool",
    "tool.failed", "input.language", "input.length", "turn", "hour",
})  # fmt: skip


@lru_cache(maxsize=1024)
def dimension_code(dimension: str) -> int:
    """The top bits of every code of `dimension`, as a number below 2**DIMENSION_BITS."""
    digest = hashlib.blake2b(dimension.encode("utf-8", "replace"), digest_size=4).digest()
    return int.from_bytes(digest, "little") >> (32 - DIMENSION_BITS)


@lru_cache(maxsize=16384)
def code_of(dimension: str, value: str) -> int:
    """The code of `value` of `dimension` (an unsigned 64-bit number)."""
    digest = hashlib.blake2b(value.encode("utf-8", "replace"), digest_size=8, key=dimension.encode()[:64]).digest()
    return (dimension_code(dimension) << VALUE_BITS) | (int.from_bytes(digest, "little") & _VALUE_MASK)


def clean_value(value: object) -> str:
    """`value` as a dimension keeps it: text without control characters, stripped, at most MAX_VALUE_CHARS."""
    text = str(value)[: MAX_VALUE_CHARS * 2].translate(_CONTROL).strip()
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def packed(pairs: Iterable[Pair]) -> tuple[bytes, str]:
    """(codes, text) of `pairs` (distinct, at most MAX_PAIRS, each already `clean_value`d)."""
    kept = list(dict.fromkeys(pairs))[:MAX_PAIRS]
    codes = [code_of(d, v) for d, v in kept]
    return struct.pack(f"<{len(codes)}Q", *codes), SEPARATOR.join(f"{d}{PAIR}{v}" for d, v in kept)


def unpacked_text(text: str | None) -> list[Pair]:
    """The pairs of a packed text (a malformed part is left out)."""
    if not text:
        return []
    pairs = []
    for part in text.split(SEPARATOR):
        dimension, mark, value = part.partition(PAIR)
        if mark:
            pairs.append((dimension, value))
    return pairs


def named(code: int, text: str | None) -> Pair | None:
    """The (dimension, value) of `code` among a row's packed text (None: the row does not hold it)."""
    for dimension, value in unpacked_text(text):
        if code_of(dimension, value) == code:
            return dimension, value
    return None


def verdict_name(evaluator: str) -> str:
    """`evaluator` as a trace's verdict lists (`trace_signals.failed_evaluators`, `passed_evaluators`: `|a|b|`) hold
    it: its `|` as `¦`, the lists' separator."""
    return evaluator.replace("|", "¦")


def codes_of(data: bytes | None) -> Sequence[int]:
    """The codes of one row (for tests and small reads; readers use numpy.frombuffer on many rows)."""
    if not data:
        return ()
    return struct.unpack(f"<{len(data) // 8}Q", data[: len(data) // 8 * 8])


__all__ = [
    "DIMENSION_BITS",
    "MAX_PAIRS",
    "MAX_VALUE_CHARS",
    "UNMASKED",
    "VALUE_BITS",
    "Pair",
    "clean_value",
    "code_of",
    "codes_of",
    "dimension_code",
    "named",
    "packed",
    "unpacked_text",
    "verdict_name",
]
