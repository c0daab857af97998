"""Failure signatures where results are made: every failing result of the worker's evaluation and of the judges
has one (with the configured fingerprint rules), passes and skips have none, and the outcome carries the trace's
`service.version`."""

from __future__ import annotations

from evaluators.sdk import EvalResult
from evaluators.signatures import Failure, SignatureRule
from monitor.config import MonitorConfig
from monitor.engine.evaluator_setup import build_evaluators
from monitor.engine.judge_stage import judge_row
from monitor.engine.signing import Signer
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.outcomes import JudgeJob
from tests.support.store_builders import agent_trace


def evaluator(config: MonitorConfig) -> TraceEvaluator:
    built, problems = build_evaluators(config.evaluator_entries())
    assert not problems
    return TraceEvaluator.from_config(built, config)


def test_failing_results_have_a_signature_and_the_outcome_its_version() -> None:
    outcome = evaluator(MonitorConfig()).outcome(agent_trace(version="1.5"))
    assert outcome.version == "1.5"
    failing = [r for r in outcome.results if r.passed is False and r.skip_reason is None]
    assert failing, "the trace's calc tool fails"
    assert all(r.signature is not None and r.signature.evaluator == r.evaluator for r in failing)
    assert all(r.signature is None for r in outcome.results if r not in failing)
    again = evaluator(MonitorConfig()).outcome(agent_trace("cd" * 16))  # another trace, another process alike
    assert [r.signature.id for r in failing] == [r.signature.id for r in again.results if r.signature]
    assert again.version == ""


def test_the_rules_apply_in_the_worker() -> None:
    config = MonitorConfig.model_validate({"signatures": {"rules": [{"name": "everything"}]}})
    outcome = evaluator(config).outcome(agent_trace())
    templates = {r.signature.template for r in outcome.results if r.signature is not None}
    assert templates == {"everything"}


def test_judge_rows_and_the_signer() -> None:
    signer = Signer((SignatureRule("refusals", error_type="refusal"),))
    failed = EvalResult(0.1, False, "refused: order 123", failure=Failure(error_type="refusal"))
    job = JudgeJob("ab" * 16, "shop", "helpfulness", "agent", None, "planner", None, None, "b", "1.5")
    row = judge_row(job, failed, 0.5, signer(job.evaluator, job.level, job.agent, failed))
    assert row.signature is not None and row.signature.template == "refusals" and row.signature.agent == "planner"
    assert signer("helpfulness", "trace", None, EvalResult(0.9, True)) is None
    assert signer("helpfulness", "trace", None, EvalResult.skip("no_data")) is None
    assert signer("helpfulness", "trace", None, EvalResult(0.5)) is None  # no verdict
    assert signer("helpfulness", "agent", "planner", failed) is row.signature  # remembered
