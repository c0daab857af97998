"""JudgeClient with the real google-genai client against the local fake Gemini server."""

from __future__ import annotations

import asyncio
import json
import logging
import pickle
import subprocess
import sys
import time
from typing import Any

import pytest
from google.auth import credentials as google_credentials

from evaluators.judges import JudgeSettings, JudgeVerdict, RetrySettings
from evaluators.judges.client import JudgeClient, JudgeReply, JudgeUnavailable, http_options
from tests.support.fake_gemini import (
    FakeAnswer,
    FakeGemini,
    FakeRequest,
    blocked,
    filtered,
    malformed_json,
    ok,
    slow,
    status,
)

KEY = "test-key-0123456789"
MODEL = "gemini-3.8-flash"
VERDICT = {"score": 0.75, "verdict": "partial", "explanation": "mostly grounded"}
ATTEMPTS = 3


def settings_for(url: str, *, attempts: int = ATTEMPTS, request_timeout: float = 5.0, **extra: Any) -> JudgeSettings:
    """Settings that reach `url` with tiny retry delays."""
    retry = RetrySettings(attempts=attempts, initial_delay=0.01, max_delay=0.05, exp_base=2.0, jitter=0.0)
    return JudgeSettings(api_key=KEY, base_url=url, request_timeout=request_timeout, retry=retry, **extra)


async def _generate(settings: JudgeSettings, *, model: str = MODEL, prompt: str = "PROMPT") -> JudgeReply:
    async with JudgeClient(settings) as client:
        return await client.generate(model=model, system="SYSTEM", prompt=prompt, response_schema=JudgeVerdict)


def generate(settings: JudgeSettings, **kwargs: Any) -> JudgeReply:
    return asyncio.run(_generate(settings, **kwargs))


def unavailable(settings: JudgeSettings, **kwargs: Any) -> JudgeUnavailable:
    with pytest.raises(JudgeUnavailable) as caught:
        generate(settings, **kwargs)
    return caught.value


@pytest.fixture
def fake() -> Any:
    with FakeGemini() as server:
        yield server
        assert not server.errors


# --- a good answer -------------------------------------------------------------------------------------


@pytest.mark.integration
def test_good_answer_becomes_a_reply_with_text_and_tokens(fake: FakeGemini) -> None:
    fake.script(ok(VERDICT, prompt_tokens=120, output_tokens=30, thoughts_tokens=7, model_version="gemini-x-002"))
    reply = generate(settings_for(fake.url))
    assert JudgeVerdict.model_validate_json(reply.text) == JudgeVerdict(**VERDICT)
    assert (reply.input_tokens, reply.output_tokens) == (120, 37)
    assert (reply.model_version, reply.finish_reason) == ("gemini-x-002", "STOP")
    assert len(fake.requests) == 1


@pytest.mark.integration
def test_request_on_the_wire(fake: FakeGemini) -> None:
    generate(settings_for(fake.url, api_version="v1beta"), prompt="judge this")
    [request] = fake.requests
    assert (request.method, request.version, request.model) == ("generateContent", "v1beta", MODEL)
    assert request.path == f"/v1beta/models/{MODEL}:generateContent"
    assert request.api_key == KEY
    assert request.system == "SYSTEM"
    assert request.body["contents"] == [{"role": "user", "parts": [{"text": "judge this"}]}]
    config = request.generation_config
    assert config["temperature"] == 0
    assert config["responseMimeType"] == "application/json"
    schema = config["responseSchema"]  # the pydantic class, as the API's OpenAPI-style Schema
    assert schema["type"] == "OBJECT"
    assert schema["required"] == ["score", "verdict", "explanation"]
    assert schema["properties"]["score"] == {
        "type": "NUMBER",
        "minimum": 0.0,
        "maximum": 1.0,
        "title": "Score",
        "description": "0 = worst, 1 = best",
    }
    assert "responseJsonSchema" not in config
    assert KEY not in request.path


