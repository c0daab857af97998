"""The synthetic sender's varying tool error is one failure mode: its request ids always read as ids.

test_signatures_e2e.py's failure message holds `request {id}`; a 12-digit hex id that happened to have no letter
(one trace in 280) was masked as a number, not an id, and the e2e test then saw a second `error_free` signature.
In process, with the SDK's in-memory exporter (the sender's span building, not the wire)."""

from __future__ import annotations

import itertools
import secrets

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from evaluators.signatures.masking import mask_message
from tests.integration import otel_sender

ERROR = "FX rate service unavailable (HTTP 503): converting {amount} EUR, request {id}"
# what secrets.token_hex(6) may return: all digits, mixed, all letters, mixed (each about as rare as the next)
DRAWS = ["123456789012", "0a1b2c3d4e5f", "abcdefabcdef", "1f2e3d4c5b6a"]


def test_request_ids_mask_as_one_template(monkeypatch: pytest.MonkeyPatch) -> None:
    draws = itertools.cycle(DRAWS)
    monkeypatch.setattr(secrets, "token_hex", lambda nbytes=None: next(draws))
    exporter = InMemorySpanExporter()
    failures = otel_sender.send_synthetic(
        exporter, 3, "synthetic-agent", fail_every=1, tool_name="convert_currency", tool_error=ERROR
    )
    assert failures == 0
    messages = [
        event.attributes["exception.message"]
        for span in exporter.get_finished_spans()
        for event in span.events
        if event.name == "exception"
    ]
    assert len(messages) == 6  # two failing tool calls per trace
    assert len({message.rsplit(" ", 1)[-1] for message in messages}) > 1  # the ids vary...
    templates = {mask_message(message) for message in messages}
    assert len(templates) == 1 and all(t.endswith("request <hex>") for t in templates), templates  # ...as ids


def test_request_id_mixes_digits_and_letters() -> None:
    for _ in range(200):
        drawn = otel_sender.request_id()
        assert len(drawn) == 12 and mask_message(drawn) == "<hex>", drawn
