"""The `variants` config section: what is accepted, what is refused and where, and what check-config says."""

from __future__ import annotations

import pytest

V = "variants:\n  attribute: v\n"
COMPARE = '{evaluator: error_free, baseline: "1.4", candidate: "1.5"}'


def test_check_config_lists_the_attribute_and_each_comparison(check) -> None:
    code, out, err, _ = check(
        "variants:\n  attribute: service.version\n  alpha: 0.01\n  compare:\n"
        f"    - {COMPARE}\n"
        '    - {evaluator: latency, baseline: "1.4", candidate: "1.5", window: 2h, min_samples: 50, alpha: 0.1}\n',
    )
    assert code == 0, err
    lines = out.splitlines()
    start = lines.index("variants: by service.version")
    assert lines[start + 1 :] == [
        "  compare error_free: '1.5' against '1.4' over 1h, at least 200 results a side, alpha 0.01",
        "  compare latency: '1.5' against '1.4' over 2h, at least 50 results a side, alpha 0.1",
    ]


def test_variants_off_prints_nothing(check) -> None:
    code, out, _, _ = check("variants: {attribute: ''}\n")
    assert code == 0 and "variants:" not in out


@pytest.mark.parametrize(
    "text, line, message",
    [
        (f"variants:\n  compare: [{COMPARE}]\n", 1, "need `attribute`"),
        (V + '  compare: [{evaluator: error_free, baseline: "1", candidate: "1"}]\n', 3, "same variant"),
        (V + f"  compare: [{COMPARE}, {COMPARE}]\n", 1, "configured twice"),
        (V + '  compare:\n    - {evaluator: eror_free, baseline: "1", candidate: "2"}\n', 4, "mean 'error_free'"),
        (V + '  compare: [{evaluator: error_free, baseline: "1", candidate: "2", alpha: 1}]\n', 3, "alpha"),
        (V + '  pairwise: [{baseline: "1", candidate: "2", window: soon}]\n', 3, "invalid duration"),
    ],
)  # fmt: skip
def test_bad_variants_are_located_errors(check, text: str, line: int, message: str) -> None:
    code, out, err, path = check(text)
    assert code == 2 and out == ""
    first = err.splitlines()[0]
    assert first.startswith(f"{path}:{line}: variants") and message in first, first