@pytest.mark.integration
def test_the_safety_settings_turn_the_adjustable_filters_off_on_the_wire(fake: FakeGemini) -> None:
    generate(settings_for(fake.url))
    [request] = fake.requests
    assert request.body["safetySettings"] == [  # top level of the request, beside generationConfig
        {"category": "HARM_CATEGORY_HARASSMENT", "threshold": "OFF"},
        {"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "OFF"},
        {"category": "HARM_CATEGORY_SEXUALLY_EXPLICIT", "threshold": "OFF"},
        {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "threshold": "OFF"},
    ]
    assert "safetySettings" not in request.generation_config


@pytest.mark.integration
def test_configured_safety_settings_are_sent_and_empty_sends_none(fake: FakeGemini) -> None:
    narrow = {"HARM_CATEGORY_DANGEROUS_CONTENT": "BLOCK_ONLY_HIGH", "HARM_CATEGORY_JAILBREAK": "BLOCK_NONE"}
    generate(settings_for(fake.url, safety_settings=narrow))
    generate(settings_for(fake.url, safety_settings={}))
    first, second = fake.requests
    assert first.safety_settings == narrow
    assert "safetySettings" not in second.body


@pytest.mark.integration
def test_the_default_filters_of_the_fake_block_a_request_without_safety_settings(fake: FakeGemini) -> None:
    """The fake's `filtered` acts as Gemini's default filters: without the settings a harmful reply is blocked."""
    fake.handler = lambda request: filtered(request, ok(VERDICT))
    assert generate(settings_for(fake.url)).text == json.dumps(VERDICT)
    assert unavailable(settings_for(fake.url, safety_settings={})).block_reason == "SAFETY"


@pytest.mark.integration
def test_safety_settings_on_the_wire_to_vertex_ai(fake: FakeGemini, monkeypatch: pytest.MonkeyPatch) -> None:
    """Vertex AI takes the same `safetySettings` (its HarmBlockThreshold documents OFF too)."""
    monkeypatch.setattr("google.auth.default", lambda *args, **kwargs: (_Token(), "my-project"))
    settings = JudgeSettings(vertex_project="my-project", base_url=fake.url, retry=RetrySettings(attempts=1))
    generate(settings)
    [request] = fake.requests
    assert request.path.startswith("/v1beta1/projects/my-project/locations/us-central1/publishers/google/models/")
    assert request.headers["authorization"] == "Bearer fake-token"
    assert request.safety_settings == dict.fromkeys(
        (
            "HARM_CATEGORY_HARASSMENT",
            "HARM_CATEGORY_HATE_SPEECH",
            "HARM_CATEGORY_SEXUALLY_EXPLICIT",
            "HARM_CATEGORY_DANGEROUS_CONTENT",
        ),
        "OFF",
    )


class _Token(google_credentials.Credentials):
    """Credentials holding a valid token (application default credentials stand-in; no refresh, no network)."""

    def __init__(self) -> None:
        super().__init__()
        self.token = "fake-token"

    @property
    def expired(self) -> bool:
        return False

    def refresh(self, request: object) -> None:
        raise AssertionError("the test token needs no refresh")


@pytest.mark.integration
def test_empty_model_means_the_settings_model(fake: FakeGemini) -> None:
    generate(settings_for(fake.url, model="gemini-judge-default"), model="")
    assert fake.requests[0].model == "gemini-judge-default"


@pytest.mark.integration
def test_text_joins_the_first_candidates_text_parts_without_thoughts(fake: FakeGemini) -> None:
    body = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [{"text": "thinking...", "thought": True}, {"text": '{"score": 1.0, '}, {"text": "..."}],
                },
                "finishReason": "MAX_TOKENS",
            },
            {"content": {"role": "model", "parts": [{"text": "second candidate"}]}, "finishReason": "STOP"},
        ],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 4, "totalTokenCount": 7},
    }
    fake.script(FakeAnswer(200, json.dumps(body).encode()))
    reply = generate(settings_for(fake.url, model="gemini-judge"), model="")
    assert reply == JudgeReply('{"score": 1.0, ...', 3, 4, "gemini-judge", "MAX_TOKENS")


# --- the client's retries --------------------------------------------------------------------------------


