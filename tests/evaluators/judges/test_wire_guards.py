"""The judge client on the wire (real google-genai client, fake Gemini on 127.0.0.1): no redirects, every HTTP
attempt (the client's retries included) under the rate limits, and limiter waits bounded by judgement_timeout."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

import pytest

from evaluators.judges import JudgeSettings, JudgeVerdict, RetrySettings
from evaluators.judges.base import JudgeRequest, LLMJudge
from evaluators.judges.client import JudgeClient
from evaluators.judges.engine import JudgeEngine
from evaluators.judges.replies import JudgeUnavailable
from evaluators.sdk.result import EvalResult, SkipReason
from tests.support.fake_gemini import FakeAnswer, FakeGemini, FakeRequest, ok, status
from tests.support.judge_stub import AnswerJudge, RecordingObserver

pytestmark = pytest.mark.integration  # each test starts a process or a server

KEY = "test-key-redirect-0123456789"
VERDICT = {"score": 1.0, "verdict": "pass", "explanation": "fine"}
PATH = "/v1beta/models/gemini-2.5-flash:generateContent"
T = TypeVar("T")


def settings_for(url: str, *, attempts: int = 4, **extra: Any) -> JudgeSettings:
    """Settings that reach `url`: tiny back-off, no cache (every judgement reaches the fake)."""
    retry = RetrySettings(attempts=attempts, initial_delay=0.01, max_delay=0.02, exp_base=2.0, jitter=0.0)
    base: dict[str, Any] = {"max_concurrency": 4, "requests_per_minute": 0, "cache_size": 0, "request_timeout": 5.0}
    return JudgeSettings(api_key=KEY, base_url=url, retry=retry, **{**base, **extra})


def request(judge: LLMJudge, answer: str) -> JudgeRequest:
    built = judge.request(answer)
    assert isinstance(built, JudgeRequest)
    return built


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coroutine, 60.0)  # a hang guard, never reached when the code is right

    return asyncio.run(bounded())


@pytest.fixture
def fake() -> Iterator[FakeGemini]:
    with FakeGemini() as server:
        yield server
        assert not server.errors


# --- redirects ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Seen:
    method: str
    path: str
    api_key: str | None
    authorization: str | None


class OtherOrigin:
    """A second local HTTP server (another port: another origin) that records every request of any method and
    answers each with a good Gemini reply, so that a client following a redirect to it would succeed."""

    def __init__(self) -> None:
        self.seen: list[Seen] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _any(self) -> None:
                outer.seen.append(
                    Seen(self.command, self.path, self.headers.get("x-goog-api-key"), self.headers.get("authorization"))
                )
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = ok(VERDICT).body
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_HEAD = _any

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> OtherOrigin:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5.0)


def redirect(code: int, location: str) -> FakeAnswer:
    return FakeAnswer(code, b"", (("Location", location),))


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_a_redirect_to_another_origin_is_refused_and_the_key_stays_home(fake: FakeGemini, code: int) -> None:
    async def scenario() -> JudgeUnavailable:
        async with JudgeClient(settings_for(fake.url)) as client:
            with pytest.raises(JudgeUnavailable) as caught:
                await client.generate(model="", system="S", prompt="P", response_schema=JudgeVerdict)
            return caught.value

    with OtherOrigin() as other:
        fake.default = redirect(code, f"{other.url}{PATH}?key={KEY}")
        error = run(scenario())
    assert other.seen == []  # no request at all, so certainly none with the key
    assert error.status == "redirect"
    assert KEY not in error.message and str(code) in error.message
    assert len(fake.requests) == 1  # a redirect is not retried


def test_a_redirect_within_the_origin_is_refused_too(fake: FakeGemini) -> None:
    fake.script(redirect(307, PATH))

    async def scenario() -> str:
        async with JudgeClient(settings_for(fake.url)) as client:
            with pytest.raises(JudgeUnavailable) as caught:
                await client.generate(model="", system="S", prompt="P", response_schema=JudgeVerdict)
            return caught.value.status

    assert run(scenario()) == "redirect"
    assert len(fake.requests) == 1


def test_a_redirected_judgement_is_a_counted_judge_unavailable_skip(fake: FakeGemini) -> None:
    observer = RecordingObserver()
    judge = AnswerJudge()

    async def scenario() -> EvalResult:
        engine = JudgeEngine(settings_for(fake.url), JudgeClient(settings_for(fake.url)), observer)
        try:
            return await engine.judge(judge, request(judge, "Paris"))
        finally:
            await engine.aclose()

    with OtherOrigin() as other:
        fake.default = redirect(307, f"{other.url}{PATH}")
        result = run(scenario())
    assert other.seen == []
    assert result.skip_reason is SkipReason.JUDGE_UNAVAILABLE
    assert "(redirect)" in (result.explanation or "")
    assert observer.statuses == ["redirect"]


# --- rate limits over every attempt ------------------------------------------------------------------------
def most_in_a_minute(stamps: list[float]) -> int:
    """The most stamps in any half-open 60 s window [t, t + 60)."""
    ordered = sorted(stamps)
    return max((sum(1 for s in ordered if t <= s < t + 60.0 - 1e-6) for t in ordered), default=0)


@pytest.mark.parametrize(("global_rpm", "judge_rpm"), [(3, 0), (0, 3)], ids=["global_limit", "judge_limit"])
def test_retries_take_rate_tokens_too(fake: FakeGemini, global_rpm: int, judge_rpm: int) -> None:
    """Judgements against an API that answers 503 and 429: the client retries each 3 times, and every one of
    those HTTP attempts waits for a token, so no minute (on the engine's clock) holds more than the limit.

    One request at a time (max_concurrency 1), so the engine's clock only moves while nothing is in flight and
    the clock read by the fake when a request arrives is the time its token was taken."""
    clock = [0.0]

    async def fake_sleep(seconds: float) -> None:
        clock[0] += seconds
        await asyncio.sleep(0)

    stamps: list[float] = []
    answers = [status(503), status(429)]

    def answer(seen: FakeRequest) -> FakeAnswer:
        stamps.append(clock[0])
        return answers[len(stamps) % 2]

    fake.handler = answer
    config = settings_for(fake.url, attempts=4, requests_per_minute=global_rpm, max_concurrency=1)
    judge = AnswerJudge(requests_per_minute=judge_rpm, max_concurrency=1)
    engine = JudgeEngine(config, JudgeClient(config), monotonic=lambda: clock[0], sleep=fake_sleep)

    async def scenario() -> list[EvalResult]:
        try:
            return await asyncio.gather(*(engine.judge(judge, request(judge, f"answer {i}")) for i in range(3)))
        finally:
            await engine.aclose()

    results = run(scenario())
    assert [r.skip_reason for r in results] == [SkipReason.JUDGE_UNAVAILABLE] * 3
    assert len(stamps) == 3 * 4  # every attempt was made
    assert most_in_a_minute(stamps) <= 3
    assert stamps == pytest.approx([20.0 * i for i in range(12)])  # one token every 20 s, retries included


# --- judgement_timeout over limiter waits ------------------------------------------------------------------
def test_a_judgement_waiting_for_a_retry_token_ends_at_its_deadline(fake: FakeGemini) -> None:
    """At 1 request a minute, the client's first retry waits a minute for its token: the judgement ends at
    judgement_timeout as a judge_unavailable timeout, without sending the retry."""
    fake.default = status(503)
    config = settings_for(fake.url, attempts=3, requests_per_minute=1, judgement_timeout=0.5)
    observer = RecordingObserver()
    judge = AnswerJudge()

    async def scenario() -> EvalResult:
        engine = JudgeEngine(config, JudgeClient(config), observer)
        try:
            return await engine.judge(judge, request(judge, "Paris"))
        finally:
            await engine.aclose()

    result = run(scenario())
    assert result.skip_reason is SkipReason.JUDGE_UNAVAILABLE
    assert "timed out after 0.5 s" in (result.explanation or "")
    assert observer.statuses == ["timeout"]
    assert len(fake.requests) == 1


def test_a_judgement_waiting_for_its_first_token_ends_at_its_deadline(fake: FakeGemini) -> None:
    fake.default = ok(VERDICT)
    config = settings_for(fake.url, requests_per_minute=1, judgement_timeout=0.5)
    judge = AnswerJudge()

    async def scenario() -> list[EvalResult]:
        engine = JudgeEngine(config, JudgeClient(config))
        try:
            return await asyncio.gather(*(engine.judge(judge, request(judge, f"answer {i}")) for i in range(2)))
        finally:
            await engine.aclose()

    first, second = run(scenario())
    assert first.passed is True
    assert second.skip_reason is SkipReason.RATE_LIMITED  # the limit could not take it: not the model's failure
    assert "timed out after 0.5 s waiting for judges.requests_per_minute" in (second.explanation or "")
    assert len(fake.requests) == 1
