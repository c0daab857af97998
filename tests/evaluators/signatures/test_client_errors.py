"""Issue 37: real error messages of real clients (tests/fixtures/client_errors/messages.json, recorded by record.py
on loopback addresses and closed ports) group into exactly one signature per kind of failure, and different kinds
into different signatures, through the real path: a failed span with an `exception` event, as OpenTelemetry's
`record_exception` writes it → `span_error` → `failure_signature`."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from evaluators import builtin
from evaluators.signatures import FailureSignature, failure_signature
from evaluators.traces.records import SpanEvent
from tests.support.spanfactory import make_span, next_start, trace_of

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "client_errors" / "messages.json"
MESSAGES: list[dict[str, Any]] = json.loads(FIXTURE.read_text())
KINDS = sorted({(m["library"], m["kind"]) for m in MESSAGES})
# what a masked template must not keep: a loopback address or a port after a colon
ADDRESS_LEFT = re.compile(r"127\.0\.0\.\d|::1\b|:\d{2,5}\b")


def signature_of(message: dict[str, Any], tool: str = "lookup_order") -> FailureSignature:
    """The signature error_free gives a failed tool span that recorded `message`'s exception."""
    event = {"exception.type": message["type"], "exception.message": message["message"], "exception.escaped": "False"}
    span = make_span(
        f"execute_tool {tool}",
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool},
        status=2,
        status_message=f"{message['type'].rsplit('.', 1)[-1]}: {message['message']}",
        events=[SpanEvent("exception", next_start(), event)],
    )
    result = builtin("error_free").run(trace_of(span))
    assert result.passed is False and result.failure is not None
    return failure_signature("error_free", "trace", None, result.failure, result.explanation)


def test_the_fixture_holds_every_kind_twice_or_more_on_other_addresses() -> None:
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for m in MESSAGES:
        counts[(m["library"], m["kind"])] += 1
        assert m["version"] and m["type"] and isinstance(m["message"], str)
    assert all(n >= 2 for n in counts.values()), counts
    libraries = {library for library, _ in counts}
    assert libraries >= {"urllib", "httpx", "requests", "aiohttp", "psycopg", "grpcio", "redis", "botocore"}
    assert libraries >= {"openai", "anthropic", "google-genai"}
    hosts = {h for m in MESSAGES for h in re.findall(r"127\.0\.0\.[123]|::1", m["message"])}
    assert hosts == {"127.0.0.1", "127.0.0.2", "127.0.0.3", "::1"}


@pytest.mark.parametrize(("library", "kind"), KINDS, ids=[f"{library}-{kind}" for library, kind in KINDS])
def test_each_kind_of_failure_is_one_signature(library: str, kind: str) -> None:
    occurrences = [m for m in MESSAGES if (m["library"], m["kind"]) == (library, kind)]
    signatures = {signature_of(m).id: signature_of(m) for m in occurrences}
    assert len(signatures) == 1, [s.template for s in signatures.values()]
    (signature,) = signatures.values()
    assert not ADDRESS_LEFT.search(signature.template), signature.template
    if kind.startswith("http_") and library != "botocore":  # botocore's message names the S3 code, not the status
        assert signature.error_type == kind


def test_different_kinds_are_different_signatures() -> None:
    by_kind = {(m["library"], m["kind"]): signature_of(m).id for m in MESSAGES}
    assert len(set(by_kind.values())) == len(by_kind)
    for library in {library for library, _ in by_kind}:
        kinds = {kind for lib, kind in by_kind if lib == library}
        if {"connection_refused", "http_503"} <= kinds:
            assert by_kind[(library, "connection_refused")] != by_kind[(library, "http_503")]


def test_the_same_kind_on_another_tool_is_another_signature() -> None:
    message = next(m for m in MESSAGES if m["kind"] == "connection_refused" and m["library"] == "psycopg")
    assert signature_of(message, "lookup_order").id != signature_of(message, "refund_order").id