@pytest.mark.integration
def test_429_is_retried_by_the_client_which_ignores_retry_after(fake: FakeGemini) -> None:
    fake.script(status(429, retry_after=2), ok(VERDICT))
    started = time.monotonic()
    reply = generate(settings_for(fake.url))
    assert JudgeVerdict.model_validate_json(reply.text).score == 0.75
    first, second = fake.requests
    assert second.time - first.time < 1.0  # the back-off (10 ms), not Retry-After's 2 s
    assert time.monotonic() - started < 2.0


@pytest.mark.integration
def test_503_every_time_gives_up_after_the_attempts(fake: FakeGemini) -> None:
    fake.default = status(503)
    error = unavailable(settings_for(fake.url))
    assert error.status == "http_503"
    assert "UNAVAILABLE" in error.message
    assert len(fake.requests) == ATTEMPTS


@pytest.mark.integration
def test_before_attempt_is_awaited_before_every_attempt_retries_included(fake: FakeGemini) -> None:
    fake.default = status(503)
    arrived_before: list[int] = []

    async def before_attempt() -> None:
        arrived_before.append(len(fake.requests))

    async def scenario() -> None:
        async with JudgeClient(settings_for(fake.url)) as client:
            with pytest.raises(JudgeUnavailable):
                await client.generate(
                    model=MODEL, system="S", prompt="P", response_schema=JudgeVerdict, before_attempt=before_attempt
                )

    asyncio.run(scenario())
    assert arrived_before == list(range(ATTEMPTS))  # once before each request, none after the last
    assert len(fake.requests) == ATTEMPTS


@pytest.mark.integration
def test_a_proxy_error_page_is_still_an_http_status(fake: FakeGemini) -> None:
    fake.default = status(502, body="<html><body>Bad Gateway</body></html>")
    error = unavailable(settings_for(fake.url))
    assert error.status == "http_502"
    assert len(fake.requests) == ATTEMPTS


@pytest.mark.integration
@pytest.mark.parametrize("code", [400, 401, 403, 404])
def test_client_errors_are_not_retried(fake: FakeGemini, code: int) -> None:
    fake.default = status(code)
    assert unavailable(settings_for(fake.url)).status == f"http_{code}"
    assert len(fake.requests) == 1


@pytest.mark.integration
def test_slow_answers_time_out_every_attempt(fake: FakeGemini) -> None:
    fake.default = slow(3.0, then=ok(VERDICT))
    started = time.monotonic()
    error = unavailable(settings_for(fake.url, attempts=2, request_timeout=0.2))
    assert error.status == "timeout"
    assert fake.wait_for_requests(2, timeout=1.0)
    assert len(fake.requests) == 2  # a timed-out attempt is retried like a 503
    assert time.monotonic() - started < 2.0


@pytest.mark.integration
def test_connection_refused_is_retried_then_connection(caplog: pytest.LogCaptureFixture) -> None:
    fake = FakeGemini().start()
    url = fake.url
    fake.stop()
    started = time.monotonic()
    with caplog.at_level(logging.INFO, logger="google_genai._api_client"):
        error = unavailable(settings_for(url))
    assert error.status == "connection"
    retries = [r for r in caplog.records if r.getMessage().startswith("Retrying")]
    assert len(retries) == ATTEMPTS - 1  # the SDK's before_sleep log: one line per retry
    assert time.monotonic() - started < 3.0


# --- answers without usable content ----------------------------------------------------------------------


@pytest.mark.integration
def test_a_candidate_without_text_is_no_content(fake: FakeGemini) -> None:
    fake.script(FakeAnswer(200, json.dumps({"candidates": [{"finishReason": "MAX_TOKENS", "index": 0}]}).encode()))
    error = unavailable(settings_for(fake.url))
    assert (error.status, error.block_reason) == ("no_content", "")
    assert "MAX_TOKENS" in error.message


@pytest.mark.integration
def test_a_reply_blocked_for_safety_is_a_block_with_its_reason_and_cost(fake: FakeGemini) -> None:
    fake.script(blocked("SAFETY", prompt_tokens=42))
    error = unavailable(settings_for(fake.url))
    assert (error.status, error.block_reason) == ("blocked", "SAFETY")
    assert error.message == "the reply was blocked: finish reason SAFETY (HARM_CATEGORY_DANGEROUS_CONTENT HIGH)"
    assert (error.input_tokens, error.output_tokens) == (42, 0)
    assert len(fake.requests) == 1  # a block is not retried


