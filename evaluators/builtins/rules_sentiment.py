"""`user_sentiment`: how a conversation's user sounds at its end (VADER's lexicon, shipped in vaderSentiment's
wheel: no network, no model call), the cheap rule beside the `user_frustration` LLM judge."""

from __future__ import annotations

import threading
from typing import Any

from evaluators.sdk import BaseEvaluator, EvalResult, Param, SkipReason, register
from evaluators.sessions.model import Session
from evaluators.signatures import Failure

from ._common import shorten

QUOTE = 80  # characters of a user message quoted in an explanation

_analyzer: Any = None
_analyzer_lock = threading.Lock()


def sentiment_analyzer() -> Any:
    """VADER's SentimentIntensityAnalyzer, built once per process on first use (it reads its lexicon, ~10 ms)."""
    global _analyzer
    if _analyzer is None:
        with _analyzer_lock:
            if _analyzer is None:
                from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

                _analyzer = SentimentIntensityAnalyzer()
    return _analyzer


def compound(text: str) -> float:
    """VADER's compound score of `text`: -1 (most negative) .. 1 (most positive), 0 neutral."""
    return float(sentiment_analyzer().polarity_scores(text)["compound"])


def recency_weighted(scores: list[float]) -> float:
    """The mean of `scores` weighted 1, 2, ... n (the last weighs most)."""
    weights = range(1, len(scores) + 1)
    return sum(w * s for w, s in zip(weights, scores)) / sum(weights)


@register
class UserSentiment(BaseEvaluator):
    """The user's sentiment at the end of a conversation: VADER's compound score of the last user turns (the
    last weighing most) mapped to 0–1; below the threshold (the user ends negative) fails. Skips a session with
    fewer than `min_turns` user messages."""

    name = "user_sentiment"
    level = "session"
    kind = "rule"
    threshold = 0.475  # a compound score below -0.05: VADER's own cut for "negative"
    window = Param(3, "how many of the last user messages are scored (weighted 1, 2, ... the last most)", min=1, max=20)
    min_turns = Param(
        2, "fewest user messages a session needs (one message is an opening, not how the user ends)", min=1
    )
    max_chars = Param(500, "characters of each user message scored (its end: the cost is linear in them)", min=20)

    def evaluate(self, session: Session) -> EvalResult:
        users = [(i, t.user_message) for i, t in enumerate(session.turns) if t.user_message and t.user_message.strip()]
        if len(users) < self.min_turns:
            return EvalResult.skip(
                SkipReason.NOT_APPLICABLE, f"{len(users)} user message(s), fewer than min_turns={self.min_turns}"
            )
        scored = [(i, text, compound(text[-self.max_chars :])) for i, text in users[-self.window :]]
        ending = recency_weighted([c for _, _, c in scored])
        score = (ending + 1.0) / 2.0
        worst_index, worst_text, worst = min(scored, key=lambda item: item[2])
        turns = [{"turn": i + 1, "trace_id": session.turns[i].trace_id, "compound": round(c, 4)} for i, _, c in scored]
        details = {
            "compound": round(ending, 4),
            "turns": turns,
            "worst_turn": worst_index + 1,
            "worst_compound": round(worst, 4),
            "user_messages": len(users),
        }
        text = f"user sentiment at the end {ending:+.2f} over the last {len(scored)} of {len(users)} user message(s)"
        text += f"; worst turn {worst_index + 1} ({worst:+.2f}): {shorten(worst_text, QUOTE)!r}"
        failure = None
        if score < self.threshold:
            failure = Failure(step_kind="session", error_type="negative_user", message="the user ends negative")
        return EvalResult(score, explanation=text, details=details, failure=failure)
