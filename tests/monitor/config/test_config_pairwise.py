"""`variants.pairwise` in the config: what check-config says, and where a misplaced pairwise judge is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.config import load_located
from monitor.preflight import preflight
from tests.monitor.config.test_config import write

PAIRWISE = (
    "variants:\n  attribute: service.version\n  pairwise:\n"
    '    - {baseline: "1.4", candidate: "1.5"}\n'
    '    - {baseline: "1.4", candidate: "1.6", pair_by: task.id, window: 2m, sampling: 0.5, max_waiting: 50}\n'
)


def test_check_config_lists_each_pairwise_entry_and_says_the_judge_needs_a_key(check) -> None:
    code, out, err, _ = check(PAIRWISE)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[lines.index("variants: by service.version") + 1 :] == [
        "  pairwise pairwise_quality: '1.5' against '1.4', paired by input within 10m, sampling 1, "
        "at most 10000 unpaired traces",
        "  pairwise pairwise_quality: '1.6' against '1.4', paired by task.id within 2m, sampling 0.5, "
        "at most 50 unpaired traces",
    ]
    assert any(line.startswith("judges: 1 configured but no GEMINI_API_KEY") for line in lines)


def test_preflight_builds_one_pairwise_judge_per_evaluator(tmp_path: Path) -> None:
    config, locator = load_located(str(write(tmp_path, PAIRWISE)), env={})
    prepared = preflight(config, locator)
    assert list(prepared.pairwise_judges) == ["pairwise_quality"]
    assert prepared.pairwise_judges["pairwise_quality"].kind == "pairwise_judge"
    assert "pairwise_quality" not in [c.label for c in prepared.evaluators]


@pytest.mark.parametrize(
    "text, line, message",
    [
        ('variants:\n  attribute: v\n  pairwise:\n    - {evaluator: hallucination, baseline: "1", candidate: "2"}\n',
         4, "variants.pairwise[0].evaluator: 'hallucination' is not a pairwise judge (pairwise_quality)"),
        ('variants:\n  attribute: v\n  pairwise:\n    - {evaluator: pairwise_qualty, baseline: "1", candidate: "2"}\n',
         4, "is not a pairwise judge"),
        ("evaluators:\n  add:\n    - {name: pairwise_quality}\n",
         3, "evaluators.add[0].name: pairwise_quality judges pairs of traces, not traces: configure it under "
            "variants.pairwise"),
        ("evaluators:\n  - name: error_free\n  - name: pairwise_quality\n", 3, "configure it under variants.pairwise"),
    ],
)  # fmt: skip
def test_a_pairwise_judge_outside_variants_pairwise_or_another_judge_inside_is_refused(
    check, text: str, line: int, message: str
) -> None:
    code, out, err, path = check(text)
    assert code == 2 and out == ""
    first = err.splitlines()[0]
    assert first.startswith(f"{path}:{line}: ") and message in first, first
