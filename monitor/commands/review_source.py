"""Where `agent-monitor review` reads: the daemon's /api/v1 over HTTP, or a store file through the same
ReviewService the API handlers use. Both answer `fetch(endpoint, params)` with the API's JSON, so the
command's output does not depend on the source; every failure is one ReviewCommandError line with an exit status
(2: a bad parameter, 1: anything else)."""

from __future__ import annotations

import http.client
import json
import sqlite3
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from monitor.review import open_reader
from monitor.review.api_params import ReviewError
from monitor.review.service import ReviewService
from monitor.text import clip

Params = Sequence[tuple[str, str]]


class ReviewCommandError(Exception):
    """One line for the user, and the command's exit status."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(clip(message, 400))
        self.exit_code = exit_code


class ReviewSource(Protocol):
    def fetch(self, endpoint: str, params: Params = ()) -> Any:
        """The JSON answer of GET /api/v1/<endpoint>?<params> (endpoint: results, traces/ID, breakdown, evaluators,
        sessions, sessions/ID with the id URL-encoded)."""
        ...


class ApiReviewSource:
    """The daemon's review API at `base_url`, with the bearer `token` when given."""

    def __init__(self, base_url: str, token: str | None = None, timeout: float = 10.0) -> None:
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ReviewCommandError(f"--url must be an http:// or https:// URL, got {base_url!r}", 2)
        self.base = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def fetch(self, endpoint: str, params: Params = ()) -> Any:
        url = f"{self.base}/api/v1/{urllib.parse.quote(endpoint, safe='/%')}"  # a session id comes encoded
        if params:
            url += "?" + urllib.parse.urlencode(list(params))
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=self.timeout) as answer:
                body = answer.read()
        except urllib.error.HTTPError as exc:
            raise self._refused(exc.code, exc.read()) from None
        except urllib.error.URLError as exc:
            raise ReviewCommandError(f"cannot reach {self.base}: {self._reason(exc.reason)}") from None
        except TimeoutError:
            raise ReviewCommandError(f"{self.base}: no answer within {self.timeout:g}s") from None
        except (OSError, http.client.HTTPException) as exc:
            raise ReviewCommandError(f"{self.base}: {type(exc).__name__}: {exc}") from None
        try:
            return json.loads(body)
        except ValueError:
            raise ReviewCommandError(
                f"{url}: the answer is not JSON (is {self.base} an agent-monitor metrics port?)"
            ) from None

    def _reason(self, reason: object) -> str:
        if isinstance(reason, ConnectionRefusedError):
            return "connection refused (is the daemon running, and is --url its metrics port?)"
        if isinstance(reason, TimeoutError):
            return f"no answer within {self.timeout:g}s"
        return str(getattr(reason, "strerror", None) or reason)

    def _refused(self, status: int, body: bytes) -> ReviewCommandError:
        try:
            message = str(json.loads(body)["error"])
        except (ValueError, KeyError, TypeError):
            message = body.decode("utf-8", "replace").strip() or "no message"
        if status == 401:
            hint = "the token was refused" if self.token else "pass --token or set $AGENT_MONITOR_API_TOKEN"
            return ReviewCommandError(f"401 unauthorized: {hint}")
        return ReviewCommandError(f"{status}: {message}", 2 if status == 400 else 1)


class StoreReviewSource:
    """A result store (a file, or a PostgreSQL URL) read through the review reader, answering as the API would
    (no evaluator figures: those live in the daemon's process)."""

    def __init__(self, path: str) -> None:
        if not open_reader.is_url(path) and not Path(path).is_file():
            raise ReviewCommandError(f"no such store file: {path}")
        try:
            self.review = ReviewService(open_reader.open_store_reader(path), unavailable="no reader")
        except open_reader.StoreUnreadable as exc:
            raise ReviewCommandError(str(exc)) from None
        except (OSError, sqlite3.Error) as exc:
            raise ReviewCommandError(f"{path}: {exc}") from None

    def fetch(self, endpoint: str, params: Params = ()) -> Any:
        model: BaseModel
        try:
            if endpoint == "results":
                model = self.review.results(params)
            elif endpoint == "breakdown":
                model = self.review.breakdown(params)
            elif endpoint == "signatures":
                model = self.review.signatures(params)
            elif endpoint.startswith("signatures/"):
                model = self.review.signature(endpoint.removeprefix("signatures/"), params)
            elif endpoint == "sessions":
                model = self.review.sessions(params)
            elif endpoint.startswith("sessions/"):
                model = self.review.session(urllib.parse.unquote(endpoint.removeprefix("sessions/")))
            elif endpoint.startswith("traces/"):
                model = self.review.trace(endpoint.removeprefix("traces/"))
            elif endpoint == "evaluators":
                raise ReviewCommandError(
                    "--evaluators needs the daemon (--url): window figures and alert states live in its process", 2
                )
            else:
                raise ReviewCommandError(f"unknown endpoint {endpoint!r}", 2)
        except ReviewError as exc:
            raise ReviewCommandError(f"{exc.status}: {exc}", 2 if exc.status == 400 else 1) from None
        return json.loads(model.model_dump_json())
