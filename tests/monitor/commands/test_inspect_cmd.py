"""`agent-monitor inspect`'s tree: an answer recorded empty is told apart from no answer at all."""

from __future__ import annotations

import io
import json
from argparse import Namespace
from pathlib import Path

from evaluators.traces.records import SpanRecord
from monitor.commands import inspect_cmd
from tests.support.otlp_json import otlp_document
from tests.support.spanfactory import make_span


def _tree(tmp_path: Path, *spans: SpanRecord) -> list[str]:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(otlp_document(list(spans))), encoding="utf-8")
    out = io.StringIO()
    assert inspect_cmd.run(Namespace(paths=[str(path)], json=False, width=80), out) == 0
    return out.getvalue().splitlines()


def _agent(**attrs: str) -> SpanRecord:
    return make_span("agent", {"openinference.span.kind": "AGENT", "input.value": "What's the weather?", **attrs})


def test_an_empty_answer_is_shown_as_empty_and_a_missing_one_as_none(tmp_path: Path) -> None:
    empty = _tree(tmp_path, _agent(**{"output.value": ""}))
    assert "  input:  What's the weather?" in empty and "  output: (empty)" in empty
    missing = _tree(tmp_path, make_span("agent", {"openinference.span.kind": "AGENT"}))
    assert "  input:  (none)" in missing and "  output: (none)" in missing
