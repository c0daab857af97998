"""What failed, as the rule builtins state it (`EvalResult.failure`): the failing step and its error, read the same
way whatever library recorded the trace.

Libraries record one tool error differently: an `exception` event (`exception.type`, `exception.message`), an
`error.type` attribute and a status message, a status message `Type: message`, or only a generic marker
(`TOOL_ERROR`) with the error in the tool's result (`{"error": "RuntimeError: ..."}`). `span_failure` reads all
of them into one `Failure`: the error type is `http_<status>` when the error carries an HTTP status (an
`http.*status_code` attribute, or a status in its message the way HTTP clients write one: "HTTP 503", "status
503", "HTTP Error 503", "Error code: 503", "503 Server Error", "'503 Service Unavailable'", "503 UNAVAILABLE."), else
the exception type, else
"error"; the message is the error's message without its `Type: ` prefix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any

from evaluators.traces.jsonutil import as_text
from evaluators.traces.spans import AgentSpan, LLMSpan, RetrieverSpan, Span, ToolSpan

from .masking import mask_message
from .model import Failure

# error types that say only "it failed" (ADK's TOOL_ERROR, semconv's `_OTHER`): the error is looked for elsewhere
GENERIC_ERROR_TYPES = frozenset({"", "error", "tool_error", "_other", "exception", "unknown", "failed", "failure"})
HTTP_STATUS_ATTRIBUTES = ("http.response.status_code", "http.status_code")
_ERROR_PHRASES = "|".join(re.escape(status.phrase) for status in HTTPStatus if 400 <= status.value <= 599)
_HTTP_IN_TEXT = re.compile(
    r"\bHTTP(?:\s*status)?(?:\s*code)?[\s/:=#-]*([1-5]\d{2})\b|\bstatus(?:[\s_-]*code)?[\s:=]+([45]\d{2})\b"
    r"|\b(?:HTTP\s+Error|Error\s+code)\s*:?\s*([45]\d{2})\b"  # urllib; the OpenAI and Anthropic clients
    r"|\b([45]\d{2})\s+(?:Server|Client)\s+Error\b"  # requests
    rf"|\b([45]\d{{2}})(?:,\s*message=)?\s*['\"]?(?:{_ERROR_PHRASES})\b",  # httpx, aiohttp: a status and its phrase
    re.IGNORECASE,
)
_GOOGLE_API_STATUS = re.compile(r"^\s*([45]\d{2})\s+[A-Z][A-Z_]{3,}\b")  # google-genai: "503 UNAVAILABLE. {...}"
_TYPE_PREFIX = re.compile(
    r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Timeout|Fault|Failure|Refused|Denied))\s*:\s*(.*)$",
    re.DOTALL,
)
_MAX_MESSAGE = 300


def http_status(text: str, attributes: Mapping[str, Any] | None = None) -> int | None:
    """The HTTP error status (400–599) an error carries: an `http.*status_code` attribute, else one in its text."""
    for key in HTTP_STATUS_ATTRIBUTES:
        value = (attributes or {}).get(key)
        digits = isinstance(value, int | str) and not isinstance(value, bool) and str(value).isdigit()
        if digits and 400 <= int(str(value)) <= 599:
            return int(str(value))
    match = _HTTP_IN_TEXT.search(text) or _GOOGLE_API_STATUS.search(text)
    if match:
        status = int(next(group for group in match.groups() if group))
        return status if 400 <= status <= 599 else None
    return None


def split_type(text: str) -> tuple[str | None, str]:
    """("RuntimeError", "boom") from "RuntimeError: boom"; (None, text) when it does not start with a type."""
    match = _TYPE_PREFIX.match(text)
    if match is None:
        return None, text.strip()
    return match.group(1), match.group(2).strip()


def _is_generic(kind: str | None) -> bool:
    return kind is None or kind.strip().lower() in GENERIC_ERROR_TYPES or kind.strip().isdigit()


def _result_error(result: Any) -> str | None:
    """The error a tool's recorded result reports (`{"error": "..."}` or `{"error": {"message": ...}}`)."""
    if not isinstance(result, Mapping):
        return None
    error = result.get("error")
    if isinstance(error, Mapping):
        kind, message = as_text(error.get("type")), as_text(error.get("message"))
        return f"{kind}: {message}" if kind and message else message or kind
    return error if isinstance(error, str) and error.strip() else None


