"""`agent-monitor evaluate` and `agent-monitor evaluators list`: offline runs over the corpus, specs, datasets,
task matching, gates and exit codes."""

from __future__ import annotations

import argparse
import io
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from evaluators.sdk import Dataset, Task
from monitor.commands import evaluate_cmd, evaluators_cmd
from monitor.offline.evaluation import TaskMatcher
from monitor.offline.spec import parse_spec
from tests.conftest import CORPUS
from tests.support.spanfactory import make_span, trace_of

TOOL_AGENT = CORPUS / "oi_openai__tool_agent"
TOOL_ERROR = CORPUS / "oi_openai__tool_error"
WEATHER_QUESTION = "What's the weather in Paris right now, and what should I wear?"
FX_QUESTION = "How much is 250 US dollars in Japanese yen?"

pytestmark = pytest.mark.skipif(not TOOL_AGENT.is_dir(), reason="corpus not available")


def evaluate(*paths: Path | str, fmt: str = "json", **options: Any) -> tuple[int, Any, str]:
    """Run the command; returns (exit status, parsed JSON or table text, stderr)."""
    args = argparse.Namespace(
        paths=[str(p) for p in paths], spec=None, dataset=None, format=fmt, worst=10, handler=evaluate_cmd.run
    )
    for key, value in options.items():
        setattr(args, key, str(value) if isinstance(value, Path) else value)
    out, err = io.StringIO(), io.StringIO()
    code = evaluate_cmd.run(args, out=out, err=err)
    text = out.getvalue()
    return code, (json.loads(text) if fmt == "json" and text else text), err.getvalue()


def by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["evaluator"]: e for e in report["evaluators"]}


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def dataset_file(tmp_path: Path) -> Path:
    tasks = [
        {
            "task_id": "weather",
            "input": "  What's the weather in   Paris right now,\nand what should I wear? ",  # whitespace differs
            "expected_output": "Wear a light waterproof jacket over a sweater",
            "expected_trajectory": [{"tool": "get_weather", "args": {"city": "Paris"}}, {"tool": "suggest_outfit"}],
        },
        {
            "task_id": "fx",
            "input": FX_QUESTION,
            "expected_output": "About 37,000 yen.",
            "expected_trajectory": [{"tool": "convert_currency"}],
        },
        {"task_id": "unused", "input": "Something nobody asked", "expected_output": "nothing"},
    ]
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(tasks), encoding="utf-8")
    return path


# --- monitor mode --------------------------------------------------------------------------------


def test_monitor_mode_runs_every_builtin_and_counts_ground_truth_skips() -> None:
    code, report, err = evaluate(TOOL_AGENT, TOOL_ERROR)
    assert (code, err) == (0, "")
    assert report["mode"] == "monitor" and report["traces"] == 2 and "dataset" not in report
    evals = by_name(report)
    for name in ("exact_match", "tool_trajectory", "response_match", "constraints"):
        assert evals[name]["skip_counts"] == {"needs_ground_truth": 2}, name
        assert evals[name]["scored"] == 0 and evals[name]["pass_rate"] is None
    assert evals["exact_match"]["threshold"] == 1.0


def test_monitor_mode_reports_pass_rates_and_the_worst_results() -> None:
    _, report, _ = evaluate(TOOL_AGENT, TOOL_ERROR)
    error_free = by_name(report)["error_free"]
    assert (error_free["scored"], error_free["passed"], error_free["failed"]) == (2, 1, 1)
    assert error_free["pass_rate"] == 0.5 and error_free["mean"] == 0.5 and error_free["gate"] == "none"
    worst = [w for w in report["worst"] if w["evaluator"] == "error_free"]
    assert worst and worst[0]["trace_id"] == "970ab4cb1f171423b83812d3eb2525ab"
    assert worst[0]["passed"] is False and "convert_currency" in worst[0]["explanation"]
    assert report["worst"][0]["passed"] is False  # failures come first
    _, limited, _ = evaluate(TOOL_AGENT, TOOL_ERROR, worst=0)
    assert limited["worst"] == []


