"""Task and Dataset: fields, validation, JSON and CSV loading, lookup."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from evaluators.sdk import Constraints, Dataset, Task, TrajectoryStep

FULL_TASK = {
    "task_id": "book-1",
    "input": "Book a flight to SFO",
    "expected_output": "Booked LH454",
    "expected_trajectory": [{"tool": "search_flights", "args": {"to": "SFO"}}, {"tool": "book"}],
    "expected_outcome": {"booking": "confirmed"},
    "success_criteria": "a booking reference is returned",
    "constraints": {"max_latency_ms": 5000, "max_tokens": 2000, "max_iterations": 5, "max_cost": 0.05},
    "prohibited_content": ["credit card number"],
    "relevant_document_ids": ["doc-1", "doc-7"],
    "task_type": "booking",
    "difficulty": "easy",
    "domain": "travel",
    "tags": ["smoke"],
    "custom": {"priority": 1},
    "metadata": {"source": "hand-written"},
}


def test_task_fields() -> None:
    task = Task.model_validate(FULL_TASK)
    assert task.expected_trajectory == [
        TrajectoryStep(tool="search_flights", args={"to": "SFO"}),
        TrajectoryStep(tool="book"),
    ]
    assert task.expected_trajectory[1].args is None
    assert task.constraints == Constraints(max_latency_ms=5000, max_tokens=2000, max_iterations=5, max_cost=0.05)
    assert task.relevant_document_ids == ["doc-1", "doc-7"]
    assert task.expected_outcome == {"booking": "confirmed"}
    minimal = Task(task_id="t")
    assert (minimal.input, minimal.constraints, minimal.tags, minimal.prohibited_content) == (None, None, [], [])


def test_task_validation() -> None:
    with pytest.raises(ValidationError, match="expected_ouput"):
        Task(task_id="t", expected_ouput="typo")  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="max_tokens"):
        Constraints(max_tokens=-1)
    with pytest.raises(ValidationError, match="task_id"):
        Task(task_id="")
    with pytest.raises(ValidationError, match="tool"):
        TrajectoryStep(tool="")


def test_dataset_lookup() -> None:
    dataset = Dataset(name="d", tasks=[Task(task_id="a"), Task(task_id="b")])
    assert dataset["b"].task_id == "b"
    assert dataset.get("zz") is None
    assert "a" in dataset and "zz" not in dataset
    assert len(dataset) == 2
    assert [t.task_id for t in dataset] == dataset.task_ids == ["a", "b"]
    with pytest.raises(KeyError, match="no task 'zz' in dataset 'd'"):
        dataset["zz"]
    with pytest.raises(ValidationError, match="duplicate task_id 'a'"):
        Dataset(tasks=[Task(task_id="a"), Task(task_id="a")])


def test_from_json_list_and_object(tmp_path: Path) -> None:
    as_list = tmp_path / "smoke.json"
    as_list.write_text(json.dumps([FULL_TASK, {"task_id": "t2", "input": "hi"}]))
    dataset = Dataset.from_json(as_list)
    assert dataset.name == "smoke"
    assert dataset.task_ids == ["book-1", "t2"]
    assert dataset["book-1"].constraints.max_cost == 0.05

    as_object = tmp_path / "other.json"
    as_object.write_text(json.dumps({"name": "regression", "tasks": [{"task_id": "x"}]}))
    assert Dataset.from_json(as_object).name == "regression"


def test_from_json_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(ValueError, match=r"bad\.json: not valid JSON"):
        Dataset.from_json(bad)
    bad.write_text(json.dumps({"items": []}))
    with pytest.raises(ValueError, match=r"bad\.json: expected a list of tasks"):
        Dataset.from_json(bad)
    bad.write_text(json.dumps([{"task_id": "x", "tags": "notalist"}]))
    with pytest.raises(ValueError, match=r"(?s)bad\.json: invalid dataset.*tags"):
        Dataset.from_json(bad)


def _write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    import csv

    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


def test_from_csv_with_json_and_dotted_columns(tmp_path: Path) -> None:
    path = tmp_path / "tasks.csv"
    header = [
        "task_id",
        "input",
        "expected_output",
        "expected_trajectory",
        "tags",
        "constraints.max_tokens",
        "constraints.max_latency_ms",
        "expected_outcome",
        "custom",
    ]
    _write_csv(
        path,
        header,
        [
            [
                "t1",
                "Book a flight",
                "Booked",
                json.dumps([{"tool": "book", "args": {"id": 1}}]),
                '["smoke"]',
                "100",
                "2500.5",
                '{"booking": "ok"}',
                '{"k": [1, 2]}',
            ],
            ["t2", "{not json", "", "", "", "", "", "plain outcome", ""],
        ],
    )
    dataset = Dataset.from_csv(path)
    assert dataset.name == "tasks"
    first, second = dataset.tasks
    assert first.expected_trajectory == [TrajectoryStep(tool="book", args={"id": 1})]
    assert first.tags == ["smoke"]
    assert first.constraints == Constraints(max_tokens=100, max_latency_ms=2500.5)
    assert first.expected_outcome == {"booking": "ok"}
    assert first.custom == {"k": [1, 2]}
    assert second.input == "{not json"  # text that is not a JSON object stays text
    assert second.expected_output is None  # empty cells are unset
    assert second.expected_outcome == "plain outcome"
    assert second.tags == [] and second.constraints is None


def test_from_csv_errors_name_the_row(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    _write_csv(path, ["task_id", "tags"], [["ok", '["a"]'], ["t2", "a,b"]])
    with pytest.raises(ValueError, match=r"bad\.csv row 3: column 'tags' must hold JSON text"):
        Dataset.from_csv(path)
    _write_csv(path, ["task_id", "unknown_column"], [["t1", "x"]])
    with pytest.raises(ValueError, match=r"(?s)bad\.csv row 2: .*unknown_column"):
        Dataset.from_csv(path)
    _write_csv(path, ["task_id"], [["t1"], ["t1"]])
    with pytest.raises(ValueError, match="duplicate task_id 't1'"):
        Dataset.from_csv(path, name="dupes")


def round_trip_dataset() -> Dataset:
    """Every field set on one task (nested args, a dict input, multi-line text, non-ASCII), next to tasks holding
    only defaults, empty constraints and a trajectory step without args."""
    return Dataset(
        name="regression",
        tasks=[
            Task.model_validate(FULL_TASK),
            Task(task_id="t2", input={"question": "Öl?", "n": [1, 2]}, expected_output='line 1\nline, "2"'),
            Task(task_id="t3", constraints=Constraints(), expected_trajectory=[TrajectoryStep(tool="a")]),
            Task(task_id="t4"),
        ],
    )


def test_to_json_reads_back_as_the_same_dataset(tmp_path: Path) -> None:
    dataset = round_trip_dataset()
    path = tmp_path / "out.json"
    dataset.to_json(path)
    assert Dataset.from_json(path) == dataset
    assert json.loads(path.read_text(encoding="utf-8"))["tasks"][3] == {"task_id": "t4"}  # unset fields left out


def test_to_csv_reads_back_as_the_same_tasks(tmp_path: Path) -> None:
    dataset = round_trip_dataset()
    path = tmp_path / "regression.csv"
    dataset.to_csv(path)
    assert Dataset.from_csv(path) == dataset
    assert Dataset.from_csv(path, name="other").tasks == dataset.tasks
