"""One name, one thing: no two classes in `monitor` and `evaluators` share a name, and the functions that once had
twins of another meaning (issue 40) are defined once. A new twin fails here with both places named."""

from __future__ import annotations

import ast
from collections import defaultdict

from tests.project.test_layering import ROOT

PACKAGES = ("monitor", "evaluators")
# Names that once meant two things: worker capacity vs judge-human agreement, two time parsers, two cursors, ...
ONCE_TWINNED_FUNCTIONS = (
    "calibrate",
    "decode_cursor",
    "encode_cursor",
    "parse_time",
    "percentile",
    "record_of",
    "records_of",
    "tally_of",
    "trace_detail",
)


def _definitions(kinds: tuple[type, ...]) -> dict[str, list[str]]:
    """Top-level names of `kinds` defined in the packages' modules, each with the modules that define it."""
    found: dict[str, list[str]] = defaultdict(list)
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.parse(path.read_text(), str(path)).body:
                if isinstance(node, kinds):
                    found[node.name].append(path.relative_to(ROOT).as_posix())  # type: ignore[attr-defined]
    return found


def _twins(found: dict[str, list[str]]) -> dict[str, list[str]]:
    return {name: places for name, places in found.items() if len(set(places)) > 1}


def test_no_two_classes_share_a_name() -> None:
    assert _twins(_definitions((ast.ClassDef,))) == {}


def test_the_once_twinned_functions_are_defined_once() -> None:
    functions = _definitions((ast.FunctionDef, ast.AsyncFunctionDef))
    twins = _twins({name: functions.get(name, []) for name in ONCE_TWINNED_FUNCTIONS})
    assert twins == {}


def test_a_twin_is_found() -> None:
    """The scan sees a class defined in two modules (so the checks above cannot pass by seeing nothing)."""
    assert len(_definitions((ast.ClassDef,))) > 100
    assert _twins({"Verdict": ["monitor/a.py", "evaluators/b.py"], "Once": ["monitor/a.py"]}) == {
        "Verdict": ["monitor/a.py", "evaluators/b.py"]
    }