@pytest.mark.integration
def test_a_blocked_prompt_is_a_block(fake: FakeGemini) -> None:
    fake.script(blocked("PROHIBITED_CONTENT", prompt=True, category="HARM_CATEGORY_HARASSMENT", probability="MEDIUM"))
    error = unavailable(settings_for(fake.url))
    assert (error.status, error.block_reason) == ("blocked", "PROHIBITED_CONTENT")
    assert error.message == "the prompt was blocked: PROHIBITED_CONTENT (HARM_CATEGORY_HARASSMENT MEDIUM)"


@pytest.mark.integration
@pytest.mark.parametrize("reason", ["BLOCKLIST", "SPII", "RECITATION", "IMAGE_SAFETY"])
def test_every_filter_finish_reason_is_a_block(fake: FakeGemini, reason: str) -> None:
    fake.script(blocked(reason))
    assert unavailable(settings_for(fake.url)).block_reason == reason


@pytest.mark.integration
def test_a_reply_cut_by_a_filter_is_blocked_even_with_text(fake: FakeGemini) -> None:
    fake.script(ok('{"score": 1.0, "verdict": "pa', finish_reason="SAFETY"))
    assert unavailable(settings_for(fake.url)).block_reason == "SAFETY"


@pytest.mark.integration
def test_an_unknown_block_reason_is_labelled_other(fake: FakeGemini) -> None:
    fake.script(blocked("weird reason; {x}", prompt=True))
    with pytest.warns(UserWarning, match="not a valid BlockedReason"):  # google-genai's own warning
        error = unavailable(settings_for(fake.url))
    assert (error.status, error.block_reason) == ("blocked", "OTHER")


@pytest.mark.integration
def test_malformed_json_is_a_bad_response(fake: FakeGemini) -> None:
    fake.script(malformed_json())
    assert unavailable(settings_for(fake.url)).status == "bad_response"


@pytest.mark.integration
def test_the_api_key_never_reaches_the_message(fake: FakeGemini) -> None:
    fake.default = status(400, message=f"API key not valid: {KEY}. Please pass a valid API key.")
    error = unavailable(settings_for(fake.url))
    assert error.status == "http_400"
    assert KEY not in str(error) and KEY not in repr(error)
    assert "***" in error.message
    assert error.__cause__ is None and error.__suppress_context__  # no SDK error body in a traceback either


def test_unavailable_pickles_with_its_fields() -> None:
    error = pickle.loads(pickle.dumps(JudgeUnavailable("http_429", "slow down", input_tokens=3)))
    assert (error.status, error.message, error.input_tokens, error.output_tokens) == ("http_429", "slow down", 3, 0)
    assert str(error) == "http_429: slow down"
    block = pickle.loads(pickle.dumps(JudgeUnavailable("blocked", "the reply was blocked", block_reason="SAFETY")))
    assert (block.status, block.block_reason) == ("blocked", "SAFETY")


# --- construction ------------------------------------------------------------------------------------------


def test_http_options_come_from_the_settings() -> None:
    retry = RetrySettings(attempts=5, initial_delay=0.5, max_delay=8, exp_base=3, jitter=0.25, http_status_codes=[429])
    settings = JudgeSettings(
        api_key=KEY, base_url="http://127.0.0.1:9", api_version="v1beta", request_timeout=2.5, retry=retry
    )
    options = http_options(settings)
    assert (options.base_url, options.api_version, options.timeout) == ("http://127.0.0.1:9", "v1beta", 2500)
    assert options.retry_options is not None
    assert options.retry_options.model_dump() == {
        "attempts": 5,
        "initial_delay": 0.5,
        "max_delay": 8.0,
        "exp_base": 3.0,
        "jitter": 0.25,
        "http_status_codes": [429],
    }


