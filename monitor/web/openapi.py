"""The OpenAPI 3.1 document of `/api/v1`, generated from the review models and the query parameter specs the
handlers parse with (monitor/review/api_params.py), so it describes exactly what is served.

The document itself is open (it holds no trace content); every other path needs the bearer token or the
review page's session cookie when a token is configured.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter

from monitor import __version__
from monitor.auth import SESSION_COOKIE
from monitor.explain.model import Explanation
from monitor.review.api_params import (
    BREAKDOWN_PARAMS,
    RESULTS_PARAMS,
    SIGNATURE_ID_PATTERN,
    SIGNATURE_PARAMS,
    SIGNATURES_PARAMS,
    TRACE_ID_PATTERN,
    QueryParam,
)
from monitor.review.change_models import ChangesPage
from monitor.review.models import Breakdown, EvaluatorStatus, ResultsPage, TraceDetail, VariantComparison
from monitor.review.review_models import ReviewHistory, ReviewRecord, ReviewRequest, ReviewsPage
from monitor.review.review_params import HISTORY_PARAMS, MAX_BODY_BYTES, REVIEWS_PARAMS
from monitor.review.session_models import SessionDetail, SessionsPage
from monitor.review.session_params import SESSION_ID_PATTERN, SESSIONS_PARAMS
from monitor.review.signature_models import SignatureDetail, SignaturesPage
from monitor.web.changes import CHANGES_PARAMS
from monitor.web.explain_info import EXPLAIN_PARAMS

PREFIX = "/api/v1"
OPENAPI_PATH = f"{PREFIX}/openapi.json"
REF = "#/components/schemas/{model}"


class ApiError(BaseModel):
    """Every error answer of `/api/v1`: 400 bad parameter or body, 401 no or wrong token, 403 refused (writing a
    review with no token configured), 404 unknown trace, result or path, 409 a review written at the same moment,
    413 a body too large, 503 store disabled or failing (the message starts with "review unavailable: ")."""

    model_config = ConfigDict(extra="forbid")

    error: str


_ERRORS = {
    "400": "A bad parameter; `error` names it.",
    "401": "No token, or a wrong one (bearer token or review session cookie).",
    "403": "No API token is configured (api.auth.bearer_token_file), so nothing can be reviewed.",
    "404": "Unknown trace, signature, session or path.",
    "409": "Someone else reviewed the same result at the same moment: send it again.",
    "413": f"The body is larger than {MAX_BODY_BYTES} bytes.",
    "503": "The result store is disabled or unavailable.",
}


def _schemas() -> dict[str, Any]:
    schemas: dict[str, Any] = {}
    models = (ResultsPage, TraceDetail, Breakdown, SignaturesPage, SignatureDetail, EvaluatorStatus, VariantComparison)
    reviews = (ReviewsPage, ReviewHistory, ReviewRecord)
    for model in (*models, SessionsPage, SessionDetail, *reviews, ChangesPage, Explanation, ApiError):
        schema = model.model_json_schema(ref_template=REF, mode="serialization")
        schemas.update(schema.pop("$defs", {}))
        schemas[model.__name__] = schema
    request = ReviewRequest.model_json_schema(ref_template=REF, mode="validation")  # a request body: as validated
    schemas.update(request.pop("$defs", {}))
    schemas[ReviewRequest.__name__] = request
    return schemas


def _ref(name: str) -> dict[str, str]:
    return {"$ref": REF.format(model=name)}


def _query(param: QueryParam) -> dict[str, Any]:
    return {
        "name": param.name,
        "in": "query",
        "required": False,
        "description": param.description,
        "schema": param.schema,
    }


def _operation(
    operation_id: str, summary: str, body: dict[str, Any], params: list[dict[str, Any]], errors: tuple[str, ...]
) -> dict[str, Any]:
    responses: dict[str, Any] = {"200": {"description": "OK", "content": {"application/json": {"schema": body}}}}
    for status in errors:
        responses[status] = {
            "description": _ERRORS[status],
            "content": {"application/json": {"schema": _ref("ApiError")}},
        }
    return {"get": {"operationId": operation_id, "summary": summary, "parameters": params, "responses": responses}}


_TRACE_ID_PARAM = {
    "name": "trace_id",
    "in": "path",
    "required": True,
    "description": "The W3C trace id: 32 hex characters (upper case is accepted).",
    "schema": {"type": "string", "pattern": TRACE_ID_PATTERN},
}
_SIGNATURE_ID_PARAM = {
    "name": "signature_id",
    "in": "path",
    "required": True,
    "description": "The failure signature's id: 16 hex characters.",
    "schema": {"type": "string", "pattern": SIGNATURE_ID_PATTERN},
}
_SESSION_ID_PARAM = {
    "name": "session_id",
    "in": "path",
    "required": True,
    "description": "The conversation's session id, as its traces carried it (URL-encoded).",
    "schema": {"type": "string", "pattern": SESSION_ID_PATTERN},
}
_ALL_ERRORS = ("400", "401", "404", "503")
_OPENAPI_OPERATION = {
    "get": {
        "operationId": "getOpenApi",
        "summary": "This document (open: no trace content).",
        "security": [],
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {}}}}},
    }
}
_SECURITY_SCHEMES = {
    "bearer": {"type": "http", "scheme": "bearer", "description": "api.auth (else receivers.auth) token"},
    "session": {
        "type": "apiKey",
        "in": "cookie",
        "name": SESSION_COOKIE,
        "description": "The review page's session cookie, set by its login form.",
    },
}


def _without_defs(adapter: TypeAdapter[Any]) -> dict[str, Any]:
    """The schema of `adapter`'s type, its definitions left to `components.schemas`."""
    schema = adapter.json_schema(ref_template=REF, mode="serialization")
    schema.pop("$defs", None)
    return schema


