"""A local fake of the Gemini REST API (`POST /{version}/models/{model}:generateContent`) for the test suite.

A real socket server on 127.0.0.1 (threaded `http.server`, one thread per request), so a client in the test
process and a daemon subprocess can both reach it. Scriptable per test: a queue of answers (`script`), then a
handler `(FakeRequest) -> FakeAnswer`, then the default answer. Every request is recorded, and the requests in
flight are counted (with the most seen at once).

    with FakeGemini() as fake:
        fake.script(status(429, retry_after=1), ok({"score": 1.0, "verdict": "pass", "explanation": "x"}))
        settings = JudgeSettings(api_key="k", base_url=fake.url)
"""

from __future__ import annotations

import collections
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# /v1beta/models/gemini-3.8-flash:generateContent, or Vertex AI's
# /v1beta1/projects/p/locations/l/publishers/google/models/gemini-3.8-flash:generateContent
_PATH = re.compile(r"^/(?P<version>[^/]+)/(?:.*/)?models/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)$")

# google.rpc.Code names the API puts in error.status, by HTTP status.
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}

DEFAULT_MODEL_VERSION = "gemini-fake-001"


@dataclass(frozen=True, slots=True)
class FakeRequest:
    """One request as the fake received it; `time` is `time.monotonic()` on arrival."""

    method: str  # the RPC after the colon: "generateContent"
    version: str  # "v1beta"
    model: str  # "gemini-3.8-flash"
    path: str
    api_key: str | None  # the x-goog-api-key header
    headers: dict[str, str]  # lower-cased names
    body: Any  # the parsed JSON body; None when it was not JSON
    time: float

    @property
    def system(self) -> str:
        """The text of `systemInstruction`."""
        instruction = (self.body or {}).get("systemInstruction") or {}
        return "".join(p.get("text", "") for p in instruction.get("parts") or [])

    @property
    def prompt(self) -> str:
        """The text of every part of `contents`."""
        contents = (self.body or {}).get("contents") or []
        return "".join(p.get("text", "") for c in contents for p in c.get("parts") or [])

    @property
    def generation_config(self) -> dict[str, Any]:
        return dict((self.body or {}).get("generationConfig") or {})

    @property
    def safety_settings(self) -> dict[str, str]:
        """The request's `safetySettings` (a top-level list of {category, threshold}) as category → threshold."""
        settings = (self.body or {}).get("safetySettings") or []
        return {str(s.get("category")): str(s.get("threshold")) for s in settings if isinstance(s, dict)}


@dataclass(frozen=True, slots=True)
class FakeAnswer:
    """What the fake sends back after `delay` seconds (an answer is never sent once the fake stops)."""

    status: int = 200
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    delay: float = 0.0
    content_type: str = "application/json; charset=UTF-8"


def _json(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def _usage(prompt_tokens: int, output_tokens: int, thoughts_tokens: int, cached_tokens: int = 0) -> dict[str, int]:
    """Gemini's usageMetadata: the prompt count includes the cached content, the thoughts are apart from the
    candidates."""
    usage = {
        "promptTokenCount": prompt_tokens,
        "candidatesTokenCount": output_tokens,
        "totalTokenCount": prompt_tokens + output_tokens + thoughts_tokens,
    }
    if thoughts_tokens:
        usage["thoughtsTokenCount"] = thoughts_tokens
    if cached_tokens:
        usage["cachedContentTokenCount"] = cached_tokens
    return usage


def ok(
    reply: Any,
    *,
    prompt_tokens: int = 10,
    output_tokens: int = 5,
    thoughts_tokens: int = 0,
    cached_tokens: int = 0,
    finish_reason: str = "STOP",
    model_version: str = DEFAULT_MODEL_VERSION,
) -> FakeAnswer:
    """A 200 with one candidate whose text is `reply` (a str as is, anything else as JSON)."""
    text = reply if isinstance(reply, str) else json.dumps(reply)
    body = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": finish_reason}],
        "usageMetadata": _usage(prompt_tokens, output_tokens, thoughts_tokens, cached_tokens),
        "modelVersion": model_version,
        "responseId": "fake-response",
    }
    return FakeAnswer(200, _json(body))