def test_table_output_shows_each_evaluator_skips_and_worst_traces() -> None:
    code, text, _ = evaluate(TOOL_AGENT, TOOL_ERROR, fmt="table", worst=3)
    assert code == 0
    assert text.startswith("monitor mode (no dataset): 2 traces")
    row = next(line for line in text.splitlines() if line.startswith("exact_match "))
    assert "needs_ground_truth=2" in row
    error_row = next(line for line in text.splitlines() if line.startswith("error_free "))
    assert error_row.split()[2:6] == ["2", "2", "0.500", "0.500"]  # total, scored, mean, pass rate
    assert "worst 3:" in text and "970ab4cb1f171423b83812d3eb2525ab" in text
    assert all(len(line) < 260 for line in text.splitlines())


# --- experiment mode -----------------------------------------------------------------------------


def test_experiment_mode_matches_tasks_by_input_text_and_scores_ground_truth(tmp_path: Path) -> None:
    code, report, err = evaluate(TOOL_AGENT, TOOL_ERROR, dataset=dataset_file(tmp_path))
    assert (code, err) == (0, "")
    assert report["mode"] == "experiment"
    assert report["dataset"] == {
        "name": "tasks",
        "tasks": 3,
        "matched": {"task_id": 0, "input": 2, "unmatched": 0},
        "tasks_without_trace": 1,
    }
    evals = by_name(report)
    assert evals["contains_match"]["scored"] == 2 and evals["contains_match"]["pass_rate"] == 0.5
    assert evals["tool_trajectory"]["pass_rate"] == 1.0
    assert evals["exact_match"]["passed"] == 0 and evals["exact_match"]["scored"] == 2
    assert evals["constraints"]["skip_counts"] == {"no_data": 2}  # the tasks set no constraints
    worst_fx = [w for w in report["worst"] if w["evaluator"] == "contains_match"]
    assert worst_fx[0]["task_id"] == "fx"


def test_experiment_mode_reads_csv_datasets_and_counts_unmatched_traces(tmp_path: Path) -> None:
    csv = write(
        tmp_path / "tasks.csv",
        f"""\
        task_id,input,expected_output
        fx,{FX_QUESTION},Sorry
        """,
    )
    code, report, _ = evaluate(TOOL_AGENT, TOOL_ERROR, dataset=csv)
    assert code == 0
    assert report["dataset"]["matched"] == {"task_id": 0, "input": 1, "unmatched": 1}
    contains = by_name(report)["contains_match"]
    assert contains["scored"] == 1 and contains["passed"] == 1
    assert contains["skip_counts"] == {"needs_ground_truth": 1}  # the weather trace has no task


def trace_with_root(attributes: dict[str, Any], question: str = "unrelated question") -> Any:
    messages = json.dumps([{"role": "user", "parts": [{"type": "text", "content": question}]}])
    root = make_span("invoke_agent a", {"gen_ai.operation.name": "invoke_agent", "gen_ai.input.messages": messages})
    root.attributes.update(attributes)
    return trace_of(root)


@pytest.mark.parametrize("key", ["task.id", "task_id", "baggage.task.id"])
def test_tasks_match_by_a_task_id_attribute_on_the_root_span_first(key: str) -> None:
    dataset = Dataset(tasks=[Task(task_id="t1", input="q one"), Task(task_id="t2", input="q two")])
    matcher = TaskMatcher(dataset)
    task, how = matcher.match(trace_with_root({key: "t2"}, question="q one"))
    assert (task.task_id if task else None, how) == ("t2", "task_id")


def test_tasks_match_by_whitespace_normalized_input_else_not_at_all() -> None:
    dataset = Dataset(tasks=[Task(task_id="t1", input="q  one\n")])
    matcher = TaskMatcher(dataset)
    task, how = matcher.match(trace_with_root({"task.id": "missing"}, question=" q one"))
    assert (task.task_id if task else None, how) == ("t1", "input")
    assert matcher.match(trace_with_root({}, question="q on")) == (None, "unmatched")
    assert matcher.match(trace_with_root({"task_id": 7}, question="other"))[1] == "unmatched"


# --- specs and gates -----------------------------------------------------------------------------


