"""JudgeClient: one structured-output request to Gemini through google-genai's async client.

Retries are the client's own (`types.HttpRetryOptions` from `JudgeSettings.retry`): exponential back-off with
jitter on the configured HTTP statuses, on timeouts and on failed connects. It does not read Retry-After.
Whatever still fails after them is a `JudgeUnavailable` with a short status word for metric labels.

The HTTP transport is an `httpx2.AsyncClient` the JudgeClient owns (httpx2 is a google-genai dependency), built
by `transport.http_client`: it follows no redirect (a 3xx is the status "redirect", never retried: the API key
stays with `base_url`'s origin), and it awaits the caller's `before_attempt` before every HTTP attempt, the
client's retries included (where the judge engine takes its rate tokens).
Every request carries `JudgeSettings.safety_settings` (`safety.py`: by default Gemini's adjustable filters off,
so that a judge can read the harmful content it judges); a reply Gemini blocked anyway is the status "blocked"
with its reason.
Left to itself, google-genai sends async requests through aiohttp whenever aiohttp is installed (it is: the
daemon uses it), and then a client-side timeout is never retried, and an error body labelled JSON that does
not parse surfaces as a JSONDecodeError instead of an APIError with its status code (and is not retried).
A JudgeClient belongs to one event loop (its connection pool does); `aclose()` it on that loop.
"""

from __future__ import annotations

import json
import math
from typing import Any, TypedDict

import httpx2
import pydantic
from google import genai
from google.auth import exceptions as auth_exceptions
from google.genai import errors, types

from .replies import JudgeReply, JudgeUnavailable
from .safety import block_of, safety_settings
from .settings import JudgeSettings
from .transport import AttemptHook, RedirectRefused, attempt_hook, http_client

MAX_MESSAGE_CHARS = 500


def http_options(settings: JudgeSettings, transport: httpx2.AsyncClient | None = None) -> types.HttpOptions:
    """The google-genai HTTP options of `settings`: base URL, API version, per-attempt timeout (ms), retries;
    `transport` the async HTTP client to send with (None: the SDK picks one)."""
    retry = settings.retry
    return types.HttpOptions(
        httpx_async_client=transport,
        base_url=settings.base_url,
        api_version=settings.api_version,
        timeout=max(1, math.ceil(settings.request_timeout * 1000)),
        retry_options=types.HttpRetryOptions(
            attempts=retry.attempts,
            initial_delay=retry.initial_delay,
            max_delay=retry.max_delay,
            exp_base=retry.exp_base,
            jitter=retry.jitter,
            http_status_codes=list(retry.http_status_codes),
        ),
    )