# Gemini's four adjustable harm categories, in the order the API rates them.
RATED_CATEGORIES = (
    "HARM_CATEGORY_SEXUALLY_EXPLICIT",
    "HARM_CATEGORY_HATE_SPEECH",
    "HARM_CATEGORY_HARASSMENT",
    "HARM_CATEGORY_DANGEROUS_CONTENT",
)


def _ratings(category: str, probability: str, *, flag: bool) -> list[dict[str, Any]]:
    """safetyRatings as the API writes them: every category rated, `category` at `probability` (and, for a
    candidate, `"blocked": true` on it)."""
    ratings: list[dict[str, Any]] = []
    for name in RATED_CATEGORIES:
        rating: dict[str, Any] = {"category": name, "probability": probability if name == category else "NEGLIGIBLE"}
        if flag and name == category:
            rating["blocked"] = True
        ratings.append(rating)
    return ratings


def blocked(
    finish_reason: str = "SAFETY",
    *,
    prompt: bool = False,
    prompt_tokens: int = 10,
    category: str = "HARM_CATEGORY_DANGEROUS_CONTENT",
    probability: str = "HIGH",
) -> FakeAnswer:
    """A 200 that Gemini's filters blocked, in the API's form. The reply: one candidate with `finishReason`
    (`finish_reason`), no content, and its safetyRatings (`category` at `probability`, `"blocked": true`). With
    `prompt=True` the prompt: no candidate at all, `promptFeedback` {blockReason, safetyRatings}."""
    body: dict[str, Any] = {"usageMetadata": _usage(prompt_tokens, 0, 0), "modelVersion": DEFAULT_MODEL_VERSION}
    if prompt:
        body["promptFeedback"] = {
            "blockReason": finish_reason,
            "safetyRatings": _ratings(category, probability, flag=False),
        }
    else:
        body["candidates"] = [
            {"finishReason": finish_reason, "index": 0, "safetyRatings": _ratings(category, probability, flag=True)}
        ]
    body["responseId"] = "fake-blocked"
    return FakeAnswer(200, _json(body))


def filtered(
    request: FakeRequest, answer: FakeAnswer, *, category: str = "HARM_CATEGORY_DANGEROUS_CONTENT"
) -> FakeAnswer:
    """What Gemini's default filters make of a harmful reply: `answer` when the request turned the `category`
    filter off (threshold OFF or BLOCK_NONE), else the reply blocked for SAFETY (`category` rated HIGH)."""
    if request.safety_settings.get(category) in ("OFF", "BLOCK_NONE"):
        return answer
    return blocked("SAFETY", category=category)


def status(
    code: int, retry_after: float | str | None = None, body: Any = None, *, message: str | None = None
) -> FakeAnswer:
    """An error answer: by default Google's error JSON `{"error": {"code", "message", "status"}}`; `body` replaces
    it (a JSON object, or bytes/str sent as text/html like a proxy's error page); `retry_after` sets Retry-After."""
    content_type = FakeAnswer.content_type
    if body is None:
        name = _STATUS_NAMES.get(code, "UNKNOWN")
        body = {"error": {"code": code, "message": message or f"fake {name.lower()}", "status": name}}
    if isinstance(body, bytes | str):
        raw, content_type = (body if isinstance(body, bytes) else body.encode()), "text/html; charset=UTF-8"
    else:
        raw = _json(body)
    headers = (("Retry-After", str(retry_after)),) if retry_after is not None else ()
    return FakeAnswer(code, raw, headers, content_type=content_type)


def slow(seconds: float, then: FakeAnswer | None = None) -> FakeAnswer:
    """`then` (default: a passing JudgeVerdict), sent `seconds` later."""
    answer = then if then is not None else ok({"score": 1.0, "verdict": "pass", "explanation": "slow"})
    return replace(answer, delay=answer.delay + seconds)


def malformed_json() -> FakeAnswer:
    """A 200 whose body is cut-off JSON."""
    return FakeAnswer(200, b'{"candidates": [{"content": {"parts": [{"text": "{\\"sco')


