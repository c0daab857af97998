"""TraceEvaluator with LLM judges: the worker only prepares them (sampled by trace id), rules run as before."""

from __future__ import annotations

from evaluators.judges import JudgeRequest, LLMJudge
from evaluators.judges.control import judge_sampled_in
from evaluators.sdk import EvalResult, SkipReason, builtin
from monitor.engine.batch_run import trace_tally
from monitor.engine.configured import ConfiguredEvaluator
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.metrics.tally import MetricsTally
from tests.support.completed_traces import synthetic_traces


class AnswerJudge(LLMJudge):
    name = "answer_judge"
    level = "trace"

    def build_prompt(self, trace, task=None):
        if trace.output is None:
            return EvalResult.skip(SkipReason.NO_DATA, "no answer")
        return f"judge this: {trace.output}"


def configured(sampling: float) -> list[ConfiguredEvaluator]:
    return [
        ConfiguredEvaluator(builtin("error_free"), "error_free"),
        ConfiguredEvaluator(AnswerJudge(), "answers", sampling=sampling),
    ]


def test_sampled_traces_become_judge_jobs_and_the_rest_sampled_out_rows() -> None:
    traces = synthetic_traces(200)
    evaluator = TraceEvaluator(configured(0.3))
    outcomes = evaluator.evaluate_batch(traces)
    sampled = {t.trace_id for t in traces if judge_sampled_in(t.trace_id, 0.3)}
    assert 20 < len(sampled) < 100
    jobs = [job for o in outcomes for job in o.judge_jobs]
    assert {job.trace_id for job in jobs} == sampled
    assert all(job.evaluator == "answers" and job.level == "trace" and job.service == o.service for o in outcomes
               for job in o.judge_jobs)  # fmt: skip
    assert all(isinstance(job.request, JudgeRequest) and job.request.prompt.startswith("judge this") for job in jobs)
    for o in outcomes:
        rows = {r.evaluator: r for r in o.results}
        assert rows["error_free"].passed is not None  # the rules ran
        if o.trace_id in sampled:
            assert "answers" not in rows  # its result comes later, from the judge stage
        else:
            assert rows["answers"].skip_reason == "sampled_out"
    tally = MetricsTally.from_wire(trace_tally(outcomes).wire())  # the jobs cross the process boundary with the tally
    assert [j.trace_id for j in tally.judge_jobs] == [j.trace_id for j in jobs]


class NothingToJudge(LLMJudge):
    name = "nothing_to_judge"
    level = "llm"

    def build_prompt(self, call, task=None):
        return EvalResult.skip(SkipReason.NO_DATA, f"nothing in {call.span_id}")


def test_a_judge_with_nothing_to_judge_is_decided_in_the_worker_per_dispatch_unit() -> None:
    traces = synthetic_traces(5)
    evaluators = [ConfiguredEvaluator(NothingToJudge(), "nothing")]
    outcomes = TraceEvaluator(evaluators).evaluate_batch(traces)
    for o in outcomes:
        assert o.judge_jobs == ()
        assert o.results and all(r.evaluator == "nothing" and r.skip_reason == "no_data" for r in o.results)
        assert all(r.level == "llm" and r.span_id and r.span_id in r.explanation for r in o.results)


def test_without_a_job_list_judges_are_left_out() -> None:
    trace = synthetic_traces(1)[0]
    evaluator = TraceEvaluator(configured(1.0))
    from evaluators.traces import build_trace

    rows = evaluator.rows(build_trace(trace.spans, trace.trace_id))
    assert [r.evaluator for r in rows] == ["error_free"]
