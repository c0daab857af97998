"""What a failing judgement states failed (`EvalResult.failure`), from the judge's structured verdict.

A judge's explanation is free text written by a model: never part of a failure. The failure is the level's step
(`llm`, `agent`, `trace` or `session`) and the verdict's category, read from the structured details the builtin judges
write: a verdict label (`not_recovered`, `irrelevant`, `no_match`), the unsafe categories, the failed rubric
criteria, the worst claim or sentence label, a 1–5 rating (`rating_2`), a pairwise outcome (`loss`).
A judge of your own gets the same from `details["verdict"]` (the default `JudgeVerdict` reply writes it) or
`details["rating"]`; override `LLMJudge.failure` to state another. A session judge's failure names the turn it is
about when the verdict says which (`details["turn"]`, 1-based): its message is `turn N` (masked to `turn <num>` in
the signature, so one failure mode is one group whichever turn it shows in).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..signatures import Failure

# the labels of list items, worst first, per details key: the worst label present is the category
_ITEM_LABELS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    # details key: (item field, category suffix, labels worst first)
    "claims": ("verdict", "claims", ("contradicted", "unsupported")),
    "answer_claims": ("verdict", "claims", ("contradicted", "not_in_reference")),
    "sentences": ("label", "sentences", ("contradictory", "unsupported", "disputed")),
    "instructions": ("verdict", "instructions", ("not_followed", "partially_followed")),
    "parts": ("coverage", "parts", ("not_addressed", "partially_addressed")),
    "criteria": ("verdict", "criteria", ("not_met", "partially_met")),
}
MAX_CATEGORY_CHARS = 120


def _joined(names: Iterable[str]) -> str:
    return "+".join(sorted(set(names)))[:MAX_CATEGORY_CHARS]


def _worst_label(items: Any, field: str, worst_first: tuple[str, ...]) -> str | None:
    if not isinstance(items, list):
        return None
    labels = {str(item.get(field)) for item in items if isinstance(item, Mapping)}
    known = next((label for label in worst_first if label in labels), None)
    if known is not None:
        return known
    # a label this table does not know (a new schema value): the first one in sorted order, for determinism
    fine = ("supported", "met", "followed", "addressed", "not_applicable", "None")
    others = sorted(label for label in labels if label not in fine)
    return others[0] if others else None


def verdict_category(details: Mapping[str, Any]) -> str:
    """The category of a failing verdict, from a judge result's structured details ("low_score" when none)."""
    if isinstance(details.get("outcome"), str):  # pairwise: win / tie / loss
        return str(details["outcome"])
    categories = details.get("categories")
    if isinstance(categories, Mapping):  # safety: the unsafe categories
        unsafe = [str(c) for c, v in categories.items() if v == "unsafe"]
        if unsafe:
            return f"unsafe:{_joined(unsafe)}"
    verdicts = details.get("verdicts")
    if isinstance(verdicts, list):  # rubrics: the criteria not met
        failed = [str(v.get("rubric_id")) for v in verdicts if isinstance(v, Mapping) and v.get("verdict") == "no"]
        if failed:
            return f"rubric:{_joined(failed)}"
    if isinstance(details.get("verdict"), str) and details["verdict"].strip():  # a labelled verdict
        return "_".join(str(details["verdict"]).lower().split())[:MAX_CATEGORY_CHARS]
    for key, (field, suffix, worst_first) in _ITEM_LABELS.items():
        label = _worst_label(details.get(key), field, worst_first)
        if label is not None:
            return label if key in ("instructions", "parts", "criteria") else f"{label}_{suffix}"
    if isinstance(details.get("reference_claims"), list):
        return "missing_claims"
    if isinstance(details.get("documents"), list):
        return "irrelevant_context"
    rating = details.get("rating")
    if isinstance(rating, int) and not isinstance(rating, bool):
        return f"rating_{rating}"
    return "low_score"


def failing_turn(details: Mapping[str, Any]) -> int | None:
    """The turn (1-based) a session judgement's verdict names, or None."""
    turn = details.get("turn")
    return turn if isinstance(turn, int) and not isinstance(turn, bool) and turn >= 1 else None


def judge_failure(level: str, details: Mapping[str, Any]) -> Failure:
    """The failure of a failing judgement at `level`: the level's step and the verdict's category; no message (the
    explanation is the judge model's free text), except at the session level `turn N` when the verdict names one."""
    step = level if level in ("llm", "agent", "trace", "session") else "trace"
    turn = failing_turn(details) if step == "session" else None
    return Failure(step_kind=step, error_type=verdict_category(details), message=f"turn {turn}" if turn else None)


__all__ = ["failing_turn", "judge_failure", "verdict_category"]
