"""Ground-truth builtins: compare a trace with its Task (expected answer, tool path, relevant documents, budgets).

Each takes `task: Task` without a default, so it needs ground truth: in monitor mode the runner skips it
with `needs_ground_truth`; given a task that lacks the field it compares against, it skips with `no_data`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

from ..sdk import BaseEvaluator, EvalResult, Param, SkipReason, Task, TrajectoryStep, register
from ..signatures import Failure
from ..traces.model import Trace

_SHOWN = 80  # characters of trace text quoted in an explanation
_WORD = re.compile(r"[^\W_]+")
TRAJECTORY_MODES = ("EXACT", "IN_ORDER", "ANY_ORDER")


def _short(text: Any, limit: int = _SHOWN) -> str:
    """`text` on one line, at most `limit` characters, quoted (explanations must stay bounded)."""
    flat = " ".join(str(text).split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")


def _no_data(message: str) -> EvalResult:
    return EvalResult.skip(SkipReason.NO_DATA, message)


def _verdict(ok: bool, explanation: str, failure: Failure | None = None, **details: Any) -> EvalResult:
    return EvalResult(1.0 if ok else 0.0, explanation=explanation, details=details, failure=None if ok else failure)


def _answer_failure(error_type: str, message: str) -> Failure:
    """A failure of the trace's final answer against the task (the texts vary: they are not in it)."""
    return Failure(step_kind="trace", error_type=error_type, message=message)


class _AnswerEvaluator(BaseEvaluator):
    """Shared by the evaluators comparing the trace's final answer with `task.expected_output`."""

    level = "trace"
    kind = "rule"
    case_sensitive = Param(False, "compare letter case exactly")
    strip = Param(True, "ignore leading and trailing whitespace")

    def _texts(self, trace: Trace, task: Task) -> tuple[str, str] | EvalResult:
        """(output, expected) normalized per the params, or a no_data skip."""
        if task.expected_output is None:
            return _no_data(f"task {task.task_id!r} has no expected_output")
        if trace.output is None:
            return _no_data("the trace has no final output")
        output, expected = trace.output, task.expected_output
        if self.strip:
            output, expected = output.strip(), expected.strip()
        if not self.case_sensitive:
            output, expected = output.casefold(), expected.casefold()
        return output, expected


@register
class ExactMatch(_AnswerEvaluator):
    """1 when the trace's final output equals the task's expected_output (case-insensitive by default)."""

    name = "exact_match"
    threshold = 1.0

    def evaluate(self, trace: Trace, task: Task) -> EvalResult:
        texts = self._texts(trace, task)
        if isinstance(texts, EvalResult):
            return texts
        output, expected = texts
        if output == expected:
            return _verdict(True, "output equals the expected output")
        return _verdict(
            False,
            f"output {_short(trace.output)} differs from expected {_short(task.expected_output)}",
            _answer_failure("answer_mismatch", "the output differs from the expected output"),
        )


@register
class ContainsMatch(_AnswerEvaluator):
    """1 when the task's expected_output appears within the trace's final output."""

    name = "contains_match"
    threshold = 1.0

    def evaluate(self, trace: Trace, task: Task) -> EvalResult:
        texts = self._texts(trace, task)
        if isinstance(texts, EvalResult):
            return texts
        output, expected = texts
        if expected in output:
            return _verdict(True, "output contains the expected output")
        return _verdict(
            False,
            f"expected {_short(task.expected_output)} not found in output {_short(trace.output)}",
            _answer_failure("expected_not_found", "the expected output is not in the output"),
        )


def words(text: str) -> list[str]:
    """Lowercase word tokens (letters and digits), as ROUGE's default tokenizer splits them."""
    return _WORD.findall(text.lower())


def rouge1_f1(candidate: str, reference: str) -> tuple[float, float, float]:
    """(F1, precision, recall) of unigram overlap; two texts without words score 1, one without words 0."""
    got, want = Counter(words(candidate)), Counter(words(reference))
    if not got and not want:
        return 1.0, 1.0, 1.0
    overlap = sum((got & want).values())
    if overlap == 0:
        return 0.0, 0.0, 0.0
    precision = overlap / sum(got.values())
    recall = overlap / sum(want.values())
    return 2 * precision * recall / (precision + recall), precision, recall


@register
class ResponseMatch(BaseEvaluator):
    """ROUGE-1 F1 between the trace's final output and the task's expected_output (lowercase word unigrams)."""

    name = "response_match"
    level = "trace"
    kind = "rule"
    threshold = 0.5

    def evaluate(self, trace: Trace, task: Task) -> EvalResult:
        if task.expected_output is None:
            return _no_data(f"task {task.task_id!r} has no expected_output")
        if trace.output is None:
            return _no_data("the trace has no final output")
        f1, precision, recall = rouge1_f1(trace.output, task.expected_output)
        return EvalResult(
            f1,
            explanation=f"ROUGE-1 F1 {f1:.3f} (precision {precision:.3f}, recall {recall:.3f})",
            details={"precision": precision, "recall": recall},
            failure=None if f1 >= 1 else _answer_failure("low_overlap", "the output misses expected words"),
        )


