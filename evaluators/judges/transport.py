"""The judge client's HTTP client: httpx2, following no redirect, and calling back before every HTTP attempt.

Credentials (the `x-goog-api-key` header, or Vertex AI's bearer token) go to the origin of `base_url` only:
a redirect answer (any 3xx) is never followed, to another origin or the same one, and ends the request as
`RedirectRefused`, which google-genai does not retry. The check is an httpx event hook, so it holds whichever
transport sends the request (a proxy from the environment included).

Before each HTTP attempt (the first one and each of google-genai's own retries) the client awaits the hook the
running judgement installed with `attempt_hook()`: the judge engine takes its rate tokens there, so that the
rate limits count every request that reaches the API. The hook is a context variable: google-genai sends and
retries within the caller's task, so each judgement sees only its own hook.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar

import httpx2

AttemptHook = Callable[[], Awaitable[None]]

_attempt_hook: ContextVar[AttemptHook | None] = ContextVar("judge_attempt_hook", default=None)


class RedirectRefused(Exception):
    """The API answered with a redirect; the judge client follows none (its credentials would go along)."""


@contextlib.contextmanager
def attempt_hook(hook: AttemptHook | None) -> Iterator[None]:
    """Await `hook` before every HTTP attempt made in this context (None: no hook)."""
    token = _attempt_hook.set(hook)
    try:
        yield
    finally:
        _attempt_hook.reset(token)


def http_client(timeout: float) -> httpx2.AsyncClient:
    """An async HTTP client for google-genai: `timeout` seconds per attempt, no redirects, the attempt hook."""
    return httpx2.AsyncClient(
        timeout=timeout,
        follow_redirects=False,
        event_hooks={"request": [_before_attempt], "response": [_refuse_redirect]},
    )


async def _before_attempt(request: httpx2.Request) -> None:
    hook = _attempt_hook.get()
    if hook is not None:
        await hook()


async def _refuse_redirect(response: httpx2.Response) -> None:
    """Raise RedirectRefused on a 3xx (httpx closes the response), naming only the origin it pointed to."""
    if 300 <= response.status_code < 400:
        target = _origin(response.request.url, response.headers.get("location"))
        raise RedirectRefused(
            f"HTTP {response.status_code} redirect to {target} refused: the judge client follows no redirects"
        )


def _origin(base: httpx2.URL, location: str | None) -> str:
    """scheme://host[:port] of `location` (relative to `base`); its path and query may hold secrets."""
    if not location:
        return "no location"
    try:
        url = base.join(location)
    except (httpx2.InvalidURL, ValueError):
        return "an invalid location"
    port = f":{url.port}" if url.port is not None else ""
    return f"{url.scheme}://{url.host}{port}"


__all__ = ["AttemptHook", "RedirectRefused", "attempt_hook", "http_client"]
