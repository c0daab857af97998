"""The worker side: each evaluated trace with a session id gives its outcome a compact turn, which crosses to the
main process in the batch's tally; session-level evaluators never run on a single trace."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from evaluators.sdk import builtin
from evaluators.traces import read_paths
from monitor.config import MonitorConfig
from monitor.engine.batch_run import BatchRun
from monitor.engine.configured import ConfiguredEvaluator
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.engine.turn_wire import turn_of_wire
from monitor.metrics.tally import MetricsTally
from monitor.outcomes import TraceOutcome
from tests.support.completed_traces import completed_from_batch
from tests.support.session_evals import no_handoff

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "corpus"
SUPPORT = CORPUS / "oi_openai__session_support"
INTERLEAVED = CORPUS / "otel_genai__session_interleaved"
SUPPORT_ID = "c0a8f1d2-5b7e-4e21-9a43-7d1f0e6b2c95"


def completed(*directories: Path) -> list:
    batch = read_paths([str(d) for d in directories])
    return completed_from_batch(batch.spans, batch.logs)


def evaluators() -> list[ConfiguredEvaluator]:
    return [ConfiguredEvaluator(builtin("error_free"), "error_free"), ConfiguredEvaluator(no_handoff, "no_handoff")]


def outcomes(evaluator: TraceEvaluator, *directories: Path) -> list[TraceOutcome]:
    done = evaluator.evaluate_batch(completed(*directories))
    assert all(isinstance(o, TraceOutcome) for o in done)
    return done  # type: ignore[return-value]


def test_each_turn_of_a_conversation_carries_its_session_and_summary() -> None:
    found = outcomes(TraceEvaluator(evaluators(), session_attributes=()), SUPPORT)
    turns = sorted((turn_of_wire(o.turn) for o in found if o.turn is not None), key=lambda t: t.turn.start_ns)
    assert len(turns) == 3 == len(found)
    assert {(t.session_id, t.source) for t in turns} == {(SUPPORT_ID, "session.id")}
    assert "request_human_agent" in turns[-1].turn.tool_calls
    assert all(t.turn.user_message and t.turn.answer for t in turns)
    assert {t.turn.trace_id for t in turns} == {o.trace_id for o in found}


def test_session_evaluators_never_run_on_a_trace() -> None:
    """Not even as a sampled_out skip: a session evaluator has no result at trace level."""
    sampled = [ConfiguredEvaluator(builtin("error_free"), "error_free"), ConfiguredEvaluator(no_handoff, "x", 0.0)]
    for configured in (evaluators(), sampled):
        for outcome in outcomes(TraceEvaluator(configured, session_attributes=()), SUPPORT):
            assert {r.evaluator for r in outcome.results} == {"error_free"}
            assert {r.level for r in outcome.results} == {"trace"}


def test_two_interleaved_conversations_give_turns_of_two_sessions() -> None:
    found = outcomes(TraceEvaluator([], session_attributes=()), INTERLEAVED)
    sessions: dict[str, int] = {}
    for o in found:
        assert o.turn is not None
        ref = turn_of_wire(o.turn)
        assert ref.source == "gen_ai.conversation.id"
        sessions[ref.session_id] = sessions.get(ref.session_id, 0) + 1
    assert sorted(sessions.values()) == [2, 2]


def test_no_turn_when_sessions_are_off_and_the_configured_attribute_comes_first() -> None:
    assert all(o.turn is None for o in outcomes(TraceEvaluator([]), SUPPORT))
    found = outcomes(TraceEvaluator([], session_attributes=["user.id"]), SUPPORT)
    assert {turn_of_wire(o.turn)[:2] for o in found if o.turn} == {("user-42", "user.id")}


def test_the_config_decides_whether_workers_make_turns() -> None:
    on = TraceEvaluator.from_config([], MonitorConfig.model_validate({"sessions": {"attribute": ["app.thread"]}}))
    off = TraceEvaluator.from_config([], MonitorConfig.model_validate({"sessions": {"enabled": False}}))
    assert on.session_attributes == ("app.thread",) and off.session_attributes is None
    assert TraceEvaluator.from_config([], MonitorConfig()).session_attributes == ()  # on by default


def test_turns_cross_the_process_boundary_in_the_batch_tally() -> None:
    result = BatchRun(TraceEvaluator([], session_attributes=()))(completed(SUPPORT, INTERLEAVED))
    tally = MetricsTally.from_wire(pickle.loads(pickle.dumps(result.tally)))
    assert len(tally.turns) == 7
    assert {turn_of_wire(w).session_id for w in tally.turns} >= {SUPPORT_ID}


@pytest.mark.integration
def test_importing_sessions_leaves_the_price_table_unloaded() -> None:
    """Turns price their calls, but the price table (genai-prices) loads when the first turn is built, not on import."""
    code = "import sys, evaluators.sessions; assert 'evaluators.pricing' not in sys.modules, 'pricing imported'"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
