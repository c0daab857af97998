"""Issue 38's walk of the review queue: the real daemon evaluates agent runs with two rule evaluators whose alerts
fire (every run has a failing tool call) and an LLM judge (the real google-genai client against the fake Gemini,
scoring near its threshold); a reviewer in a real headless Chromium works through /review/queue, agreeing or
disagreeing as the shown verdict deserves, for as many reviews as three evaluators need to reach calibrate's
minimum. The reviews go round the evaluators (review.queue.per_evaluator_target, default calibrate's minimum), so
the real `agent-monitor calibrate` then suggests a threshold for the judge. Before the spreading, every one of these
reviews went to the two firing evaluators and calibrate had none of the judge's."""

from __future__ import annotations

import collections
import dataclasses
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from evaluators.traces import read_paths
from monitor.review.calibration import MIN_REVIEWS
from tests.integration.conftest import CORPUS, project_env
from tests.integration.daemon_process import ROOT, DaemonProcess
from tests.integration.otel_sender import make_exporter, readable
from tests.monitor.web.pages.review_store import log_in_on_the_way
from tests.monitor.web.pages.test_browser import TIMEOUT_MS, browser  # noqa: F401 (the fixture)
from tests.support.fake_gemini import FakeGemini, FakeRequest, ok

pytestmark = pytest.mark.integration

TOKEN = "spread-queue-token"
SCENARIO = "oi_openai__tool_error"  # agent → LLM → failing tool → LLM
ANSWER = "Sorry, I couldn't convert"
RUNS = 30  # each gives a failure of both firing evaluators and a judge verdict near its threshold
FIRING = ("error_free", "no_tool_errors")
JUDGE = "answer_quality"
ALERT = {"min_pass_ratio": 0.9, "window": "5m", "for": "1s", "min_samples": 5}
CASE = re.compile(r"case (\d+)")


def judge_by_case(request: FakeRequest):
    """Runs of an even case number pass at 0.6, the others fail at 0.4: all within the queue's near_threshold
    margin of the judge's threshold 0.5."""
    answer = request.prompt.split('<data name="answer">', 1)[-1]
    found = CASE.search(answer)
    good = found is not None and int(found.group(1)) % 2 == 0
    reply = {"score": 0.6 if good else 0.4, "verdict": "pass" if good else "fail", "explanation": "judged"}
    return ok(reply, prompt_tokens=50, output_tokens=10)


def send_runs(endpoint: str) -> None:
    """The scenario RUNS times, each under a trace id of its own and an answer naming its case."""
    template = read_paths([CORPUS / SCENARIO]).spans
    spans = []
    for n in range(RUNS):
        for record in template:
            attributes = {
                key: value.replace(ANSWER, f"{ANSWER} (case {n})") if isinstance(value, str) else value
                for key, value in record.attributes.items()
            }
            spans.append(readable(dataclasses.replace(record, trace_id=f"{n + 1:08x}" * 4, attributes=attributes)))
    exporter = make_exporter("grpc", endpoint, {}, None)
    try:
        assert exporter.export(spans).name == "SUCCESS"
    finally:
        exporter.shutdown()


def judged_in_store(path: Path) -> int:
    """The judge's verdicts in the store: failing rows and passes packed in the traces."""
    with sqlite3.connect(path) as db:
        failing = db.execute("SELECT COUNT(*) FROM results WHERE evaluator = ? AND passed = 0", (JUDGE,)).fetchone()
        packed = db.execute("SELECT passed FROM traces WHERE passed IS NOT NULL").fetchall()
    return int(failing[0]) + sum(text.count(f'"{JUDGE}"') for (text,) in packed)


def test_reviews_spread_over_the_evaluators_give_calibrate_a_judge_suggestion(  # type: ignore[no-untyped-def]
    browser,  # noqa: F811
    tmp_path: Path,
) -> None:
    with FakeGemini(judge_by_case) as fake:
        config = {
            "api": {"auth": {"bearer_token": TOKEN}},
            "judges": {
                "gemini_api_key": "test-key",
                "base_url": fake.url,
                "retry": {"attempts": 1},
                "requests_per_minute": 0,
            },
            "evaluators": [
                {"name": "error_free", "alert": ALERT},
                {"module": "tests.integration.evals_fixture:no_tool_errors", "alert": ALERT},
                {"module": "tests.integration.evals_fixture:answer_quality"},
            ],
        }
        (tmp_path / "daemon").mkdir()
        daemon = DaemonProcess(tmp_path / "daemon", config, env=project_env())
        daemon.start()
        try:
            send_runs(f"127.0.0.1:{daemon.grpc_port}")
            store = daemon.workdir / "results.db"
            assert daemon.wait_for_condition(lambda: judged_in_store(store) == RUNS, timeout=60), daemon.output()
            for name in FIRING:
                assert daemon.value("agent_eval_results_total", evaluator=name, outcome="fail") == RUNS
            firing = lambda: all(daemon.value("agent_eval_alert_active", evaluator=n) == 1 for n in FIRING)  # noqa: E731
            assert daemon.wait_for_condition(firing, timeout=30), daemon.output()  # breached for 1 s, between scrapes

            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(TIMEOUT_MS)
            log_in_on_the_way(page, daemon.api_base, "/review/queue", TOKEN)
            page.fill("#queue-reviewer", "ann")
            reviewed: collections.Counter[str] = collections.Counter()
            judge_reasons = set()
            for _ in range(3 * MIN_REVIEWS):
                evaluator = page.input_value("input[name=evaluator]")
                passing = "it passes" in page.inner_text("#queue-agree")
                reason = page.inner_text(".queue-reason")
                if evaluator == JUDGE:
                    judge_reasons.add(reason)
                # the reviewer reads the answer: a failing tool call is a real failure; the judge's passes of an
                # apology are misses every third time, its failures right
                disagree = evaluator == JUDGE and passing and reviewed[JUDGE] % 3 == 0
                with page.expect_navigation():
                    page.click("#queue-disagree" if disagree else "#queue-agree")
                reviewed[evaluator] += 1
            assert dict(reviewed) == {name: MIN_REVIEWS for name in (*FIRING, JUDGE)}
            assert judge_reasons and all("reviews go round the evaluators" in r for r in judge_reasons)
            assert f"you {3 * MIN_REVIEWS} · everyone {3 * MIN_REVIEWS}" in page.inner_text("#queue-progress")
        finally:
            assert daemon.stop() == 0

    calibrated = subprocess.run(
        [
            sys.executable,
            "-m",
            "monitor.cli",
            "calibrate",
            "--evaluator",
            JUDGE,
            "--config",
            str(daemon.config_path),
            "--store",
            str(store),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, **project_env()},
    )
    assert calibrated.returncode == 0, calibrated.stderr
    assert f"{JUDGE}: {MIN_REVIEWS} scored reviews" in calibrated.stdout, calibrated.stdout
    assert "no suggestion" not in calibrated.stdout
    assert re.search(r"(suggested threshold [0-9.]+|the configured threshold 0.5) matches reviewers best",
                     calibrated.stdout), calibrated.stdout  # fmt: skip