def test_vertex_settings_build_a_vertex_client_without_a_network_call(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"):
        monkeypatch.delenv(name, raising=False)

    def no_adc(*args: object, **kwargs: object) -> None:
        raise AssertionError("application default credentials must not be loaded when the client is built")

    monkeypatch.setattr("google.auth.default", no_adc)
    client = JudgeClient(JudgeSettings(vertex_project="my-project", vertex_location="europe-west4"))
    api = client._client._api_client
    assert client.vertexai
    assert (api.project, api.location, api.api_key) == ("my-project", "europe-west4", None)
    assert api._http_options.base_url == "https://europe-west4-aiplatform.googleapis.com/"
    assert "x-goog-api-key" not in (api._http_options.headers or {})
    asyncio.run(client.aclose())


@pytest.mark.parametrize(
    "settings",
    [JudgeSettings(), JudgeSettings(api_key=KEY, vertex_project="my-project")],
    ids=["neither", "both"],
)
def test_exactly_one_of_api_key_and_vertex_project(settings: JudgeSettings) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        JudgeClient(settings)


# --- the fake itself -----------------------------------------------------------------------------------------


@pytest.mark.integration
def test_fake_counts_requests_in_flight(fake: FakeGemini) -> None:
    seen: list[FakeRequest] = []

    def handler(request: FakeRequest) -> FakeAnswer:
        seen.append(request)
        return slow(0.2, then=ok(VERDICT))

    fake.handler = handler

    async def three_at_once() -> list[JudgeReply]:
        async with JudgeClient(settings_for(fake.url)) as client:
            calls = [
                client.generate(model=MODEL, system="S", prompt=f"P{n}", response_schema=JudgeVerdict) for n in range(3)
            ]
            return await asyncio.gather(*calls)

    assert len(asyncio.run(three_at_once())) == 3
    assert fake.max_in_flight == 3 and fake.wait_idle()
    assert sorted(r.prompt for r in seen) == ["P0", "P1", "P2"]


@pytest.mark.integration
def test_fake_stop_wakes_slow_answers_and_a_broken_handler_is_a_500() -> None:
    fake = FakeGemini(handler=lambda request: 1 / 0).start()  # type: ignore[arg-type,return-value]
    try:
        assert unavailable(settings_for(fake.url, attempts=1)).status == "http_500"
        assert len(fake.errors) == 1 and isinstance(fake.errors[0], ZeroDivisionError)
        fake.handler = None
        fake.default = slow(30.0)

        async def hang() -> None:
            async with JudgeClient(settings_for(fake.url, attempts=1, request_timeout=30.0)) as client:
                await client.generate(model=MODEL, system="S", prompt="P", response_schema=JudgeVerdict)

        async def stop_while_waiting() -> JudgeUnavailable:
            task = asyncio.create_task(hang())
            while fake.in_flight == 0:
                await asyncio.sleep(0.01)
            started = time.monotonic()
            await asyncio.to_thread(fake.stop)
            assert time.monotonic() - started < 1.0
            with pytest.raises(JudgeUnavailable) as caught:
                await task
            return caught.value

        assert asyncio.run(stop_while_waiting()).status == "connection"
    finally:
        fake.stop()


@pytest.mark.integration
def test_fake_is_reachable_from_another_process(fake: FakeGemini) -> None:
    fake.script(ok("from a subprocess"))
    code = (
        "import json, sys, urllib.request\n"
        "body = json.dumps({'contents': [{'role': 'user', 'parts': [{'text': 'hi'}]}]}).encode()\n"
        "request = urllib.request.Request(sys.argv[1] + '/v1beta/models/m1:generateContent', data=body,\n"
        "    headers={'x-goog-api-key': 'k2', 'Content-Type': 'application/json'})\n"
        "with urllib.request.urlopen(request, timeout=5) as answer:\n"
        "    print(json.load(answer)['candidates'][0]['content']['parts'][0]['text'])\n"
    )
    done = subprocess.run([sys.executable, "-c", code, fake.url], capture_output=True, text=True, timeout=20)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "from a subprocess"
    [request] = fake.requests
    assert (request.model, request.api_key, request.prompt) == ("m1", "k2", "hi")
