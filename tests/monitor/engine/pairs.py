"""Helpers for the pairwise tests: traces of two variants as the workers see them, their offers after the
process boundary, a fake judge model per order, and a recorder of what the stage counts and stores."""

from __future__ import annotations

import itertools
import json
import pickle
from typing import Any

from evaluators.judges import JudgeRequest, PairwiseReply
from evaluators.sdk import EvalResult, builtin
from monitor.config.variants import VariantsConfig
from monitor.engine.batch_run import trace_tally
from monitor.engine.pairing import PairOffer
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.metrics.tally import MetricsTally
from monitor.outcomes import LateResults
from tests.support.spanfactory import make_span, trace_of

_ids = itertools.count(1)
JUDGE = builtin("pairwise_quality")


def messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def variants(*entries: dict[str, Any]) -> VariantsConfig:
    return VariantsConfig.model_validate({"attribute": "service.version", "pairwise": list(entries)})


def offers(config: VariantsConfig, *traces: tuple[str, str, str | None, dict[str, Any] | None]) -> list[PairOffer]:
    """The offers of traces (version, question, answer, root attributes) evaluated as a worker does, after
    the tally's trip across the process boundary."""
    evaluator = TraceEvaluator([], variants=config)
    outcomes = [evaluator.outcome(agent_trace(*t)) for t in traces]
    tally = MetricsTally.from_wire(pickle.loads(pickle.dumps(trace_tally(outcomes).wire())))
    return [PairOffer(*o) for o in tally.pair_offers]


def agent_trace(version: str, question: str, answer: str | None = None, attributes: dict[str, Any] | None = None):
    """A one-span agent trace of `version` (resource service.version) answering `question` with `answer`."""
    attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "geo",
             "gen_ai.input.messages": messages("user", question), **(attributes or {})}  # fmt: skip
    if answer is not None:
        attrs["gen_ai.output.messages"] = messages("assistant", answer)
    trace_id = f"{next(_ids):032x}"
    resource = {"service.name": "geo-agent", "service.version": version}
    return trace_of(make_span("invoke_agent geo", attrs, trace_id=trace_id, resource=resource))


def block(prompt: str, name: str) -> str:
    return prompt.split(f'<data name="{name}">\n', 1)[1].split("\n</data>", 1)[0]


class FakeJudgeModel:
    """`judge(judge, request, *, name)` like JudgeEngine.judge: answers `choose(answer_a, answer_b)` and keeps
    every request."""

    def __init__(self, choose=None) -> None:
        self.choose = choose or (lambda a, b: "SAME")
        self.requests: list[tuple[str, JudgeRequest]] = []

    async def __call__(self, judge, request: JudgeRequest, *, name: str) -> EvalResult:
        self.requests.append((name, request))
        choice = self.choose(block(request.prompt, "answer_a"), block(request.prompt, "answer_b"))
        if isinstance(choice, EvalResult):
            return choice
        return judge.to_result(PairwiseReply(choice=choice, explanation=f"picked {choice}")).resolve(judge.threshold)


def prefer(answer: str):
    """A consistent judge model: the position of `answer`, wherever it is."""
    return lambda a, b: "A" if a == answer else "B" if b == answer else "SAME"


class Recorder:
    """What the stage counts (tallies), stores (late results) and adds to agent_eval_pairwise_total."""

    def __init__(self) -> None:
        self.tallies: list[MetricsTally] = []
        self.writes: list[LateResults] = []
        self.pairs: list[tuple[str, str, str, str]] = []

    def count_pair(self, evaluator: str, baseline: str, candidate: str, outcome: str) -> None:
        self.pairs.append((evaluator, baseline, candidate, outcome))

    def outcomes(self, variant: str | None = None) -> dict[str, int]:
        """pass/fail/<skip reason> → count (of one variant, or all)."""
        out: dict[str, int] = {}
        for tally in self.tallies:
            for (_, _, _, _, v), counts in tally.results.items():
                if variant is not None and v != variant:
                    continue
                for key, n in (("pass", counts.passed), ("fail", counts.failed), *counts.skips.items()):
                    out[key] = out.get(key, 0) + n
        return {key: n for key, n in out.items() if n}

    def rows(self) -> dict[str, list[dict[str, Any]]]:
        """Stored rows by trace id, details parsed."""
        found: dict[str, list[dict[str, Any]]] = {}
        for late in self.writes:
            for row in late.results:
                entry = {**row._asdict(), "details": json.loads(row.details) if row.details else None}
                found.setdefault(late.trace_id, []).append(entry)
        return found


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now
