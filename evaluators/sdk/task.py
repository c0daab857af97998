"""Ground truth for experiments: Task (what was asked and what should happen) and Dataset (a set of tasks)."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from evaluators.sdk.csv_cells import neutralise, restore


class TrajectoryStep(BaseModel):
    """One expected tool call: the tool's name and, optionally, the arguments it should get."""

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(min_length=1)
    args: dict[str, Any] | None = None


class Constraints(BaseModel):
    """Budgets a run must stay within; None means unconstrained."""

    model_config = ConfigDict(extra="forbid")

    max_latency_ms: float | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=0)
    max_iterations: int | None = Field(default=None, ge=0)
    max_cost: float | None = Field(default=None, ge=0)


class Task(BaseModel):
    """One test case: the input, and what a good run produces (answer, tool path, outcome, limits)."""

    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(min_length=1)
    name: str | None = None
    description: str | None = None
    input: str | dict[str, Any] | None = None
    expected_output: str | None = None
    expected_trajectory: list[TrajectoryStep] | None = None
    expected_outcome: str | dict[str, Any] | None = None
    success_criteria: str | None = None
    constraints: Constraints | None = None
    prohibited_content: list[str] = Field(default_factory=list)
    relevant_document_ids: list[str] = Field(default_factory=list)
    task_type: str | None = None
    difficulty: str | None = None
    domain: str | None = None
    tags: list[str] = Field(default_factory=list)
    custom: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)


# CSV cells of these fields hold JSON text; cells of the str-or-dict fields are JSON only when they parse to an object.
_JSON_FIELDS = frozenset(
    {
        "expected_trajectory",
        "constraints",
        "prohibited_content",
        "relevant_document_ids",
        "tags",
        "custom",
        "metadata",
    }
)
_MAYBE_JSON_FIELDS = frozenset({"input", "expected_outcome"})


class Dataset(BaseModel):
    """A named list of tasks with unique ids; `dataset["t1"]` looks one up."""

    model_config = ConfigDict(extra="forbid")

    name: str = "dataset"
    tasks: list[Task] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_ids(self) -> Dataset:
        seen: set[str] = set()
        for task in self.tasks:
            if task.task_id in seen:
                raise ValueError(f"duplicate task_id {task.task_id!r}")
            seen.add(task.task_id)
        return self

    def get(self, task_id: str) -> Task | None:
        """The task with this id, or None."""
        return next((t for t in self.tasks if t.task_id == task_id), None)

    def __getitem__(self, task_id: str) -> Task:
        task = self.get(task_id)
        if task is None:
            raise KeyError(f"no task {task_id!r} in dataset {self.name!r}")
        return task

    def __contains__(self, task_id: object) -> bool:
        return any(t.task_id == task_id for t in self.tasks)

    def __len__(self) -> int:
        return len(self.tasks)

    def __iter__(self) -> Iterator[Task]:  # type: ignore[override]
        return iter(self.tasks)

    @property
    def task_ids(self) -> list[str]:
        return [t.task_id for t in self.tasks]

    @classmethod
    def from_json(cls, path: str | os.PathLike[str]) -> Dataset:
        """Read a JSON file holding a list of tasks, or an object {"name": ..., "tasks": [...]}."""
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON: {exc}") from None
        if isinstance(data, list):
            data = {"name": path.stem, "tasks": data}
        elif isinstance(data, dict) and "tasks" in data:
            data = {"name": path.stem, **data}
        else:
            raise ValueError(f"{path}: expected a list of tasks or an object with a 'tasks' list")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ValueError(f"{path}: invalid dataset: {exc}") from None

    @classmethod
    def from_csv(cls, path: str | os.PathLike[str], name: str | None = None) -> Dataset:
        """Read a CSV file: one task per row, columns named after Task fields.

        List and dict columns (expected_trajectory, constraints, tags, ...) hold JSON text; a dotted column
        such as `constraints.max_tokens` sets one nested field. Empty cells are left unset.
        """
        path = Path(path)
        tasks = []
        with path.open(newline="", encoding="utf-8-sig") as handle:
            for row_number, row in enumerate(csv.DictReader(handle), start=2):
                try:
                    tasks.append(Task.model_validate(_row_to_task(row)))
                except (ValueError, ValidationError) as exc:
                    raise ValueError(f"{path} row {row_number}: {exc}") from None
        try:
            return cls(name=name or path.stem, tasks=tasks)
        except ValidationError as exc:
            raise ValueError(f"{path}: invalid dataset: {exc}") from None

    def to_json(self, path: str | os.PathLike[str]) -> None:
        """Write the dataset as `from_json` reads it: an object {"name": ..., "tasks": [...]}, unset fields left out."""
        data = {"name": self.name, "tasks": [t.model_dump(mode="json", exclude_defaults=True) for t in self.tasks]}
        Path(path).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

    def to_csv(self, path: str | os.PathLike[str]) -> None:
        """Write the dataset as `from_csv` reads it: one row per task, a column per Task field, JSON text in the
        list and dict columns; a cell a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, ...) gets a quote in
        front, which `from_csv` takes off (evaluators/sdk/csv_cells.py). The dataset's name is not kept (`from_csv`
        names it after the file). CSV cannot tell an empty text from an unset one, nor a text that is itself a JSON
        object from that object: both read back as the latter (JSON keeps them apart)."""
        columns = list(Task.model_fields)
        with Path(path).open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns)
            writer.writeheader()
            for task in self.tasks:
                writer.writerow({column: neutralise(_cell(task, column)) for column in columns})


def _cell(task: Task, column: str) -> str:
    """The CSV cell of one field: "" when it holds its default, JSON text for lists, dicts and models."""
    value = getattr(task, column)
    if value == Task.model_fields[column].get_default(call_default_factory=True):
        return ""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", exclude_none=True)
    elif isinstance(value, list):
        value = [v.model_dump(mode="json", exclude_none=True) if isinstance(v, BaseModel) else v for v in value]
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _row_to_task(row: dict[str | None, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for column, cell in row.items():
        if column is None:
            raise ValueError("more cells than columns")
        column = column.strip()
        if cell is None or cell.strip() == "":
            continue
        cell = restore(cell)
        head, _, rest = column.partition(".")
        if rest:
            nested = data.setdefault(head, {})
            if not isinstance(nested, dict):
                raise ValueError(f"column {column!r} conflicts with column {head!r}")
            nested[rest] = _scalar(cell)
        elif column in _JSON_FIELDS:
            try:
                data[column] = json.loads(cell)
            except json.JSONDecodeError as exc:
                raise ValueError(f"column {column!r} must hold JSON text: {exc}") from None
        elif column in _MAYBE_JSON_FIELDS and cell.lstrip().startswith("{"):
            try:
                parsed = json.loads(cell)
            except json.JSONDecodeError:
                parsed = cell
            data[column] = parsed if isinstance(parsed, dict) else cell
        else:
            data[column] = cell
    return data


def _scalar(cell: str) -> Any:
    """A nested CSV cell as JSON when it parses (numbers, booleans), else the text."""
    try:
        return json.loads(cell)
    except json.JSONDecodeError:
        return cell
