"""SessionEvaluation: a completed session → its session-level evaluators' result rows → a metrics tally.

Rule evaluators run here (the tracker calls it on a worker thread, never on the event loop); LLM judges at session
level are not run here: `judges` lists them for the tracker's judge hook. Sampling is by session id (every replica
and every re-run make the same choice for a session); a result past `evaluation.timeout` becomes a `timeout` skip,
as at the other levels; a failing result gets its failure signature.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from evaluators.judges import LLMJudge
from evaluators.sdk import Dispatched, dispatch_session
from evaluators.sessions import Session
from monitor.config.pipeline import EvaluationConfig
from monitor.engine.configured import ConfiguredEvaluator, sampled_in
from monitor.engine.signing import Signer
from monitor.metrics.tally import MetricsTally
from monitor.outcomes import ResultRow, result_row

LEVEL = "session"
UNKNOWN_SERVICE = "unknown"


class Evaluated(NamedTuple):
    """A completed session and the result rows of its rule evaluators."""

    session: Session
    rows: list[ResultRow]


def session_tally(evaluated: Iterable[Evaluated]) -> MetricsTally:
    """The results of evaluated sessions as one tally, like a batch of traces': level "session", agent "", the
    session's service, and its last turn's trace id as the exemplar of a failure."""
    tally = MetricsTally()
    for session, rows in evaluated:
        last = session.last_turn
        if rows and last is not None:
            tally.add_results(session.service or UNKNOWN_SERVICE, last.trace_id, rows)
    return tally


def is_session_level(configured: ConfiguredEvaluator) -> bool:
    return str(getattr(configured.evaluator, "level", "trace")) == LEVEL


class SessionEvaluation:
    """The session-level evaluators of a configured set: `rules` run here, `judges` (LLM judges) are listed."""

    def __init__(
        self,
        evaluators: Sequence[ConfiguredEvaluator],
        *,
        timeout_seconds: float = EvaluationConfig.model_fields["timeout"].default,
        signer: Signer | None = None,
    ) -> None:
        chosen = [c for c in evaluators if is_session_level(c)]
        self.rules = [c for c in chosen if not isinstance(c.evaluator, LLMJudge)]
        self.judges = [c for c in chosen if isinstance(c.evaluator, LLMJudge)]
        self.timeout_seconds = timeout_seconds
        self.signer = signer if signer is not None else Signer()
        self._label_of = {id(c.evaluator): c.label for c in self.rules}

    def evaluate(self, sessions: Iterable[Session]) -> list[Evaluated]:
        """Every session with its rules' result rows (no rules: no rows)."""
        return [Evaluated(session, self.rows(session) if self.rules else []) for session in sessions]

    def rows(self, session: Session) -> list[ResultRow]:
        """One row per rule evaluator, in configured order (sampled out ones as `sampled_out` skips)."""
        by_label: dict[str, ResultRow] = {}
        chosen = []
        for configured in self.rules:
            if sampled_in(session.session_id, configured.label, configured.sampling):
                chosen.append(configured.evaluator)
            else:
                by_label[configured.label] = _sampled_out(configured)
        limit_ms = self.timeout_seconds * 1000.0
        for done in dispatch_session(session, chosen):
            label = self._label_of[id(done.evaluator)]
            by_label[label] = self._row(label, done, limit_ms)
        return [by_label[c.label] for c in self.rules if c.label in by_label]

    def _row(self, label: str, done: Dispatched, limit_ms: float) -> ResultRow:
        row = result_row(
            done.result,
            span_id=None,
            agent=None,
            model=None,
            evaluator=label,
            level=LEVEL,
            seconds=done.duration_ms / 1000.0,
            signature=self.signer(label, LEVEL, None, done.result),
        )
        if done.duration_ms > limit_ms and row.skip_reason is None:
            message = f"ran {done.duration_ms / 1000:.1f}s, over the {self.timeout_seconds:g}s limit"
            return row._replace(
                score=None, passed=None, skip_reason="timeout", explanation=message, details=None, signature=None
            )
        return row


def _sampled_out(configured: ConfiguredEvaluator) -> ResultRow:
    message = f"sampled out at rate {configured.sampling:g}"
    return ResultRow(None, None, None, configured.label, LEVEL, None, None, "sampled_out", message, None, 0.0)
