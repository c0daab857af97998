"""Precision and recall of the free builtins on labelled sets built from data shipped in installed packages
(tests/support/labelled_sets.py says where each comes from). The floors are the figures docs/evaluators.md states
(its "Measured precision and recall" table): a change that makes an evaluator worse fails here.

The positive class is the failure each evaluator reports: an answer in another language, a conversation whose
user ends negative, a text that holds a credential. A skip counts as "not reported" (a skipped mismatch is missed).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from evaluators import builtin
from evaluators.sessions import Session, Turn
from tests.support.labelled_sets import (
    language_pairs,
    precision_recall,
    secret_texts,
    sentiment_conversations,
)
from tests.support.spanfactory import trace_of

# evaluator: (labelled set size at least, precision floor, recall floor), as docs/evaluators.md states them
FLOORS = {
    "response_language": (1056, 0.99, 0.88),
    "user_sentiment": (400, 0.85, 0.65),
    "secret_leak": (900, 0.99, 0.99),
}


def reported(result) -> bool:
    return not result.is_skipped and result.passed is False


def test_response_language_on_faker_locale_pairs() -> None:
    from tests.support.builtins_spans import chat

    evaluator = builtin("response_language")
    pairs = language_pairs()
    predicted = []
    for question, answer, _ in pairs:
        span = chat(answer, **{"gen_ai.input.messages": _user(question)})
        predicted.append(reported(evaluator.run(trace_of(span))))
    _check("response_language", predicted, [mismatched for *_, mismatched in pairs])


def test_user_sentiment_on_afinn_labelled_conversations() -> None:
    evaluator = builtin("user_sentiment")
    conversations = sentiment_conversations()
    predicted = []
    for messages, _ in conversations:
        turns = [
            Turn(f"{n:032x}", n, n + 1, text, "Sure.", (), (), ("bot",), 10, 0) for n, text in enumerate(messages, 1)
        ]
        predicted.append(reported(evaluator.run(Session.of("c", turns, "session.id", "idle"))))
    _check("user_sentiment", predicted, [negative for _, negative in conversations])


def test_secret_leak_on_licence_prose_with_credentials_and_look_alikes() -> None:
    evaluator = builtin("secret_leak")
    texts = secret_texts()
    predicted = []
    for text, _ in texts:
        call = SimpleNamespace(response=text, tool_calls=[], provider="openai")
        predicted.append(reported(evaluator.run(call)))
    _check("secret_leak", predicted, [holds for _, holds in texts])


def _user(question: str) -> str:
    import json

    return json.dumps([{"role": "user", "parts": [{"type": "text", "content": question}]}])


def _check(name: str, predicted: list[bool], actual: list[bool]) -> None:
    size, min_precision, min_recall = FLOORS[name]
    assert len(actual) >= size, f"{name}: the labelled set shrank to {len(actual)}"
    assert 0.3 <= sum(actual) / len(actual) <= 0.7, "both classes are represented"
    precision, recall = precision_recall(predicted, actual)
    assert precision >= min_precision, f"{name}: precision {precision:.3f} < {min_precision}"
    assert recall >= min_recall, f"{name}: recall {recall:.3f} < {min_recall}"


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_the_floors_are_the_documented_figures(name: str) -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[3] / "docs" / "evaluators.md").read_text()
    size, precision, recall = FLOORS[name]
    row = f"| {size} | ≥ {precision:.2f} | ≥ {recall:.2f} |"
    assert any(line.startswith(f"| `{name}` |") and row in line for line in doc.splitlines()), row