# --- tool trajectory ---------------------------------------------------------------------------


def _args_match(actual: Any, expected: dict[str, Any], how: str) -> bool:
    if how == "subset":
        return isinstance(actual, dict) and all(k in actual and actual[k] == v for k, v in expected.items())
    return actual == expected


def _step_text(step: TrajectoryStep) -> str:
    return step.tool if step.args is None else f"{step.tool}({_short(step.args, 60)})"


@register
class ToolTrajectory(BaseEvaluator):
    """1 when the executed tools match the task's expected_trajectory (EXACT, IN_ORDER or ANY_ORDER, as in ADK).

    EXACT: the same calls in the same order, nothing more. IN_ORDER: the expected calls appear in this order,
    other calls may come between. ANY_ORDER: each expected call appears (a distinct call each), in any order.
    A step's args are compared only when the step gives them.
    """

    name = "tool_trajectory"
    level = "trace"
    kind = "rule"
    threshold = 1.0
    mode = Param("EXACT", "how the executed tools must match the expected ones", choices=TRAJECTORY_MODES)
    check_args = Param(True, "compare arguments for steps that specify args")
    args_match = Param(
        "exact", "exact: args equal the step's; subset: the step's args are among them", choices=("exact", "subset")
    )

    def _matches(self, call: Any, step: TrajectoryStep) -> bool:
        if call.name != step.tool:
            return False
        if not self.check_args or step.args is None:
            return True
        return _args_match(call.arguments, step.args, self.args_match)

    def evaluate(self, trace: Trace, task: Task) -> EvalResult:
        expected = task.expected_trajectory
        if expected is None:
            return _no_data(f"task {task.task_id!r} has no expected_trajectory")
        calls = trace.get_tool_calls()
        actual = [c.name for c in calls]
        details = {"mode": self.mode, "expected": [s.tool for s in expected], "actual": actual}
        if self.mode == "EXACT":
            ok = len(calls) == len(expected) and all(self._matches(c, s) for c, s in zip(calls, expected))
            why = "" if ok else f"expected [{', '.join(map(_step_text, expected))}], got [{', '.join(actual)}]"
        else:
            find = self._in_order_missing if self.mode == "IN_ORDER" else self._any_order_missing
            missing = find(calls, expected)
            ok = not missing
            details["missing"] = [s.tool for s in missing]
            how = "in order" if self.mode == "IN_ORDER" else "at all"
            why = "" if ok else f"not called {how}: {', '.join(map(_step_text, missing))}; got [{', '.join(actual)}]"
        if ok:
            return _verdict(True, f"{len(calls)} tool calls match the expected trajectory ({self.mode})", **details)
        return _verdict(False, f"{self.mode}: {why}", self._failure(calls, expected, details.get("missing")), **details)

    def _failure(self, calls: list[Any], expected: list[TrajectoryStep], missing: list[str] | None) -> Failure:
        """The first expected step not matched (EXACT: the first position that differs, or an extra call)."""
        kind = f"trajectory_{self.mode.lower()}"
        if missing:
            return Failure("tool", missing[0], kind, "an expected tool was not called")
        for call, step in zip(calls, expected):
            if not self._matches(call, step):
                return Failure("tool", step.tool, kind, "another call where this one was expected")
        if len(calls) > len(expected):
            return Failure("tool", calls[len(expected)].name, kind, "a call beyond the expected trajectory")
        return Failure("tool", expected[len(calls)].tool, kind, "an expected tool was not called")

    def _in_order_missing(self, calls: list[Any], expected: list[TrajectoryStep]) -> list[TrajectoryStep]:
        """The expected steps left once the calls are consumed in order (the first unmatched one onwards)."""
        position = 0
        for call in calls:
            if position < len(expected) and self._matches(call, expected[position]):
                position += 1
        return list(expected[position:])

    def _any_order_missing(self, calls: list[Any], expected: list[TrajectoryStep]) -> list[TrajectoryStep]:
        """The expected steps with no distinct matching call."""
        unused = list(calls)
        missing = []
        for step in expected:
            found = next((c for c in unused if self._matches(c, step)), None)
            if found is None:
                missing.append(step)
            else:
                unused.remove(found)
        return missing


# --- retrieval ---------------------------------------------------------------------------------


