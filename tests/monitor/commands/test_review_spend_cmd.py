"""`agent-monitor review --by model` and `--trace` show spend, from a real SQLite store (`--store`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.cli import main
from monitor.store.sqlite import ResultStore
from monitor.text import usd
from tests.monitor.review.test_review_spend import evaluated, spend_trace


@pytest.fixture
def store_file(tmp_path: Path) -> tuple[Path, list]:
    path = tmp_path / "results.db"
    outcomes = [evaluated(spend_trace(f"{n:032x}", tokens=n)) for n in (1, 2)]
    store = ResultStore(path)
    try:
        store.write(outcomes)
    finally:
        store.close()
    return path, outcomes


def review(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["review", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_review_by_model_shows_spend_per_model(store_file, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    path, outcomes = store_file
    code, out, err = review(capsys, "--store", str(path), "--by", "model")
    assert code == 0, err
    _, columns, *rows = out.splitlines()
    assert columns.split()[-3:] == ["CALLS", "SPEND", "UNPRICED"]
    spent: dict[str, float] = {}
    for o in outcomes:
        for model, *_, cost, _unpriced in o.detail.models:
            spent[model] = spent.get(model, 0.0) + (cost or 0.0)
    table = {r.split()[0]: r.split()[-3:] for r in rows if not r.startswith("total")}
    assert table == {
        "gpt-4o": ["2", usd(spent["gpt-4o"]), "0"],
        "my-llama-3": ["2", usd(spent["my-llama-3"]), "0"],
        "gpt-4o-mini": ["2", usd(spent["gpt-4o-mini"]), "0"],  # the span's own reported cost
        "mystery-model-x": ["2", "-", "2"],  # unknown to the price table: counted, never priced at 0
    }
    total = sum(o.detail.cost_usd for o in outcomes)
    assert rows[-1] == f"total spend {usd(total)} over 8 LLM calls (2 unpriced)"

    code, out, _ = review(capsys, "--store", str(path), "--by", "model", "--sort", "cost")
    assert code == 0 and "most spend first" in out.splitlines()[0]
    order = [r.split()[0] for r in out.splitlines()[2:] if not r.startswith("total")]
    assert order == sorted(spent, key=lambda m: -spent[m])
    code, _, err = review(capsys, "--store", str(path), "--sort", "cost")
    assert code == 2 and "--sort" in err


def test_review_trace_shows_each_calls_cost_and_the_total(store_file, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    path, outcomes = store_file
    detail = outcomes[0].detail
    code, out, err = review(capsys, "--store", str(path), "--trace", outcomes[0].trace_id)
    assert code == 0, err
    assert f"  spend:  {usd(detail.cost_usd)} + 1 unpriced" in out.splitlines()
    calls = [line for line in out.splitlines() if "└─ llm " in line]
    assert any("gpt-4o " in c and "(price_table)" in c for c in calls)
    assert any("my-llama-3" in c and "(override)" in c for c in calls)
    assert any("gpt-4o-mini" in c and f"{usd(0.25)} (span)" in c for c in calls)
    assert any("mystery-model-x" in c and "unpriced" in c for c in calls)