def test_missed_min_pass_rate_exits_1_and_names_the_gate(tmp_path: Path) -> None:
    spec = write(
        tmp_path / "spec.yaml",
        """\
        evaluators:
          - name: error_free
            min_pass_rate: 1.0
          - name: latency
        """,
    )
    code, report, _ = evaluate(TOOL_ERROR, spec=spec)
    assert code == 1 and report["exit_code"] == 1
    assert [e["evaluator"] for e in report["evaluators"]] == ["error_free", "latency"]
    assert by_name(report)["error_free"]["gate"] == "fail" and report["failed_gates"] == ["error_free"]
    code, text, _ = evaluate(TOOL_ERROR, spec=spec, fmt="table")
    assert code == 1 and "FAILED error_free: pass rate 0.000 < min_pass_rate 1.000" in text
    assert evaluate(TOOL_AGENT, spec=spec)[0] == 0


def test_met_gates_exit_0_and_a_gate_with_nothing_scored_fails(tmp_path: Path) -> None:
    spec = write(
        tmp_path / "spec.yaml",
        """\
        - {name: error_free, min_pass_rate: 0.5}
        - {name: exact_match, id: answer, min_pass_rate: 0.5}
        """,
    )
    code, report, _ = evaluate(TOOL_AGENT, TOOL_ERROR, spec=spec)
    assert by_name(report)["error_free"]["gate"] == "pass"
    assert by_name(report)["answer"]["gate"] == "fail" and code == 1  # monitor mode: nothing scored
    code, report, _ = evaluate(TOOL_AGENT, spec=spec, dataset=dataset_file(tmp_path))
    assert by_name(report)["answer"]["pass_rate"] == 0.0 and code == 1
    lenient = write(tmp_path / "lenient.yaml", "evaluators: [{name: error_free, min_pass_rate: 0.5}]")
    assert evaluate(TOOL_AGENT, TOOL_ERROR, spec=lenient)[0] == 0


def test_spec_params_thresholds_and_ids_configure_builtins(tmp_path: Path) -> None:
    spec = write(
        tmp_path / "spec.yaml",
        """\
        evaluators:
          - {name: latency, id: fast, params: {max_latency_ms: 1}, threshold: 0.9}
          - {name: latency, id: slow}
          - {name: refusal, enabled: false}
        """,
    )
    code, report, _ = evaluate(TOOL_AGENT, spec=spec)
    evals = by_name(report)
    assert code == 0 and list(evals) == ["fast", "slow"]
    assert evals["fast"]["name"] == "latency" and evals["fast"]["threshold"] == 0.9
    assert evals["fast"]["pass_rate"] == 0.0 and evals["slow"]["pass_rate"] == 1.0


def otlp_json_trace(trace_id: str, duration_ms: int) -> dict[str, Any]:
    """One OTLP-JSON request holding a single-span trace that lasts `duration_ms`."""
    start = 1_700_000_000_000_000_000
    span = {
        "traceId": trace_id,
        "spanId": trace_id[16:],
        "name": "run",
        "kind": 1,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + duration_ms * 1_000_000),
    }
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


