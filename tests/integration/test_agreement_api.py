"""The daemon's /api/v1/evaluators and /review/results show reviewers' agreement with an evaluator, from the reviews
in force in its store: a review written into the store (as the review API writes it) shows within the cache's
few seconds, with its counts and interval; an evaluator never reviewed has `agreement: null`."""

from __future__ import annotations

import json
import sqlite3
import time

import pytest

from monitor.store.reviews import ResultKey, ReviewInput, write_review
from tests.integration.otlp_raw import post
from tests.integration.test_api_auth import failing_tool_trace

pytestmark = pytest.mark.integration
EVALUATORS = [{"name": "error_free"}, {"name": "error_free", "id": "never_reviewed"}]


def test_a_review_in_the_store_shows_in_the_evaluators_agreement(daemon_factory):
    daemon = daemon_factory({}, evaluators=EVALUATORS)
    assert post(daemon.http_port, failing_tool_trace())[0] == 200

    def stored() -> bool:
        status, body, _ = daemon.get("/api/v1/results?outcome=fail&evaluator=error_free")
        return status == 200 and bool(json.loads(body)["items"])

    assert daemon.wait_for_condition(stored)
    with sqlite3.connect(daemon.workdir / "results.db", timeout=10) as db:  # the daemon writes it too (WAL)
        key = ResultKey("ab" * 16, "error_free", "trace", "01" * 8)  # a trace-level result names the root span
        write_review(db, ReviewInput(key, "disagree", "ann"), time.time())

    def agreement() -> dict | None:
        infos = {i["name"]: i for i in json.loads(daemon.get("/api/v1/evaluators")[1])}
        assert infos["never_reviewed"]["agreement"] is None
        return infos["error_free"]["agreement"]

    assert daemon.wait_for_condition(lambda: agreement() is not None)
    figures = agreement()
    assert figures is not None and figures["reviews"] == 1 and figures["skips_reviewed"] == 0
    alarms = figures["alarm_precision"]
    assert (alarms["confirmed"], alarms["reviewed"], alarms["ratio"], alarms["lower"]) == (0, 1, 0.0, 0.0)
    assert alarms["upper"] == pytest.approx(0.7935, abs=1e-4)  # Wilson 95% for 0 of 1
    assert figures["pass_confirmation"] == {"confirmed": 0, "reviewed": 0, "ratio": None, "lower": None,
                                            "upper": None}  # fmt: skip
    status, body, _ = daemon.get("/review/results?evaluator=error_free")
    assert status == 200 and "alarms confirmed 0.0% (0 of 1, 95% CI 0.0%–79.3%)" in body.decode()
