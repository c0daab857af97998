"""The failure signatures of an offline run (`agent-monitor evaluate`, `compare`): failing results grouped by what
failed (`evaluators.signatures.failure_signature`), counted, with example trace ids; and, comparing two runs, the
signatures seen only (or far more often) in the candidate: new failure modes."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluators.sdk import EvaluationRecord
from evaluators.signatures import FailureSignature, SignatureRule, failure_signature
from monitor.text import clip

MAX_EXAMPLE_TRACES = 5
MAX_LISTED = 20  # signatures shown in the text report
TEXT_TRACES = 3  # example trace ids per signature in the text report
MAX_JSON = 200  # signatures in the JSON report (the rest are counted in `signatures_left_out`)
# "far more often": the candidate's failures per trace at least this multiple of the baseline's
FAR_MORE = 5.0


@dataclass(slots=True)
class SignatureGroup:
    """One failure signature of a run: how many failing results it has, and a few of their traces."""

    signature: FailureSignature
    count: int = 0
    traces: list[str] = field(default_factory=list)

    def add(self, trace_id: str) -> None:
        self.count += 1
        if len(self.traces) < MAX_EXAMPLE_TRACES and trace_id not in self.traces:
            self.traces.append(trace_id)

    def to_dict(self) -> dict[str, Any]:
        s = self.signature
        return {
            "id": s.id,
            "evaluator": s.evaluator,
            "level": s.level,
            "agent": s.agent or None,
            "step_kind": s.step_kind or None,
            "step_name": s.step_name or None,
            "error_type": s.error_type or None,
            "template": s.template,
            "example": s.example,
            "count": self.count,
            "example_traces": list(self.traces),
        }


def group_failures(records: Iterable[EvaluationRecord], rules: Sequence[SignatureRule] = ()) -> list[SignatureGroup]:
    """The signatures of the failing records (passed is False), most results first (then by id: stable)."""
    groups: dict[str, SignatureGroup] = {}
    for record in records:
        if record.passed is not False:
            continue
        failure = getattr(record, "failure", None)
        signature = failure_signature(
            record.evaluator, record.level, record.agent_name, failure, record.explanation, rules
        )
        group = groups.get(signature.id)
        if group is None:
            group = groups[signature.id] = SignatureGroup(signature)
        group.add(record.trace_id)
    return sorted(groups.values(), key=lambda g: (-g.count, g.signature.id))


def step_text(signature: FailureSignature) -> str:
    """ "tool convert_currency", "llm gpt-4o", "agent planner", "trace", or "-" when no step was stated."""
    parts = [p for p in (signature.step_kind, signature.step_name) if p]
    return clip(" ".join(parts), 40) if parts else "-"


def _traces(traces: Sequence[str]) -> str:
    more = f", +{len(traces) - TEXT_TRACES}" if len(traces) > TEXT_TRACES else ""
    return f"(traces: {', '.join(traces[:TEXT_TRACES])}{more})"


def _line(group: SignatureGroup) -> str:
    s = group.signature
    return (
        f"  {group.count:>5}  {s.id}  {clip(s.evaluator, 32)}  {step_text(s)}  {s.error_type or '-'}  "
        f"{clip(s.template, 80) or '-'}  {_traces(group.traces)}"
    )


def render_groups(groups: Sequence[SignatureGroup]) -> list[str]:
    """The text section of `evaluate`'s report: one line per signature, most results first."""
    if not groups:
        return []
    lines = ["", f"failure signatures ({len(groups)}; count, id, evaluator, step, error type, template):"]
    lines += [_line(group) for group in groups[:MAX_LISTED]]
    if len(groups) > MAX_LISTED:
        lines.append(f"  (+{len(groups) - MAX_LISTED} more; see --format json)")
    return lines


def groups_json(groups: Sequence[SignatureGroup]) -> dict[str, Any]:
    return {
        "signatures": [g.to_dict() for g in groups[:MAX_JSON]],
        "signatures_left_out": max(len(groups) - MAX_JSON, 0),
    }


# --- compare ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SignatureDelta:
    """One signature on both sides of a comparison."""

    signature: FailureSignature
    baseline: int
    candidate: int
    traces: tuple[str, ...]  # example traces, the candidate's first
    new_in_candidate: bool

    def to_dict(self) -> dict[str, Any]:
        group = SignatureGroup(self.signature, self.candidate, list(self.traces)).to_dict()
        del group["count"]
        return {
            **group,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "new_in_candidate": self.new_in_candidate,
        }


def compare_groups(
    baseline: Sequence[SignatureGroup], candidate: Sequence[SignatureGroup], base_traces: int, cand_traces: int
) -> list[SignatureDelta]:
    """Every signature of either side: new in the candidate when the baseline never had it, or the candidate has
    it at least FAR_MORE times as often per trace; new ones first, then by the candidate's count."""
    base = {g.signature.id: g for g in baseline}
    cand = {g.signature.id: g for g in candidate}
    deltas = []
    for sid in {**base, **cand}:
        b, c = base.get(sid), cand.get(sid)
        b_count, c_count = (b.count if b else 0), (c.count if c else 0)
        b_rate, c_rate = b_count / max(base_traces, 1), c_count / max(cand_traces, 1)
        new = c_count > 0 and (b_count == 0 or c_rate >= FAR_MORE * b_rate)
        signature = (c or b).signature  # type: ignore[union-attr]  # one side has it
        traces = tuple(dict.fromkeys([*(c.traces if c else []), *(b.traces if b else [])]))[:MAX_EXAMPLE_TRACES]
        deltas.append(SignatureDelta(signature, b_count, c_count, traces, new))
    return sorted(deltas, key=lambda d: (not d.new_in_candidate, -d.candidate, -d.baseline, d.signature.id))


def render_deltas(deltas: Sequence[SignatureDelta]) -> list[str]:
    """The text section of `compare`'s report: new failure modes first, marked."""
    if not deltas:
        return []
    new = sum(d.new_in_candidate for d in deltas)
    lines = [
        "",
        f"failure signatures ({len(deltas)}, {new} new in candidate; baseline → candidate count, id, evaluator, "
        "step, error type, template):",
    ]
    for d in deltas[:MAX_LISTED]:
        s = d.signature
        mark = "NEW in candidate  " if d.new_in_candidate else ""
        lines.append(
            f"  {mark}{d.baseline:>5} → {d.candidate:<5}  {s.id}  {clip(s.evaluator, 32)}  {step_text(s)}  "
            f"{s.error_type or '-'}  {clip(s.template, 80) or '-'}  {_traces(d.traces)}"
        )
    if len(deltas) > MAX_LISTED:
        lines.append(f"  (+{len(deltas) - MAX_LISTED} more; see --format json)")
    return lines


def deltas_json(deltas: Sequence[SignatureDelta]) -> dict[str, Any]:
    return {
        "signatures": [d.to_dict() for d in deltas[:MAX_JSON]],
        "signatures_left_out": max(len(deltas) - MAX_JSON, 0),
    }