def span_error(span: Span) -> tuple[str, str]:
    """(error type, message) of a failed span, read alike whatever library recorded it (see the module doc)."""
    record = span.record
    kind: str | None = None
    message = ""
    for event in record.events:
        if event.name == "exception":
            kind = as_text(event.attributes.get("exception.type")) or None
            message = as_text(event.attributes.get("exception.message")) or ""
            break
    if kind is None:
        kind = as_text(record.attributes.get("error.type")) or None
    if not message:
        message = record.status_message or ""
    prefixed, rest = split_type(message)
    if prefixed is not None and (_is_generic(kind) or prefixed == kind or prefixed.endswith(f".{kind}")):
        kind, message = prefixed, rest
    if _is_generic(kind) and isinstance(span, ToolSpan):
        reported = _result_error(span.result)
        if reported:
            prefixed, rest = split_type(reported)
            kind, message = prefixed or kind, rest
    if message.strip().lower() == (kind or "").strip().lower():
        message = ""
    status = http_status(message, record.attributes)
    if status is None and kind is not None and kind.strip().isdigit():
        status = http_status(f"HTTP {kind.strip()}")
    if status is not None:
        error_type = f"http_{status}"
    else:
        error_type = "error" if _is_generic(kind) else str(kind)
    return error_type, " ".join(message.split())[:_MAX_MESSAGE]


def span_step(span: Span) -> tuple[str, str | None]:
    """(step kind, step name) of a span: tool and its name, llm and its provider, agent and its name, retriever,
    or "trace" and the span's name for any other span. Those span names are masked as messages are: frameworks put
    run ids in them (CrewAI's `Crew_<uuid>.kickoff`), and a run id must not make a new failure mode. An LLM step
    is named by its provider, never its model (nor its span name, which often holds the model: `chat gpt-4o`): a
    model switch is not a new failure mode; the model is where a failure was seen (the signature's `models`, the
    result's model)."""
    if isinstance(span, ToolSpan):
        return "tool", span.name
    if isinstance(span, LLMSpan):
        return "llm", llm_step_name(span)
    if isinstance(span, AgentSpan):
        return "agent", span.name
    if isinstance(span, RetrieverSpan):
        return "retriever", mask_message(span.span_name)
    return "trace", mask_message(span.span_name)


def llm_step_name(call: LLMSpan) -> str | None:
    """The step name of an LLM call in a failure: its provider (`openai`, `anthropic`, ...), or None."""
    return call.provider or None


def span_failure(span: Span) -> Failure:
    """The Failure of one failed span: its step, its error type and message."""
    step_kind, step_name = span_step(span)
    error_type, message = span_error(span)
    return Failure(step_kind=step_kind, step_name=step_name, error_type=error_type, message=message or None)


def first_cause(failed: Sequence[Span], spans: Sequence[Span]) -> Span:
    """The first failed span none of whose descendants failed (an error's origin, not the parents it reached);
    `spans`: every span of the trace (for the parent links)."""
    parents = {s.span_id: s.parent_span_id for s in spans}
    reached: set[str] = set()
    for span in failed:
        parent, hops = span.parent_span_id, 0
        while parent and hops < 256:  # bounded: a malformed parent cycle cannot hang
            reached.add(parent)
            parent, hops = parents.get(parent, ""), hops + 1
    causes = [s for s in failed if s.span_id not in reached]
    return causes[0] if causes else failed[0]