class JudgeClient:
    """Sends judge prompts to Gemini (API key) or Vertex AI (project and location, application default
    credentials), as `JudgeSettings` says. Exactly one of `api_key` and `vertex_project` must be set."""

    def __init__(self, settings: JudgeSettings) -> None:
        if bool(settings.api_key) == bool(settings.vertex_project):
            raise ValueError("JudgeClient needs exactly one of judges.api_key and judges.vertex_project")
        self.settings = settings
        self._secret = settings.api_key or ""
        # The per-attempt timeout also on the transport, in case a request reaches it without one.
        self._http = http_client(settings.request_timeout)
        options = http_options(settings, self._http)
        if settings.api_key:
            self._client = genai.Client(vertexai=False, api_key=settings.api_key, http_options=options)
        else:
            self._client = genai.Client(
                vertexai=True,
                project=settings.vertex_project,
                location=settings.vertex_location,
                http_options=options,
            )
        self._safety = safety_settings(settings.safety_settings)
        self._closed = False

    @property
    def vertexai(self) -> bool:
        return bool(self._client.vertexai)

    async def generate(
        self,
        *,
        model: str,
        system: str,
        prompt: str,
        response_schema: type[pydantic.BaseModel],
        before_attempt: AttemptHook | None = None,
    ) -> JudgeReply:
        """One judgement: `prompt` as the user turn, `system` as the system instruction, temperature 0, JSON
        constrained by `response_schema`. `model` "" means the settings' model; `before_attempt` is awaited
        before each HTTP attempt (the first and every retry). Raises JudgeUnavailable."""
        config = types.GenerateContentConfig(
            system_instruction=system,
            temperature=0.0,
            response_mime_type="application/json",
            response_schema=response_schema,
            automatic_continuation=False,  # one judgement, one request (and the client's retries of it)
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),  # a judge has no tools
            safety_settings=list(self._safety) or None,
        )
        # `from None`: the SDK's exception (an APIError prints the whole error body) stays out of tracebacks.
        try:
            with attempt_hook(before_attempt):
                response = await self._client.aio.models.generate_content(
                    model=model or self.settings.model, contents=prompt, config=config
                )
        except RedirectRefused as exc:
            raise self._unavailable("redirect", str(exc)) from None
        except errors.APIError as exc:
            detail = f"{exc.status or ''} {exc.message or ''}".strip() or str(exc)
            code = f"http_{exc.code}" if isinstance(exc.code, int) else "http_error"
            raise self._unavailable(code, f"HTTP {exc.code}: {detail}") from None
        except httpx2.TimeoutException as exc:
            timeout = f"no answer within {self.settings.request_timeout}s"
            raise self._unavailable("timeout", _describe(exc, timeout)) from None
        except TimeoutError as exc:
            raise self._unavailable("timeout", _describe(exc, "timed out")) from None
        except httpx2.DecodingError as exc:
            raise self._unavailable("bad_response", _describe(exc, "undecodable body")) from None
        except (httpx2.RequestError, OSError) as exc:
            raise self._unavailable("connection", _describe(exc, "connection failed")) from None
        except (json.JSONDecodeError, errors.UnknownApiResponseError, pydantic.ValidationError) as exc:
            raise self._unavailable("bad_response", _describe(exc, "reply is not the API's JSON")) from None
        except auth_exceptions.GoogleAuthError as exc:
            raise self._unavailable("auth", _describe(exc, "credentials failed")) from None
        return self._reply(response, model or self.settings.model)

    def _reply(self, response: types.GenerateContentResponse, model: str) -> JudgeReply:
        tokens = _tokens(response.usage_metadata)
        block = block_of(response)
        if block is not None:  # a reply cut by a filter is blocked too, whatever text it kept
            raise JudgeUnavailable("blocked", block.message[:MAX_MESSAGE_CHARS], block_reason=block.reason, **tokens)
        candidate = response.candidates[0] if response.candidates else None
        if candidate is None:
            raise JudgeUnavailable("no_content", "no candidate in the reply", **tokens)
        finish_reason = _enum_text(candidate.finish_reason)
        parts = candidate.content.parts if candidate.content and candidate.content.parts else []
        text = "".join(p.text for p in parts if isinstance(p.text, str) and not p.thought)
        if not text.strip():
            raise JudgeUnavailable(
                "no_content", f"candidate without text (finish reason {finish_reason or 'unknown'})", **tokens
            )
        return JudgeReply(
            text=text, model_version=response.model_version or model, finish_reason=finish_reason, **tokens
        )

    def _unavailable(self, status: str, message: str) -> JudgeUnavailable:
        if self._secret:
            message = message.replace(self._secret, "***")
        return JudgeUnavailable(status, message[:MAX_MESSAGE_CHARS])

    async def aclose(self) -> None:
        """Close the SDK's clients and the HTTP transport (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            await self._client.aio.aclose()
            self._client.close()
        finally:
            await self._http.aclose()

    async def __aenter__(self) -> JudgeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _Tokens(TypedDict):
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    reasoning_tokens: int


def _tokens(usage: types.GenerateContentResponseUsageMetadata | None) -> _Tokens:
    """A reply's usage metadata as JudgeReply's token fields: the prompt (cached content included, as Gemini
    counts it), the output with the thoughts (Gemini counts them apart), and those two parts."""
    if usage is None:
        return {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "reasoning_tokens": 0}
    thoughts = usage.thoughts_token_count or 0
    return {
        "input_tokens": usage.prompt_token_count or 0,
        "output_tokens": (usage.candidates_token_count or 0) + thoughts,
        "cache_read_tokens": usage.cached_content_token_count or 0,
        "reasoning_tokens": thoughts,
    }


def _describe(exc: BaseException, fallback: str) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else f"{type(exc).__name__}: {fallback}"


def _enum_text(value: Any) -> str:
    if value is None:
        return ""
    return str(getattr(value, "value", value))


__all__ = ["JudgeClient"]
