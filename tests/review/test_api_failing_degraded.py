"""/api/failing on a result store that cannot answer: a 503 and no traceback in the log, request after request."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from monitor.store.sqlite import ResultStore
from tests.review.server import get
from tests.review.test_api_v1 import api


def test_a_broken_store_answers_503_without_a_traceback_per_request(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "r.db"
    path.write_bytes(b"not a database " * 500)
    store = ResultStore(path)  # starts unavailable (and retries every 30 s)
    assert not store.available
    try:
        with caplog.at_level(logging.INFO), api(None, store=store) as base:
            caplog.clear()
            answers = [get(f"{base}/api/failing") for _ in range(5)]
    finally:
        store.close()
    assert {status for status, _, _ in answers} == {503}
    assert all(body.startswith("the result store is unavailable") for _, _, body in answers)
    assert all(headers["Deprecation"] == "true" for _, headers, _ in answers)
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]