def _paths() -> dict[str, Any]:
    """Every `/api/v1` path with its operation."""
    return {**_result_paths(), **_signature_and_session_paths(), **_review_paths(), **_live_paths()}


def _result_paths() -> dict[str, Any]:
    """The results, one trace, the breakdown."""
    return {
        f"{PREFIX}/results": _operation(
            "listResults",
            "Evaluation results, newest first, one page at a time (follow `next_cursor`).",
            _ref("ResultsPage"),
            [_query(p) for p in RESULTS_PARAMS],
            _ALL_ERRORS,
        ),
        f"{PREFIX}/traces/{{trace_id}}": _operation(
            "getTrace",
            "One trace: its summary, step tree and every stored result.",
            _ref("TraceDetail"),
            [_TRACE_ID_PARAM],
            _ALL_ERRORS,
        ),
        f"{PREFIX}/breakdown": _operation(
            "getBreakdown",
            "Verdict counts per service, agent, model, tool or variant, most failures first.",
            _ref("Breakdown"),
            [_query(p) for p in BREAKDOWN_PARAMS],
            _ALL_ERRORS,
        ),
    }


def _signature_and_session_paths() -> dict[str, Any]:
    """Failure signatures and conversations, each a list and one."""
    return {
        f"{PREFIX}/signatures": _operation(
            "listSignatures",
            "Failure signatures by impact over the range (failing results in it, then growth against the previous "
            "range of the same length), each with its status, where it was seen and its trend; one page at a time.",
            _ref("SignaturesPage"),
            [_query(p) for p in SIGNATURES_PARAMS],
            _ALL_ERRORS,
        ),
        f"{PREFIX}/signatures/{{signature_id}}": _operation(
            "getSignature",
            "One failure signature over the range and its traces, newest first: one row per trace with every "
            "failing verdict it has.",
            _ref("SignatureDetail"),
            [_SIGNATURE_ID_PARAM, *(_query(p) for p in SIGNATURE_PARAMS)],
            _ALL_ERRORS,
        ),
        f"{PREFIX}/sessions": _operation(
            "listSessions",
            "Conversations (sessions), most recently completed first, each with its turns' trace ids and its "
            "session-level results in brief; one page at a time (follow `next_cursor`).",
            _ref("SessionsPage"),
            [_query(p) for p in SESSIONS_PARAMS],
            _ALL_ERRORS,
        ),
        f"{PREFIX}/sessions/{{session_id}}": _operation(
            "getSession",
            "One conversation: its figures, its turns (user message, answer, tools, errors, tokens, cost) and its "
            "session-level results, each with the turn it names (`turn`, `turn_trace_id`) if any.",
            _ref("SessionDetail"),
            [_SESSION_ID_PARAM],
            _ALL_ERRORS,
        ),
    }


