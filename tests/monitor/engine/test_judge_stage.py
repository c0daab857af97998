"""JudgeStage: judge jobs become tasks on the loop, results become metrics and late store rows, bounded."""

from __future__ import annotations

import asyncio

from evaluators.judges import JudgeRequest, LLMJudge
from evaluators.sdk import EvalResult, SkipReason
from monitor.engine.judge_stage import JudgeStage
from monitor.metrics.tally import MetricsTally
from monitor.outcomes import JudgeJob, LateResults


class Judge(LLMJudge):
    name = "stage_judge"
    level = "trace"

    def build_prompt(self, subject, task=None):
        return "prompt"


def job(n: int, label: str = "j") -> JudgeJob:
    return JudgeJob(f"{n:032x}", "svc", label, "trace", "ab" * 8, None, None, JudgeRequest("sys", f"p{n}"))


class Recorder:
    def __init__(self) -> None:
        self.tallies: list[MetricsTally] = []
        self.writes: list[LateResults] = []

    def outcomes(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for tally in self.tallies:
            for counts in tally.results.values():
                out["pass"] = out.get("pass", 0) + counts.passed
                out["fail"] = out.get("fail", 0) + counts.failed
                for reason, n in counts.skips.items():
                    out[reason] = out.get(reason, 0) + n
        return {key: n for key, n in out.items() if n}


def stage_with(judge_fn, recorder: Recorder, **kwargs) -> JudgeStage:
    return JudgeStage({"j": Judge()}, judge_fn, recorder.tallies.append, recorder.writes.extend, **kwargs)


def test_results_are_counted_and_stored_per_trace() -> None:
    async def judge(judge, request, *, name):
        score = 1.0 if request.prompt.endswith(("0", "2")) else 0.0
        return EvalResult(score).resolve(judge.threshold)

    async def scenario():
        recorder = Recorder()
        stage = stage_with(judge, recorder)
        stage.submit([job(n) for n in range(4)])
        assert stage.pending == 4
        assert await stage.drain(5) == 0
        return recorder, stage

    recorder, stage = asyncio.run(scenario())
    assert recorder.outcomes() == {"pass": 2, "fail": 2}
    assert sorted(w.trace_id for w in recorder.writes) == [f"{n:032x}" for n in range(4)]
    assert all(w.results[0].evaluator == "j" and w.results[0].span_id == "ab" * 8 for w in recorder.writes)
    assert stage.completed == 4


def test_over_max_pending_a_job_is_skipped_at_once_not_queued() -> None:
    release = asyncio.Event()

    async def judge(judge, request, *, name):
        await release.wait()
        return EvalResult(1.0).resolve(judge.threshold)

    capacity: list[tuple[str, str]] = []

    async def scenario():
        recorder = Recorder()
        stage = stage_with(judge, recorder, max_pending=3, on_capacity_skip=lambda *skip: capacity.append(skip))
        stage.submit([job(n) for n in range(5)])
        pending = stage.pending
        refused = recorder.outcomes()
        release.set()
        await stage.drain(5)
        return pending, refused, recorder.outcomes()

    pending, refused, final = asyncio.run(scenario())
    assert pending == 3
    # a full backlog is a lack of capacity: its own skip reason, counted with the setting that stopped it
    assert refused == {"rate_limited": 2}
    assert final == {"rate_limited": 2, "pass": 3}
    assert capacity == [("j", "judges.max_pending")] * 2


def test_shutdown_cancels_what_the_grace_period_did_not_finish_and_counts_it() -> None:
    async def judge(judge, request, *, name):
        await asyncio.sleep(60)
        return EvalResult(1.0)

    async def scenario():
        recorder = Recorder()
        stage = stage_with(judge, recorder)
        stage.submit([job(n) for n in range(3)])
        await stage.shutdown(grace=0.05)
        await stage.shutdown(grace=0.05)  # idempotent
        stage.submit([job(9)])  # after shutdown: skipped, never started
        return recorder, stage

    recorder, stage = asyncio.run(scenario())
    assert stage.pending == 0
    assert recorder.outcomes() == {"judge_unavailable": 4}
    assert len(recorder.writes) == 4


def test_an_engine_bug_becomes_an_error_skip_and_the_stage_goes_on() -> None:
    async def judge(judge, request, *, name):
        if request.prompt == "p1":
            raise RuntimeError("bug")
        return EvalResult(1.0).resolve(judge.threshold)

    async def scenario():
        recorder = Recorder()
        stage = stage_with(judge, recorder)
        stage.submit([job(0), job(1), job(2, label="not-configured")])
        await stage.drain(5)
        return recorder

    recorder = asyncio.run(scenario())
    assert recorder.outcomes() == {"pass": 1, "error": 1, SkipReason.JUDGE_UNAVAILABLE.value: 1}