Handler = Callable[[FakeRequest], FakeAnswer]


class FakeGemini:
    """The fake server: `start()`/`stop()` or a context manager; `url` is the `base_url` for the client."""

    def __init__(self, handler: Handler | None = None, *, default: FakeAnswer | None = None) -> None:
        self.handler = handler
        self.default = default or ok({"score": 1.0, "verdict": "pass", "explanation": "fake default"})
        self._lock = threading.Condition()
        self._queue: collections.deque[FakeAnswer] = collections.deque()
        self._requests: list[FakeRequest] = []
        self.errors: list[BaseException] = []  # exceptions the handler raised (answered with a 500)
        self._in_flight = 0
        self._max_in_flight = 0
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._port = 0

    # --- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> FakeGemini:
        if self._server is not None:
            raise RuntimeError("the fake is already running")
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server, self._port = server, server.server_address[1]
        self._stopping.clear()
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-gemini", daemon=True
        )
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop listening (new connections are refused), wake slow answers (they close without answering),
        and wait up to `timeout` seconds for the requests in flight to end."""
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout)
        with self._lock:
            self._lock.wait_for(lambda: self._in_flight == 0, timeout)

    def __enter__(self) -> FakeGemini:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    # --- scripting ---------------------------------------------------------------------------------
    def script(self, *answers: FakeAnswer) -> None:
        """Answer the next requests with `answers`, in order, before the handler or the default."""
        with self._lock:
            self._queue.extend(answers)

    def reset(self) -> None:
        """Forget the scripted answers, the recorded requests and the in-flight maximum."""
        with self._lock:
            self._queue.clear()
            self._requests.clear()
            self.errors.clear()
            self._max_in_flight = self._in_flight

    # --- what happened -----------------------------------------------------------------------------
    @property
    def requests(self) -> list[FakeRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    @property
    def max_in_flight(self) -> int:
        with self._lock:
            return self._max_in_flight

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> bool:
        """Whether `count` requests arrived within `timeout` seconds."""
        with self._lock:
            return self._lock.wait_for(lambda: len(self._requests) >= count, timeout)

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """Wait until no request is in flight (a request thread finishes just after its answer is sent)."""
        with self._lock:
            return self._lock.wait_for(lambda: self._in_flight == 0, timeout)

    # --- called by the request threads -------------------------------------------------------------
    def _arrived(self, request: FakeRequest) -> FakeAnswer | None:
        with self._lock:
            self._requests.append(request)
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
            self._lock.notify_all()
            if self._queue and request.method:
                return self._queue.popleft()
        return None

    def _answer_for(self, request: FakeRequest) -> FakeAnswer:
        scripted = self._arrived(request)
        if not request.method:
            return status(404, message=f"no such method: {request.path}")
        if scripted is not None:
            return scripted
        if self.handler is None:
            return self.default
        try:
            return self.handler(request)
        except Exception as exc:  # a broken test handler: answer, and let the test see it
            with self._lock:
                self.errors.append(exc)
            return status(500, message=f"fake handler failed: {exc!r}")

    def _done(self) -> None:
        with self._lock:
            self._in_flight -= 1
            self._lock.notify_all()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    fake: FakeGemini


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeGemini/1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        assert isinstance(self.server, _Server)
        fake = self.server.fake
        self.close_connection = True
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = self.path.split("?", 1)[0]
        match = _PATH.match(path)
        request = FakeRequest(
            method=match["method"] if match else "",
            version=match["version"] if match else "",
            model=match["model"] if match else "",
            path=self.path,
            api_key=self.headers.get("x-goog-api-key"),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            time=time.monotonic(),
        )
        try:
            answer = fake._answer_for(request)
            if answer.delay and fake._stopping.wait(answer.delay):
                return  # stopping: drop the connection unanswered
            self._send(answer)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout) before the answer
        finally:
            fake._done()

    def _send(self, answer: FakeAnswer) -> None:
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type)
        self.send_header("Content-Length", str(len(answer.body)))
        self.send_header("Connection", "close")
        for name, value in answer.headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(answer.body)
        self.wfile.flush()
