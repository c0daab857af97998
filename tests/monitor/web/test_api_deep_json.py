"""JSON a client sends, nested past what Python's parser recurses through (monitor/client_json.py): a review body
nested 16,000 deep is a 400 with a clear error on the real API on 127.0.0.1 (it was a 500 with a traceback), and
the queue's skipped-list cookie nested as deep reads as no skips."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor import client_json
from monitor.review.review_params import MAX_BODY_BYTES
from monitor.store.sqlite import ResultStore
from monitor.web.pages.queue import skipped_of
from tests.support.reviews_app import BEARER, fill, review_body, reviews_port, send

DEEP_BODIES = [
    b"[" * 16_000,  # the probe's: 16,000 deep, unclosed
    b'{"trace_id": ' + b"[" * 8_000 + b"]" * 8_000 + b"}",  # well-formed, 8,000 deep
    b'{"note": ' + b'{"a":' * 2_000 + b"1" + b"}" * 2_000 + b"}",
]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ResultStore]:
    store = ResultStore(tmp_path / "results.db", results="all")
    fill(store)
    yield store
    store.close()


@pytest.mark.integration
def test_a_deeply_nested_review_body_is_a_400(store: ResultStore) -> None:
    with reviews_port(store) as port:
        for raw in DEEP_BODIES:
            assert len(raw) <= MAX_BODY_BYTES
            status, _, answer = send(port.url("/reviews"), "POST", headers=BEARER, raw=raw)
            assert status == 400, answer
            assert "nested deeper than" in str(answer) and "Traceback" not in str(answer)
        # a body within the limit still works, brackets inside strings do not count
        body = review_body(note="[{" * 900)
        status, _, written = send(port.url("/reviews"), "POST", body, BEARER)
        assert status == 201, written
        assert written["note"] == "[{" * 900


def test_a_deeply_nested_skipped_cookie_reads_as_no_skips() -> None:
    cookie = base64.urlsafe_b64encode(b"[" * 4_000 + b"]" * 500).decode().rstrip("=")
    assert skipped_of(cookie) == []


def test_the_depth_limit_counts_containers_not_brackets_in_strings() -> None:
    assert client_json.loads('{"a": "[[[[{{{{"}', max_depth=1) == {"a": "[[[[{{{{"}
    assert client_json.loads(b"[[1]]", max_depth=2) == [[1]]
    with pytest.raises(client_json.JsonTooDeep):
        client_json.loads(b"[[[1]]]", max_depth=2)