def test_two_latency_thresholds_give_different_pass_rates(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    for index, duration in enumerate((900, 1000, 1400, 1800)):  # scores 1, 1, 0.6, 0.2 under a 1000 ms budget
        trace = otlp_json_trace(f"{index + 1:032x}", duration)
        (traces / f"trace_{index}.json").write_text(json.dumps(trace), encoding="utf-8")
    spec = write(
        tmp_path / "spec.yaml",
        """\
        evaluators:
          - {name: latency, id: lenient, params: {max_latency_ms: 1000}, threshold: 0.1}
          - {name: latency, id: strict, params: {max_latency_ms: 1000}, threshold: 0.9}
          - {name: latency, id: default, params: {max_latency_ms: 1000}}
        """,
    )
    code, report, err = evaluate(traces, spec=spec)
    evals = by_name(report)
    assert (code, err, report["traces"]) == (0, "", 4)
    assert [evals[k]["scored"] for k in ("lenient", "strict", "default")] == [4, 4, 4]
    assert evals["lenient"]["pass_rate"] == 1.0
    assert evals["strict"]["pass_rate"] == 0.5
    assert evals["default"]["threshold"] == 1.0 and evals["default"]["pass_rate"] == 0.5  # within the budget


def test_user_evaluator_from_a_module_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(
        tmp_path / "offline_user_evals.py",
        """\
        from evaluators import EvalResult, Trace, evaluator

        @evaluator("mentions_word")
        def mentions_word(trace: Trace, word: str = "umbrella") -> EvalResult:
            found = word in (trace.output or "").lower()
            return EvalResult(1.0 if found else 0.0, explanation=f"{word!r} {'found' if found else 'missing'}")
        """,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = write(
        tmp_path / "spec.yaml",
        """\
        evaluators:
          - {module: "offline_user_evals:mentions_word", id: umbrella}
          - {module: "offline_user_evals:mentions_word", id: jpy, params: {word: jpy}, min_pass_rate: 1.0}
        """,
    )
    code, report, _ = evaluate(TOOL_AGENT, TOOL_ERROR, spec=spec)
    evals = by_name(report)
    assert evals["umbrella"]["name"] == "mentions_word" and evals["umbrella"]["pass_rate"] == 0.5
    assert evals["jpy"]["pass_rate"] == 0.5 and evals["jpy"]["gate"] == "fail" and code == 1
    assert {w["evaluator"] for w in report["worst"]} == {"umbrella", "jpy"}


def test_modules_next_to_the_spec_file_are_importable(tmp_path: Path) -> None:
    folder = tmp_path / "checks"
    folder.mkdir()
    write(
        folder / "offline_sibling_evals.py",
        """\
        from evaluators import Trace, evaluator

        @evaluator("has_output")
        def has_output(trace: Trace) -> bool:
            return bool(trace.output)
        """,
    )
    spec = write(folder / "spec.yaml", "evaluators: [{module: offline_sibling_evals}]")
    code, report, err = evaluate(TOOL_AGENT, spec=spec)
    assert (code, err) == (0, "")
    assert by_name(report)["has_output"]["pass_rate"] == 1.0  # labelled by the evaluator name, as in the daemon


@pytest.mark.parametrize(
    ("spec_text", "message"),
    [
        ("evaluators:\n  - name: no_such_evaluator\n", "unknown builtin evaluator 'no_such_evaluator'"),
        ("evaluators:\n  - {name: latency, params: {nope: 1}}\n", "unknown param 'nope'"),
        ("evaluators:\n  - {name: latency, min_pass_rate: 2}\n", "evaluators[0].min_pass_rate"),
        ("evaluators:\n  - {name: latency}\n  - {name: latency}\n", "duplicate evaluator 'latency'"),
        ("evaluators:\n  - {module: no_such_module_xyz:thing}\n", "cannot import evaluator module"),
        ("receivers: {}\n", "expected an 'evaluators' list"),
        ("evaluators: [\n", "not valid YAML"),
    ],
)
def test_bad_specs_exit_2_with_a_message(tmp_path: Path, spec_text: str, message: str) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec_text, encoding="utf-8")
    code, out, err = evaluate(TOOL_AGENT, spec=spec)
    assert code == 2 and out == ""
    assert message in err and "Traceback" not in err


def test_parse_spec_accepts_a_daemon_config_shape() -> None:
    config = {"receivers": {}, "evaluators": [{"name": "error_free", "sampling": 0.5, "alert": {"min_pass_ratio": 1}}]}
    [selected] = parse_spec(config)
    assert selected.label == "error_free" and selected.min_pass_rate is None


def test_parse_spec_accepts_the_mapping_form_of_the_daemon_config() -> None:
    spec = {
        "evaluators": {
            "remove": ["exact_match"],
            "override": {"latency": {"threshold": 0.9, "min_pass_rate": 0.75}},
            "add": [{"name": "prohibited_content", "params": {"strings": ["x"]}, "min_pass_rate": 1}],
        }
    }
    selected = {s.label: s for s in parse_spec(spec)}
    assert "exact_match" not in selected and "tool_trajectory" in selected  # ground-truth builtins by default
    assert (selected["latency"].evaluator.threshold, selected["latency"].min_pass_rate) == (0.9, 0.75)
    assert selected["prohibited_content"].min_pass_rate == 1
    [only] = parse_spec({"evaluators": {"defaults": False, "add": [{"name": "error_free"}]}})
    assert only.label == "error_free"
    with pytest.raises(ValueError, match=r"evaluators.override.latncy: 'latncy' is not in the default set"):
        parse_spec({"evaluators": {"override": {"latncy": {"threshold": 0.5}}}})
    with pytest.raises(ValueError, match=r"evaluators.add\[0\].params.nope: prohibited_content: unknown param"):
        parse_spec({"evaluators": {"add": [{"name": "prohibited_content", "params": {"nope": 1}}]}})


def test_evaluators_list_marks_the_default_set() -> None:
    catalog = {item["name"]: item for item in json.loads(list_catalog(True))}
    assert catalog["latency"]["in_default_set"] is True and catalog["latency"]["needs_config"] is False
    assert catalog["prohibited_content"]["in_default_set"] is False and catalog["prohibited_content"]["needs_config"]
    assert catalog["exact_match"]["in_default_set"] is False
    lines = {line.split()[0]: line for line in list_catalog(False).splitlines() if not line.startswith(" ")}
    assert "default set" in lines["latency"] and "needs config" in lines["prohibited_content"]
    assert "default set" not in lines["exact_match"]


# --- bad input -----------------------------------------------------------------------------------


def test_malformed_trace_file_exits_2_with_the_decode_error(tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text('{"resourceSpans": [', encoding="utf-8")
    code, out, err = evaluate(TOOL_AGENT, bad)
    assert code == 2 and out == ""
    assert err.startswith("agent-monitor evaluate: ") and "broken.json" in err and "Traceback" not in err


def test_missing_files_bad_datasets_and_empty_input_exit_2(tmp_path: Path) -> None:
    assert evaluate(tmp_path / "nope.json")[0] == 2
    assert evaluate(tmp_path)[2].startswith("agent-monitor evaluate: no spans found")
    bad = tmp_path / "tasks.json"
    bad.write_text('[{"task_id": "a", "bogus": 1}]', encoding="utf-8")
    code, _, err = evaluate(TOOL_AGENT, dataset=bad)
    assert code == 2 and "invalid dataset" in err
    assert evaluate(TOOL_AGENT, dataset=tmp_path / "missing.json")[0] == 2


# --- argument parsing and the evaluators catalog -------------------------------------------------


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="agent-monitor")
    subparsers = root.add_subparsers(dest="command")
    evaluate_cmd.add_parser(subparsers)
    evaluators_cmd.add_parser(subparsers)
    return root


def test_evaluate_arguments() -> None:
    args = parser().parse_args(["evaluate", "a.json", "b", "--evaluators", "s.yaml", "--format", "json"])
    assert args.handler is evaluate_cmd.run
    assert (args.paths, args.spec, args.dataset) == (["a.json", "b"], "s.yaml", None)
    assert (args.format, args.worst) == ("json", 10)
    with pytest.raises(SystemExit):
        parser().parse_args(["evaluate", "a.json", "--worst", "-1"])


def list_catalog(json_output: bool) -> str:
    args = parser().parse_args(["evaluators", "list", *(["--json"] if json_output else [])])
    assert args.handler is evaluators_cmd.run
    out = io.StringIO()
    assert args.handler(args, out=out) == 0
    return out.getvalue()


def test_evaluators_list_json_has_the_catalog_with_params() -> None:
    catalog = {item["name"]: item for item in json.loads(list_catalog(True))}
    trajectory = catalog["tool_trajectory"]
    assert trajectory["needs_ground_truth"] is True and trajectory["level"] == "trace"
    assert trajectory["kind"] == "rule" and trajectory["threshold"] == 1.0 and trajectory["source"] == "builtin"
    mode = next(p for p in trajectory["params"] if p["name"] == "mode")
    assert mode["default"] == "EXACT" and mode["choices"] == ["EXACT", "IN_ORDER", "ANY_ORDER"] and mode["description"]
    assert catalog["error_free"]["needs_ground_truth"] is False


def test_evaluators_list_table_shows_each_evaluator_and_its_params() -> None:
    text = list_catalog(False)
    header = next(line for line in text.splitlines() if line.startswith("precision_at_k "))
    assert "trace" in header and "ground truth" in header and "threshold 0.5" in header
    assert any(line.split()[:3] == ["k", "=", "5"] for line in text.splitlines())
    assert parser().parse_args(["evaluators"]).handler(argparse.Namespace()) == 2


# --- failure signatures --------------------------------------------------------------------------


def test_failures_are_grouped_by_signature_in_the_json_report() -> None:
    _, report, _ = evaluate(TOOL_AGENT, TOOL_ERROR)
    signatures = report["signatures"]
    assert report["signatures_left_out"] == 0
    by_evaluator = {s["evaluator"]: s for s in signatures}
    error_free = by_evaluator["error_free"]
    assert {k: error_free[k] for k in ("level", "step_kind", "step_name", "error_type", "template", "count")} == {
        "level": "trace",
        "step_kind": "tool",
        "step_name": "convert_currency",
        "error_type": "http_503",
        "template": "FX rate service unavailable (HTTP <num>)",
        "count": 1,
    }
    assert error_free["example_traces"] == ["970ab4cb1f171423b83812d3eb2525ab"]
    assert len(error_free["id"]) == 16 and error_free["example"] == "FX rate service unavailable (HTTP 503)"
    assert by_evaluator["tool_success_rate"]["agent"] == "assistant_agent"
    failed = sum(e["failed"] for e in report["evaluators"])
    assert sum(s["count"] for s in signatures) == failed  # every failing result has exactly one signature
    assert [s["count"] for s in signatures] == sorted((s["count"] for s in signatures), reverse=True)


def test_a_user_evaluator_stating_no_failure_is_grouped_by_its_masked_explanation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(
        tmp_path / "offline_sig_evals.py",
        """\
        from evaluators import EvalResult, Trace, evaluator

        @evaluator("short_answer")
        def short_answer(trace: Trace) -> EvalResult:
            return EvalResult(0.0, explanation=f"answer has {len(trace.output or '')} chars, over 10")
        """,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = write(tmp_path / "spec.yaml", 'evaluators:\n  - {module: "offline_sig_evals:short_answer"}\n')
    _, report, _ = evaluate(TOOL_AGENT, TOOL_ERROR, spec=spec)
    (group,) = report["signatures"]  # two answers of different lengths: one failure mode
    assert (group["count"], group["template"], group["step_kind"]) == (2, "answer has <num> chars, over <num>", None)


def test_table_output_lists_the_failure_signatures() -> None:
    _, text, _ = evaluate(TOOL_AGENT, TOOL_ERROR, fmt="table")
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("failure signatures ("))
    error_free = next(line for line in lines[start:] if " error_free " in line)
    assert "tool convert_currency  http_503  FX rate service unavailable (HTTP <num>)" in error_free
    assert "970ab4cb1f171423b83812d3eb2525ab" in error_free and error_free.split()[0] == "1"


def test_the_spec_files_signature_rules_name_the_groups_offline(tmp_path: Path) -> None:
    """A spec (or daemon config) with `signatures.rules` groups offline as the daemon does: the matching failures
    under the rule's name; a broken rule is a usage error naming it."""
    spec = write(
        tmp_path / "spec.yaml",
        """\
        evaluators: [{name: error_free}]
        signatures:
          rules:
            - {name: "fx provider down", step_name: convert_currency, message: "HTTP 5\\\\d\\\\d"}
        """,
    )
    _, report, _ = evaluate(TOOL_AGENT, TOOL_ERROR, spec=spec)
    (group,) = report["signatures"]
    assert (group["evaluator"], group["template"], group["count"]) == ("error_free", "fx provider down", 1)
    broken = write(
        tmp_path / "broken.yaml", "evaluators: [{name: error_free}]\nsignatures: {rules: [{name: x, message: '('}]}\n"
    )
    code, _, err = evaluate(TOOL_AGENT, TOOL_ERROR, spec=broken)
    assert code == 2 and "signatures.rules[0].message" in err and "regular expression" in err
