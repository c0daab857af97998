"""Rule-based builtin evaluators of a whole conversation (level "session", subject a `Session`): the user repeating
a request, asking for a human, giving up after a failed turn; the share of failing turns; turn and token budgets.

Turns are named 1-based in explanations ("turn 2") and listed 0-based with their trace ids in details
(`turns`: [{"turn": 1, "trace_id": ...}]), so a reader can open the trace of the turn a verdict names.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Any

from evaluators.sdk import BaseEvaluator, EvalResult, Param, SkipReason, register
from evaluators.sessions.model import Session, Turn, TurnError
from evaluators.signatures import STEP_KINDS, Failure
from evaluators.signatures.span_failures import http_status, split_type

from ._common import DECAY_HELP, PatternList, decay_score, fmt_num, listing, shorten
from ._similarity import content_words, similarity

QUOTE = 80  # characters of a user message quoted in an explanation


def _quote(text: str | None) -> str:
    return repr(shorten(text or "", QUOTE))


def _ref(session: Session, index: int) -> dict[str, Any]:
    """A turn as details list it: its 1-based number and its trace id."""
    return {"turn": index + 1, "trace_id": session.turns[index].trace_id}


def _error_failure(error: TurnError) -> Failure:
    """The Failure of a turn's failed span, as the trace rules state it (`span_failure`): its step, its error's type
    and message as `span_error` read them when the turn was built (a turn stored before that: its message's
    `Type: ` prefix and an HTTP status in it)."""
    step = error.kind if error.kind in STEP_KINDS else "trace"
    if error.error_type:
        kind, message = error.error_type, error.message
    else:
        prefixed, message = split_type(error.message)
        status = http_status(message)
        kind = f"http_{status}" if status is not None else prefixed or "error"
    return Failure(step_kind=step, step_name=error.name or None, error_type=kind, message=message or None)


def _user_turns(session: Session) -> list[tuple[int, str]]:
    """(index, message) of every turn with a recorded user message."""
    return [(i, t.user_message) for i, t in enumerate(session.turns) if t.user_message and t.user_message.strip()]


# --- user_rephrase -----------------------------------------------------------------------------

DEFAULT_REPHRASE_PATTERNS: list[str] = [
    r"\bthat(?:['’]s|\s+is|\s+was)\s+not\s+what\s+I\s+(?:asked|meant|wanted|said)",
    r"\bthat\s+(?:doesn['’]?t|does\s+not|didn['’]?t|did\s+not)\s+answer\b",
    r"\byou\s+(?:didn['’]?t|did\s+not)\s+(?:answer|understand|read|listen)",
    r"\byou(?:['’]re|\s+are)\s+not\s+(?:listening|answering|understanding)",
    r"\b(?:as|like)\s+I\s+(?:said|asked|mentioned|wrote)\b",
    r"\bI\s+(?:already|just)\s+(?:said|asked|told\s+you)\b",
    r"\bread\s+my\s+(?:question|message)\b",
    r"\bno,?\s+I\s+(?:said|asked|meant)\b",
    r"\b(?:let\s+me|I['’]ll)\s+(?:ask|try)\s+(?:again|once\s+more)\b",
    r"\bmy\s+question\s+was\b",
]


@register
class UserRephrase(BaseEvaluator):
    """0 when the user repeats or rephrases an earlier request (similar words, or a phrase such as "that's not what
    I asked"), else 1; names the turns. Skips a session with fewer than 2 user messages."""

    name = "user_rephrase"
    level = "session"
    kind = "rule"
    min_similarity = Param(
        0.8,
        "similarity (0–1) of two user messages' content words at which the later one counts as a repeat: the larger "
        "of difflib's ratio and the share of the shorter message's words found in the other",
        min=0.0,
        max=1.0,
    )
    min_words = Param(3, "content words (stopwords left out) both messages need before they are compared", min=1)
    window = Param(5, "how many earlier user messages each one is compared with", min=1, max=50)
    patterns = Param(
        DEFAULT_REPHRASE_PATTERNS,
        "regexes (case-insensitive) of a user saying the answer missed their request (from the second turn on)",
        type=list,
    )

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._patterns = PatternList(self.name, "patterns", self._params["patterns"], re.IGNORECASE)

    def evaluate(self, session: Session) -> EvalResult:
        users = _user_turns(session)
        if len(users) < 2:
            return EvalResult.skip(SkipReason.NO_DATA, "fewer than 2 turns with a user message: nothing to repeat")
        words = [content_words(text) for _, text in users]
        found: list[dict[str, Any]] = []
        for k in range(1, len(users)):
            index, text = users[k]
            hit = self._phrase(text)
            best, earlier = 0.0, None
            if len(words[k]) >= self.min_words:
                for j in range(max(0, k - self.window), k):
                    if len(words[j]) < self.min_words:
                        continue
                    score = similarity(words[j], words[k])
                    if score >= self.min_similarity and score > best:
                        best, earlier = score, users[j][0]
            if hit is None and earlier is None:
                continue
            found.append(
                {
                    **_ref(session, index),
                    "earlier_turn": None if earlier is None else earlier + 1,
                    "similarity": round(best, 3) if earlier is not None else None,
                    "phrase": hit,
                    "message": shorten(text, QUOTE),
                }
            )
        if not found:
            return EvalResult(
                1.0, explanation=f"no user message repeats an earlier one or complains of a miss ({len(users)} turns)"
            )
        described = [self._describe(item) for item in found]
        return EvalResult(
            0.0,
            explanation=f"the user repeated or rephrased a request: {listing(described, 2)}",
            details={"rephrases": found[:20], "turns": [item["turn"] for item in found]},
            failure=Failure(step_kind="session", error_type="user_rephrase", message="the user repeated a request"),
        )

    def _phrase(self, text: str) -> str | None:
        found = self._patterns.first_match(text)
        return None if found is None else shorten(found[1].group(0), 60)

    @staticmethod
    def _describe(item: dict[str, Any]) -> str:
        why = []
        if item["earlier_turn"] is not None:
            why.append(f"{item['similarity']:.2f} alike turn {item['earlier_turn']}")
        if item["phrase"]:
            why.append(f"says {item['phrase']!r}")
        return f"turn {item['turn']} {_quote(item['message'])} ({', '.join(why)})"


# --- human_handoff_request ---------------------------------------------------------------------

_WHO = r"(?:a\s+|an\s+|some\s*one\s+|somebody\s+|your\s+|the\s+)?(?:real\s+|live\s+|actual\s+)?"
DEFAULT_HANDOFF_PATTERNS: list[str] = [
    rf"\b(?:talk|speak|chat)\s+(?:to|with)\s+{_WHO}(?:human|person|agent|representative|operator|someone|somebody"
    r"|manager|supervisor|support\s+team)\b",
    rf"\b(?:connect|transfer|put)\s+me\s+(?:to|with|through\s+to)\s+{_WHO}(?:human|person|agent|representative"
    r"|operator|someone|somebody|manager|supervisor)\b",
    r"\b(?:human|live|real)\s+(?:agent|person|being|representative|operator|support)\b",
    r"\b(?:customer\s+(?:service|support)\s+)?representative\b",
    r"\b(?:I\s+want|give\s+me|get\s+me)\s+a\s+(?:human|person|manager)\b",
]
DEFAULT_HANDOFF_TOOLS: list[str] = [
    "request_human*",
    "*human_agent*",
    "*handoff_to_human*",
    "*transfer_to_human*",
    "*escalate_to_human*",
    "*live_agent*",
    "*human_handoff*",
]


@register
class HumanHandoffRequest(BaseEvaluator):
    """0 when the user asks for a human (a person, agent, representative) or a handoff tool such as
    request_human_agent ran, else 1; names the turn."""

    name = "human_handoff_request"
    level = "session"
    kind = "rule"
    patterns = Param(
        DEFAULT_HANDOFF_PATTERNS,
        "regexes (case-insensitive) of a user asking for a human, read in every turn",
        type=list,
    )
    tools = Param(DEFAULT_HANDOFF_TOOLS, "globs of tool names that hand the conversation to a human", type=list)

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._patterns = PatternList(self.name, "patterns", self._params["patterns"], re.IGNORECASE)
        self._tools = [str(t) for t in self._params["tools"]]

    def evaluate(self, session: Session) -> EvalResult:
        asked: list[dict[str, Any]] = []
        for index, turn in enumerate(session.turns):
            phrase = self._asks(turn)
            tool = next((t for t in turn.tool_calls if self._is_handoff(t)), None)
            if phrase or tool:
                message = shorten(turn.user_message or "", QUOTE)
                asked.append({**_ref(session, index), "phrase": phrase, "tool": tool, "message": message})
        if not asked:
            if not _user_turns(session):
                return EvalResult.skip(SkipReason.NO_DATA, "no turn recorded the user's message or a handoff tool")
            return EvalResult(1.0, explanation=f"no request for a human in {len(session.turns)} turn(s)")
        first = asked[0]
        how = [
            f"asks {_quote(first['message'])}" if first["phrase"] else "",
            f"ran {first['tool']}" if first["tool"] else "",
        ]
        more = f" (and {len(asked) - 1} more turn(s))" if len(asked) > 1 else ""
        return EvalResult(
            0.0,
            explanation=f"turn {first['turn']} hands over to a human: {' and '.join(h for h in how if h)}{more}",
            details={"requests": asked[:20], "turns": [item["turn"] for item in asked]},
            failure=Failure(
                step_kind="tool" if first["tool"] and not first["phrase"] else "session",
                step_name=first["tool"] if first["tool"] and not first["phrase"] else None,
                error_type="human_handoff_request",
                message="the conversation was handed to a human",
            ),
        )

    def _asks(self, turn: Turn) -> str | None:
        found = self._patterns.first_match(turn.user_message or "")
        return None if found is None else shorten(found[1].group(0), 60)

    def _is_handoff(self, tool: str) -> bool:
        return any(fnmatch.fnmatchcase(tool.lower(), glob.lower()) for glob in self._tools)


# --- abandonment -------------------------------------------------------------------------------


@register
class Abandonment(BaseEvaluator):
    """0 when the conversation's last turn failed (a span failed) or went unanswered and the session ended idle: the
    user did not come back; else 1. Skips a session still open or cut by a limit."""

    name = "abandonment"
    level = "session"
    kind = "rule"
    count_answered_errors = Param(
        True, "count a last turn whose span failed even when the agent still answered (e.g. an apology)"
    )

    def evaluate(self, session: Session) -> EvalResult:
        last = session.last_turn
        if last is None:
            return EvalResult.skip(SkipReason.NO_DATA, "the session has no turns")
        if session.ended in ("open", "cut"):
            why = "is still open" if session.ended == "open" else "was cut by a limit"
            return EvalResult.skip(SkipReason.NOT_APPLICABLE, f"the session {why}: whether the user left is unknown")
        number = len(session.turns)
        where = _ref(session, number - 1)
        if session.ended == "explicit_end":
            return EvalResult(1.0, explanation=f"the conversation was ended explicitly after turn {number}")
        failed = last.has_error and (self.count_answered_errors or not last.answered)
        if not failed and last.answer is None:
            return EvalResult.skip(SkipReason.NO_DATA, f"turn {number}'s answer was not recorded")
        if not failed and last.answered:
            return EvalResult(1.0, explanation=f"the last turn ({number}) was answered without errors")
        said = f" after {_quote(last.user_message)}" if last.user_message else ""
        if failed:
            error = last.errors[0]
            step = " ".join(part for part in (error.kind, error.name) if part)
            what = f"{step} failed" + (f" ({shorten(error.message, 80)})" if error.message else "")
            failure = _error_failure(error)
            reason = "error"
        else:
            what = "the agent gave an empty answer"
            failure = Failure(step_kind="session", error_type="unanswered", message="the last turn went unanswered")
            reason = "unanswered"
        return EvalResult(
            0.0,
            explanation=f"the user left after turn {number}{said}: {what}",
            details={**where, "reason": reason, "errors": [e.name for e in last.errors[:10]], "ended": session.ended},
            failure=failure,
        )


# --- turn_errors -------------------------------------------------------------------------------


@register
class TurnErrors(BaseEvaluator):
    """Share of turns without a failing span (1: none failed); threshold 0.8 = at most 1 turn in 5 failed."""

    name = "turn_errors"
    level = "session"
    kind = "rule"
    threshold = 0.8

    def evaluate(self, session: Session) -> EvalResult:
        if not session.turns:
            return EvalResult.skip(SkipReason.NO_DATA, "the session has no turns")
        failing = [i for i, t in enumerate(session.turns) if t.has_error]
        total = len(session.turns)
        score = 1.0 - len(failing) / total
        if not failing:
            return EvalResult(1.0, explanation=f"no turn had a failing span ({total} turns)")
        described = []
        for i in failing:
            error = session.turns[i].errors[0]
            described.append(f"turn {i + 1}: " + " ".join(part for part in (error.kind, error.name) if part))
        first = session.turns[failing[0]].errors[0]
        return EvalResult(
            score,
            explanation=f"{len(failing)} of {total} turns had a failing span: {listing(described, 3)}",
            details={
                "failing_turns": [i + 1 for i in failing],
                "trace_ids": [session.turns[i].trace_id for i in failing[:20]],
                "turns": total,
            },
            failure=_error_failure(first) if score < self.threshold else None,
        )


# --- budgets -----------------------------------------------------------------------------------


@register
class SessionTurnBudget(BaseEvaluator):
    """Turns of the conversation: 1 at or below max_turns, decaying above; threshold 1 = within budget."""

    name = "session_turn_budget"
    level = "session"
    kind = "rule"
    threshold = 1.0
    max_turns = Param(20, "turns one conversation may take", min=1)
    decay = Param(2.0, DECAY_HELP, min=1.0, max=100.0)

    def evaluate(self, session: Session) -> EvalResult:
        turns = len(session.turns) + session.turns_cut
        if turns == 0:
            return EvalResult.skip(SkipReason.NO_DATA, "the session has no turns")
        within = turns <= self.max_turns
        cut = f" ({session.turns_cut} not kept)" if session.turns_cut else ""
        return EvalResult(
            score=decay_score(turns, self.max_turns, self.decay),
            explanation=f"{turns} turns{cut}, {'within' if within else 'over'} the {self.max_turns} turn budget",
            details={"turns": turns, "max_turns": self.max_turns, "turns_cut": session.turns_cut},
            failure=None
            if within
            else Failure(
                step_kind="session", error_type="over_turn_budget", message="the conversation took too many turns"
            ),
        )


@register
class SessionTokenBudget(BaseEvaluator):
    """Tokens of the conversation's LLM calls: 1 at or below max_tokens, decaying above; threshold 1 = within budget."""

    name = "session_token_budget"
    level = "session"
    kind = "rule"
    threshold = 1.0
    max_tokens = Param(200000, "token budget of one conversation (input + output tokens of every turn)", min=0)
    decay = Param(2.0, DECAY_HELP, min=1.0, max=100.0)

    def evaluate(self, session: Session) -> EvalResult:
        used = session.total_tokens
        if used == 0:
            return EvalResult.skip(SkipReason.NO_DATA, "no LLM token usage recorded in the session's turns")
        within = used <= self.max_tokens
        largest = max(
            range(len(session.turns)), key=lambda i: session.turns[i].input_tokens + session.turns[i].output_tokens
        )
        big = session.turns[largest]
        return EvalResult(
            score=decay_score(used, self.max_tokens, self.decay),
            explanation=(
                f"{used} tokens over {len(session.turns)} turns (most in turn {largest + 1}: "
                f"{fmt_num(big.input_tokens + big.output_tokens)}), {'within' if within else 'over'} the "
                f"{self.max_tokens} token budget"
            ),
            details={
                "total_tokens": used,
                "input_tokens": sum(t.input_tokens for t in session.turns),
                "output_tokens": sum(t.output_tokens for t in session.turns),
                "max_tokens": self.max_tokens,
                "largest_turn": _ref(session, largest),
            },
            failure=None
            if within
            else Failure(
                step_kind="session",
                error_type="over_token_budget",
                message="the conversation used more tokens than its budget",
            ),
        )