def _review_paths() -> dict[str, Any]:
    """Reviewers' verdicts: written (POST, the only write of the API), listed, one result's audit trail."""
    listed = _operation(
        "listReviews",
        "The reviews in force (one per reviewed result), newest first.",
        _ref("ReviewsPage"),
        [_query(p) for p in REVIEWS_PARAMS],
        _ALL_ERRORS,
    )
    post_errors = ("400", "401", "403", "404", "409", "413", "503")
    written = {
        "operationId": "createReview",
        "summary": "Review a verdict: agree or disagree with the evaluator's result on one trace (a failing one "
        "disagreed with is a false alarm, a passing one a miss), with an optional corrected score or label and a "
        "note. Supersedes the review in force on that result (the earlier one is kept in its history). Needs the "
        "bearer token: the review session cookie and loopback access without a token do not write.",
        "security": [{"bearer": []}],
        "requestBody": {"required": True, "content": {"application/json": {"schema": _ref("ReviewRequest")}}},
        "responses": {
            "201": {
                "description": "The review as stored.",
                "content": {"application/json": {"schema": _ref("ReviewRecord")}},
            },
            **{
                status: {"description": _ERRORS[status], "content": {"application/json": {"schema": _ref("ApiError")}}}
                for status in post_errors
            },
        },
    }
    return {
        f"{PREFIX}/reviews": {**listed, "post": written},
        f"{PREFIX}/reviews/history": _operation(
            "getReviewHistory",
            "Every review of one result (its trace, evaluator, level and span), newest first: the audit trail.",
            _ref("ReviewHistory"),
            [_query(p) for p in HISTORY_PARAMS],
            _ALL_ERRORS,
        ),
    }


def _live_paths() -> dict[str, Any]:
    """What the daemon holds in memory (evaluators and their windows, the live comparisons) and this document."""
    return {
        f"{PREFIX}/evaluators": _operation(
            "listEvaluators",
            "The configured evaluators with their current window pass ratios and alert states.",
            _without_defs(TypeAdapter(list[EvaluatorStatus])),
            [],
            ("401", "404", "503"),
        ),
        f"{PREFIX}/comparisons": _operation(
            "listComparisons",
            "The live variant comparisons (variants.compare): each candidate against its baseline over the entry's "
            "window, with the delta, its interval, the p-values and the verdict; empty when none is configured.",
            _without_defs(TypeAdapter(list[VariantComparison])),
            [],
            ("400", "401", "404"),
        ),
        f"{PREFIX}/changes": _changes_operation(),
        f"{PREFIX}/explain": _explain_operation(),
        OPENAPI_PATH: _OPENAPI_OPERATION,
    }


def _changes_operation() -> dict[str, Any]:
    """Drift's changes: its 503 is drift's, not the store's."""
    operation = _operation(
        "listChanges",
        "Drift (issue 41): the latest report's active changes, each (service, agent)'s signal against its own "
        "baseline (the same hours of the previous days, or the window before), largest |effect| first, with both "
        "windows' means, counts and 95 % intervals, the test's p and q values, since when, a one-line summary and "
        "the review page's link to the recent window's results; `all=true`: every tested signal.",
        _ref("ChangesPage"),
        [_query(p) for p in CHANGES_PARAMS],
        ("400", "401", "404", "503"),
    )
    operation["get"]["responses"]["503"]["description"] = (
        "Drift detection is not run by this process (drift.enabled: false), or no report is made yet (then with "
        'Retry-After); the message starts with "drift unavailable: ".'
    )
    return operation


def _explain_operation() -> dict[str, Any]:
    """What sets a slice apart: its 503 is the explainer's."""
    operation = _operation(
        "explainSlice",
        "What's different (issue 42): the dimension values (model, version, tool, tenant, language ...) and pairs "
        "of values that set a slice of traces apart from its reference, largest share difference first, each with "
        "its share of the slice and of the reference, lift, coverage, p and q values (Benjamini–Hochberg). The "
        "slice: `evaluator`'s failing traces against its passing ones; a `signature`'s traces against the "
        "evaluator's other verdicts; with `reference_since`, the range's traces against the reference range's "
        "(a drift's baseline); else the filter's traces against the rest of the range.",
        _ref("Explanation"),
        [_query(p) for p in EXPLAIN_PARAMS],
        ("400", "401", "404", "503"),
    )
    operation["get"]["responses"]["503"]["description"] = (
        "Explanations are off (explain.enabled: false), the result store is disabled or cannot answer; the "
        'message starts with "explain unavailable: " (or "review unavailable: " from the store).'
    )
    return operation


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 document: every `/api/v1` path with its parameters, responses and security."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "agent-monitor review API",
            "version": __version__,
            "description": "Review of stored evaluation results and traces, and reviewers' verdicts on them (the "
            "only write). Times are Unix seconds (UTC).",
        },
        "paths": _paths(),
        "components": {"schemas": _schemas(), "securitySchemes": _SECURITY_SCHEMES},
        "security": [{"bearer": []}, {"session": []}],
    }
