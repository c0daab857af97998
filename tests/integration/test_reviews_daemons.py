"""Reviews through real daemons: two replicas on one PostgreSQL database (a real server) share them — a review
posted to one is read on the other, with its audit trail when the other changes it, each replica counting what it
wrote — and a daemon on SQLite restarted still shows its reviews. Traces arrive through the real OTel SDK
exporter; reviews are posted with the API token read from `api.auth.bearer_token_file`."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import CORPUS, project_env, send
from tests.integration.daemon_process import DaemonProcess

pytestmark = pytest.mark.integration

TOKEN = "reviewers-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
SCENARIO = "otel_genai__tool_error"  # a failing tool call: error_free fails on it


def config(workdir: Path, store: dict[str, Any]) -> dict[str, Any]:
    token_file = workdir / "api-token"
    token_file.write_text(TOKEN + "\n")
    return {"store": store, "api": {"auth": {"bearer_token_file": str(token_file)}}, "evaluation": {"workers": 1}}


def post(daemon: DaemonProcess, body: dict[str, Any]) -> tuple[int, Any]:
    request = urllib.request.Request(
        f"{daemon.api_base}/api/v1/reviews",
        data=json.dumps(body).encode(),
        method="POST",
        headers={**BEARER, "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def read(daemon: DaemonProcess, path: str) -> Any:
    status, body, _ = daemon.get(f"/api/v1{path}", BEARER)
    assert status == 200, body
    return json.loads(body)


def failing_result(daemon: DaemonProcess) -> dict[str, Any]:
    """The first failing result the daemon stored (waiting for the trace to be evaluated)."""
    found: list[dict[str, Any]] = []

    def stored() -> bool:
        found[:] = read(daemon, "/results?outcome=fail")["items"]
        return bool(found)

    assert daemon.wait_for_condition(stored, timeout=60), daemon.output()[-2000:]
    return found[0]


def review_of(result: dict[str, Any], **fields: Any) -> dict[str, Any]:
    key = {k: result[k] for k in ("trace_id", "evaluator", "level")}
    return {**key, "span_id": result["span_id"], "agreement": "disagree", "reviewer": "ann", **fields}


def review_on_trace(daemon: DaemonProcess, result: dict[str, Any]) -> dict[str, Any] | None:
    detail = read(daemon, f"/traces/{result['trace_id']}")
    key = (result["evaluator"], result["level"], result["span_id"])
    same = [r for r in detail["results"] if (r["evaluator"], r["level"], r["span_id"]) == key]
    assert len(same) == 1
    return same[0]["review"]


def test_a_review_posted_to_one_replica_is_read_on_the_other(tmp_path: Path, postgres_url: str) -> None:
    daemons = []
    for n in range(2):
        workdir = tmp_path / f"replica{n}"
        workdir.mkdir()
        daemons.append(DaemonProcess(workdir, config(workdir, {"url": postgres_url}), env=project_env()))
    try:
        for daemon in daemons:
            daemon.launch()
        for daemon in daemons:
            daemon.wait_ready(60)
        first, second = daemons
        send("grpc", f"127.0.0.1:{first.grpc_port}", "corpus", str(CORPUS / SCENARIO))
        result = failing_result(first)

        status, written = post(first, review_of(result, note="the tool error was expected"))
        assert status == 201, written
        brief = review_on_trace(second, result)
        assert brief is not None and (brief["agreement"], brief["reviewer"], brief["note"]) == (
            "disagree", "ann", "the tool error was expected",
        )  # fmt: skip
        listed = read(second, "/reviews")["items"]
        assert [r["review_id"] for r in listed] == [written["review_id"]] and listed[0]["false_alarm"] is True

        status, changed = post(second, review_of(result, agreement="agree", reviewer="bob"))
        assert status == 201, changed
        query = urllib.parse.urlencode({k: result[k] or "" for k in ("trace_id", "evaluator", "level", "span_id")})
        trail = read(first, f"/reviews/history?{query}")["items"]
        assert [(r["reviewer"], r["agreement"]) for r in trail] == [("bob", "agree"), ("ann", "disagree")]
        assert review_on_trace(first, result)["reviewer"] == "bob"  # type: ignore[index]
        evaluator = result["evaluator"]
        assert first.value("agent_eval_reviews_total", evaluator=evaluator, verdict="fail", agreement="disagree") == 1
        assert first.value("agent_eval_reviews_total", evaluator=evaluator, agreement="agree") == 0
        assert second.value("agent_eval_reviews_total", evaluator=evaluator, verdict="fail", agreement="agree") == 1
    finally:
        for daemon in daemons:
            daemon.stop()


def test_a_restarted_daemon_still_shows_its_reviews(tmp_path: Path) -> None:
    store = {"path": str(tmp_path / "results.db")}
    with DaemonProcess(tmp_path, config(tmp_path, store), env=project_env()) as daemon:
        send("grpc", f"127.0.0.1:{daemon.grpc_port}", "corpus", str(CORPUS / SCENARIO))
        result = failing_result(daemon)
        status, written = post(daemon, review_of(result, corrected_score=1.0))
        assert status == 201, written
    with DaemonProcess(tmp_path, config(tmp_path, store), env=project_env()) as again:
        assert [r["review_id"] for r in read(again, "/reviews")["items"]] == [written["review_id"]]
        brief = review_on_trace(again, result)
        assert brief is not None and (brief["reviewer"], brief["corrected_score"]) == ("ann", 1.0)
        assert again.value("agent_eval_reviews_total") == 0  # counted by the process that wrote it, once