class _RetrievalEvaluator(BaseEvaluator):
    """Shared by the ranking metrics: retrieved document ids (all retrievals, in order) vs relevant ones."""

    level = "trace"
    kind = "rule"
    k = Param(5, "how many top-ranked documents count", min=1)

    def evaluate(self, trace: Trace, task: Task) -> EvalResult:
        relevant = set(task.relevant_document_ids)
        if not relevant:
            return _no_data(f"task {task.task_id!r} has no relevant_document_ids")
        retrievals = trace.get_retrievals()
        if not retrievals:
            return _no_data("the trace has no retrieval spans")
        documents = [d for r in retrievals for d in r.documents]
        if documents and all(d.id is None for d in documents):
            return _no_data("the retrieved documents carry no ids")
        ranked = list(dict.fromkeys(str(d.id) if d.id is not None else f"\0{i}" for i, d in enumerate(documents)))
        hits = [doc in relevant for doc in ranked]
        score = self.metric(hits, len(relevant))
        found = sum(hits[: self.k])
        return EvalResult(
            score,
            explanation=f"{self.name} {score:.3f}: {found} of {len(relevant)} relevant documents in the top "
            f"{self.k} of {len(ranked)} retrieved",
            details={"k": self.k, "retrieved": len(ranked), "relevant": len(relevant), "relevant_in_top_k": found},
            failure=Failure("retriever", None, f"low_{self.name}", "relevant documents missing from the top k")
            if score < 1
            else None,
        )

    def metric(self, hits: list[bool], relevant: int) -> float:
        """The score from the ranked relevance flags and the number of relevant documents."""
        raise NotImplementedError


@register
class PrecisionAtK(_RetrievalEvaluator):
    """Share of the top k retrieved documents that are relevant (divided by k, as trec_eval does)."""

    name = "precision_at_k"

    def metric(self, hits: list[bool], relevant: int) -> float:
        return sum(hits[: self.k]) / self.k


@register
class RecallAtK(_RetrievalEvaluator):
    """Share of the task's relevant documents found in the top k retrieved."""

    name = "recall_at_k"

    def metric(self, hits: list[bool], relevant: int) -> float:
        return sum(hits[: self.k]) / relevant


@register
class Mrr(_RetrievalEvaluator):
    """Reciprocal rank of the first relevant document within the top k (0 when none)."""

    name = "mrr"

    def metric(self, hits: list[bool], relevant: int) -> float:
        return next((1.0 / rank for rank, hit in enumerate(hits[: self.k], start=1) if hit), 0.0)


@register
class NdcgAtK(_RetrievalEvaluator):
    """Normalized discounted cumulative gain of the top k retrieved documents (binary relevance)."""

    name = "ndcg_at_k"

    def metric(self, hits: list[bool], relevant: int) -> float:
        dcg = sum(1.0 / math.log2(rank + 1) for rank, hit in enumerate(hits[: self.k], start=1) if hit)
        ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(self.k, relevant) + 1))
        return min(dcg / ideal, 1.0)


# --- constraints -------------------------------------------------------------------------------


def _measures(trace: Trace) -> dict[str, float | None]:
    """The measured value of each constraint (None: the trace does not say)."""
    metrics = trace.metrics
    usage = metrics.token_usage
    has_usage = any(c.metrics.has_usage for c in trace.get_llm_calls())
    return {
        "max_latency_ms": metrics.total_duration_ms if metrics.total_duration_ms > 0 else None,
        "max_tokens": float(usage.total_tokens or usage.input_tokens + usage.output_tokens) if has_usage else None,
        "max_iterations": float(metrics.llm_call_count),
        "max_cost": metrics.cost,
    }


@register
class ConstraintsMet(BaseEvaluator):
    """Share of the task's constraints (latency, tokens, LLM calls, cost) the trace stayed within."""

    name = "constraints"
    level = "trace"
    kind = "rule"
    threshold = 1.0

    def evaluate(self, trace: Trace, task: Task) -> EvalResult:
        limits = task.constraints.model_dump(exclude_none=True) if task.constraints is not None else {}
        if not limits:
            return _no_data(f"task {task.task_id!r} has no constraints")
        measured = _measures(trace)
        checked: dict[str, dict[str, Any]] = {}
        unmeasured: list[str] = []
        for key, limit in limits.items():
            value = measured.get(key)
            if value is None:
                unmeasured.append(key)
            else:
                checked[key] = {"limit": limit, "value": value, "met": value <= limit}
        if not checked:
            return _no_data(f"the trace does not report {', '.join(unmeasured)}")
        violations = [f"{key} {c['value']:g} > {c['limit']:g}" for key, c in checked.items() if not c["met"]]
        met = len(checked) - len(violations)
        explanation = f"{met} of {len(checked)} constraints met"
        if violations:
            explanation += "; violated: " + ", ".join(violations)
        if unmeasured:
            explanation += f"; not measured: {', '.join(unmeasured)}"
        details = {"constraints": checked, "violations": violations, "unmeasured": unmeasured}
        broken = [key for key, c in checked.items() if not c["met"]]
        failure = Failure("trace", None, "constraint_violated", "violated: " + ", ".join(broken)) if broken else None
        return EvalResult(met / len(checked), explanation=explanation, details=details, failure=failure)
