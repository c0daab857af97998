"""The review's conversations (issue 27): what `/api/v1/sessions`, the sessions pages and `agent-monitor review
--level session / --session` show, read from the store's `sessions` rows and session-level results.

A session row holds the conversation's turns as bounded, masked summaries (store schema v5,
`SESSION_TURN_FIELDS`); its session-level results are `results` rows with level "session" and `session_id` set,
their `trace_id` the last turn's. A verdict about one turn names it in its details: `turn` (1-based) and
`turn_trace_id`. Times are Unix seconds (UTC).
"""

from __future__ import annotations

import json
from typing import Literal, Protocol

from monitor.review.api_model import ApiModel

Outcome = Literal["pass", "fail", "skip"]  # models.Outcome (this module is imported by models.py)
MAX_SESSION_ID_CHARS = 256  # longest session id the API and the pages take (longer ones are never stored whole)


class SessionFilter(ApiModel):
    """Which sessions to list; None means any. `since` inclusive, `until` exclusive, on the completion time;
    `failing`: only sessions with a failing session-level result; `evaluator`: only sessions with a result of it."""

    service: str | None = None
    since: float | None = None
    until: float | None = None
    failing: bool = False
    evaluator: str | None = None


class SessionVerdictBrief(ApiModel):
    """One session-level result in a list: the evaluator and its outcome."""

    evaluator: str
    outcome: Outcome
    score: float | None = None
    turn: int | None = None  # the turn it is about (1-based), None for the whole conversation


class SessionItem(ApiModel):
    """One stored conversation: its row's figures, its turns' trace ids in order and its results in brief."""

    session_id: str
    service: str
    source: str  # the attribute the session id came from
    started_at: float  # the first turn's start
    last_turn_at: float  # the last turn's end
    completed_at: float  # when the daemon completed it
    ended: str  # idle | explicit_end | cut
    turn_count: int  # turns seen (turns_cut of them not kept)
    turns_cut: int = 0
    total_tokens: int = 0
    cost_usd: float | None = None  # None: no turn was priced
    failed: int = 0  # failing session-level results
    trace_ids: list[str] = []  # the kept turns' trace ids, in start order
    verdicts: list[SessionVerdictBrief] = []

    @property
    def duration_ms(self) -> float:
        return max(self.last_turn_at - self.started_at, 0.0) * 1000


class SessionsPage(ApiModel):
    """Sessions, most recently completed first; `next_cursor` is opaque and None on the last page."""

    items: list[SessionItem]
    next_cursor: str | None = None


class StoredTurnError(ApiModel):
    kind: str  # the failing span's kind (tool, llm, agent, ...)
    name: str
    message: str


class SessionTurn(ApiModel):
    """One turn (one trace) of a conversation, as stored: bounded, masked texts."""

    turn: int  # 1-based, in start order
    trace_id: str
    started_at: float
    ended_at: float
    user_message: str | None = None
    answer: str | None = None
    tool_calls: list[str] = []
    errors: list[StoredTurnError] = []
    agents: list[str] = []
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None


class SessionVerdict(ApiModel):
    """One session-level result, with the turn it names (`turn`, `turn_trace_id` from its details) if any."""

    evaluator: str
    outcome: Outcome
    evaluated_at: float
    score: float | None = None
    skip_reason: str | None = None
    explanation: str | None = None
    details: str | None = None  # JSON text, bounded
    trace_id: str  # the result row's trace: the last turn's when it was stored
    turn: int | None = None
    turn_trace_id: str | None = None


class SessionDetail(ApiModel):
    session: SessionItem
    turns: list[SessionTurn]
    results: list[SessionVerdict]  # failing first, then skips, then passes


class SessionReader(Protocol):
    """The store's conversation reads (monitor/review/session_reader.py)."""

    def sessions(self, where: SessionFilter, limit: int, cursor: str | None = None) -> SessionsPage:
        """Sessions matching `where`, most recently completed first; ValueError for a cursor it did not issue."""
        ...

    def session(self, session_id: str) -> SessionDetail | None:
        """One conversation with its turns and session-level results; None when the store has no such session."""
        ...

    def session_of_trace(self, trace_id: str) -> str | None:
        """The id of the stored session the trace is a turn of; None when it is not a turn of a stored one."""
        ...


def turn_of(details: str | None) -> tuple[int | None, str | None]:
    """(turn, turn_trace_id) named by a session verdict's details JSON; (None, None) when it names none."""
    try:
        values = json.loads(details) if details else None
    except ValueError:  # not JSON, or cut at the store's limit
        return None, None
    if not isinstance(values, dict):
        return None, None
    turn, trace_id = values.get("turn"), values.get("turn_trace_id")
    turn = turn if isinstance(turn, int) and not isinstance(turn, bool) and turn > 0 else None
    return turn, trace_id.lower() if isinstance(trace_id, str) and trace_id else None
