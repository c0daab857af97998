"""An explanation in words: shares, lifts and q-values as people read them, the top factor's headline per kind of
slice, and the sentence when nothing sets the slice apart."""

from __future__ import annotations

from monitor.explain.model import ExplainQuery
from monitor.explain.wording import headline, lift_text, nothing_text, q_text, share_text, values_text
from tests.support.explanations import factor, sample_explanation


def test_numbers_as_people_read_them() -> None:
    assert [share_text(s) for s in (0.92, 0.045, 0.0, 1.0, 0.1)] == ["92 %", "4.5 %", "0 %", "100 %", "10 %"]
    assert [lift_text(x) for x in (14.0, 2.345, 10.4, None)] == ["14×", "2.3×", "10×", "only here"]
    assert [q_text(q) for q in (1e-9, 0.0004, 0.0123)] == ["< 0.0001", "0.0004", "0.012"]


def test_headline_per_kind_and_the_values_of_a_pair() -> None:
    pair = factor([("model", "gemini-2.5-pro"), ("tool", "convert_currency")], 0.92, 0.0657, 14.0, 1e-8)
    assert values_text(pair) == "model = gemini-2.5-pro AND tool = convert_currency"
    failures = sample_explanation(ExplainQuery(evaluator="e", since=0, until=1), pair)
    assert headline(failures) == "model=gemini-2.5-pro AND tool=convert_currency: 92 % of failures, 14× the rest"
    drift = ExplainQuery(service="s", since=10, until=20, reference_since=0, reference_until=10)
    only = factor([("version", "v2")], 0.4, 0.0, None, 0.001)
    assert headline(sample_explanation(drift, only)) == "version=v2: 40 % of the recent window, none in the baseline"
    signature = sample_explanation(ExplainQuery(signature="ab" * 8, since=0, until=1), pair)
    assert headline(signature).endswith("92 % of the signature's traces, 14× the rest")  # type: ignore[union-attr]


def test_nothing_sets_the_slice_apart() -> None:
    found = sample_explanation(ExplainQuery(evaluator="e", since=0, until=1)).model_copy(update={"factors": []})
    assert headline(found) is None
    assert nothing_text(found) == "no value sets the failures apart (42 values tested at FDR 1 %)"
    assert nothing_text(found.model_copy(update={"tested": 1, "fdr": 0.05})).endswith("(1 value tested at FDR 5 %)")
    assert nothing_text(found.model_copy(update={"note": "no trace in the range"})) == "no trace in the range"
