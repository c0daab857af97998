"""`agent-monitor compare`: two versions' traces compared evaluator by evaluator, built from the recorded corpus
with tool errors injected into the candidate's copies."""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import pytest

from evaluators.traces.records import STATUS_ERROR
from monitor.cli import build_parser
from monitor.commands import compare_cmd
from tests.conftest import CORPUS
from tests.support.otlp_json import corpus_traces, otlp_document

SCENARIO = "otel_genai__tool_agent"
COPIES = 40  # per side: 20 of 40 failing against 0 of 40 is far past any alpha used here
UNAFFECTED = "non_empty_response"  # reads the final answer, which the injected span status leaves alone

pytestmark = pytest.mark.skipif(not (CORPUS / SCENARIO).is_dir(), reason="corpus not available")


def write_copies(folder: Path, side: int, copies: int, errors: int = 0, resource: dict[str, Any] | None = None) -> Path:
    """`copies` copies of the scenario's trace with fresh trace ids into folder/side-N.json; the first `errors`
    of them with their tool spans' status set to ERROR; `resource` attributes added to every span."""
    (spans,) = corpus_traces(SCENARIO).values()
    written = []
    for i in range(copies):
        trace_id = f"{side:08x}{i:024x}"
        for span in spans:
            failed = i < errors and span.name.startswith("execute_tool")
            written.append(
                dataclasses.replace(
                    span,
                    trace_id=trace_id,
                    status_code=STATUS_ERROR if failed else span.status_code,
                    status_message="tool call failed" if failed else span.status_message,
                    resource_attributes={**span.resource_attributes, **(resource or {})},
                )
            )
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"side-{side}.json"
    path.write_text(json.dumps(otlp_document(written)), encoding="utf-8")
    return folder


def compare(fmt: str = "json", **options: Any) -> tuple[int, Any, str]:
    """Run the command through the real parser; returns (exit status, parsed JSON or table text, stderr)."""
    argv = ["compare", "--format", fmt]
    for key, value in options.items():
        for item in value if isinstance(value, list) else [value]:
            argv += [f"--{key.replace('_', '-')}", str(item)]
    args = build_parser().parse_args(argv)
    out, err = io.StringIO(), io.StringIO()
    code = compare_cmd.run(args, out=out, err=err)
    text = out.getvalue()
    return code, (json.loads(text) if fmt == "json" and text else text), err.getvalue()


def by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["evaluator"]: e for e in report["evaluators"]}


@pytest.fixture(scope="module")
def versions(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("versions")
    baseline = write_copies(root / "baseline", 1, COPIES)
    candidate = write_copies(root / "candidate", 2, COPIES, errors=COPIES // 2)
    return baseline, candidate


def test_injected_tool_errors_make_error_free_worse_and_fail_the_run(versions: tuple[Path, Path]) -> None:
    baseline, candidate = versions
    code, report, _ = compare(baseline=baseline, candidate=candidate)
    assert code == 1
    error_free = by_name(report)["error_free"]
    assert error_free["baseline"] == {"passed": COPIES, "total": COPIES, "pass_rate": 1.0}
    assert error_free["candidate"] == {"passed": COPIES // 2, "total": COPIES, "pass_rate": 0.5}
    assert error_free["delta"] == pytest.approx(-0.5)
    assert error_free["p_value"] < 0.001 and error_free["z"] < 0
    low, high = error_free["ci"]
    assert -1 <= low < -0.5 < high < 0
    assert (error_free["verdict"], error_free["reason"], error_free["gated"]) == (-1, "worse", True)
    assert error_free["scores_p_value"] < 0.001
    unaffected = by_name(report)[UNAFFECTED]
    assert unaffected["baseline"]["total"] == unaffected["candidate"]["total"] == COPIES
    assert (unaffected["verdict"], unaffected["reason"]) == (0, "no_significant_difference")
    assert unaffected["p_value"] == 1.0 and unaffected["z"] == 0.0


def test_json_shape(versions: tuple[Path, Path]) -> None:
    baseline, candidate = versions
    _, report, _ = compare(baseline=baseline, candidate=candidate, alpha=0.01, min_samples=5)
    assert set(report) == {
        "alpha",
        "min_samples",
        "baseline",
        "candidate",
        "cost_ratio",
        "evaluators",
        "signatures",
        "signatures_left_out",
    }
    assert (report["alpha"], report["min_samples"]) == (0.01, 5)
    assert report["baseline"]["traces"] == report["candidate"]["traces"] == COPIES
    keys = {"evaluator", "baseline", "candidate", "delta", "ci", "p_value", "z", "scores_p_value"}
    for entry in report["evaluators"]:
        assert set(entry) == keys | {"verdict", "reason", "gated"}
        assert set(entry["baseline"]) == set(entry["candidate"]) == {"passed", "total", "pass_rate"}
        assert entry["verdict"] in (-1, 0, 1) and len(entry["ci"]) == 2
    # an evaluator with nothing scored on either side (ground truth needed): no rates, no test, no data
    exact = by_name(report)["exact_match"]
    assert exact["baseline"] == {"passed": 0, "total": 0, "pass_rate": None}
    assert (exact["delta"], exact["ci"], exact["p_value"], exact["z"]) == (None, [None, None], None, None)
    assert exact["scores_p_value"] is None and (exact["verdict"], exact["reason"]) == (0, "no_data")


def test_exit_0_when_the_worse_evaluator_is_not_gated(versions: tuple[Path, Path]) -> None:
    baseline, candidate = versions
    code, report, _ = compare(baseline=baseline, candidate=candidate, gate=[UNAFFECTED, "latency"])
    assert code == 0
    error_free = by_name(report)["error_free"]
    assert (error_free["verdict"], error_free["gated"]) == (-1, False)
    assert by_name(report)[UNAFFECTED]["gated"] is True


def test_min_samples_above_the_sample_size_decides_nothing(versions: tuple[Path, Path]) -> None:
    baseline, candidate = versions
    code, report, _ = compare(baseline=baseline, candidate=candidate, min_samples=COPIES + 1)
    assert code == 0
    assert {e["reason"] for e in report["evaluators"]} == {"insufficient_samples", "no_data"}
    assert by_name(report)["error_free"]["reason"] == "insufficient_samples"
    assert by_name(report)["error_free"]["p_value"] < 0.001  # the test still ran


def test_table(versions: tuple[Path, Path]) -> None:
    baseline, candidate = versions
    code, text, _ = compare("table", baseline=baseline, candidate=candidate, gate="error_free")
    assert code == 1
    row = next(line for line in text.splitlines() if line.startswith("error_free "))
    assert "1.000 (n=40)" in row and "0.500 (n=40)" in row and "-0.500" in row and row.endswith("worse")
    unaffected = next(line for line in text.splitlines() if line.startswith(UNAFFECTED))
    assert unaffected.endswith("no_significant_difference (not gated)")
    exact = next(line for line in text.splitlines() if line.startswith("exact_match "))
    assert exact.split()[1:] == ["-", "(n=0)", "-", "(n=0)", "-", "-", "-", "-", "no", "data", "(not", "gated)"]
    assert "WORSE error_free" in text


def test_split_by_a_resource_attribute(tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    write_copies(folder, 1, COPIES, resource={"service.version": "1.4"})
    write_copies(folder, 2, COPIES, errors=COPIES // 2, resource={"service.version": "1.5"})
    options = {"traces": folder, "split_by": "service.version", "baseline_value": "1.4"}
    code, report, _ = compare(**options, candidate_value="1.5")
    assert code == 1
    assert {k: report["baseline"][k] for k in ("source", "traces")} == {
        "source": "service.version=1.4",
        "traces": COPIES,
    }
    assert by_name(report)["error_free"]["reason"] == "worse"
    code, report, _ = compare(**{**options, "baseline_value": "1.5"}, candidate_value="1.4")
    assert (code, by_name(report)["error_free"]["reason"]) == (0, "better")
    code, _, err = compare(**options, candidate_value="2.0")
    assert code == 2 and "service.version='2.0'" in err and "'1.4' (40)" in err
    code, _, err = compare(**{**options, "split_by": "deployment.environment"}, candidate_value="1.5")
    assert code == 2 and "values found: none" in err


@pytest.mark.parametrize(
    "options, message",
    [
        ({"baseline": "{tmp}/missing", "candidate": "{b}"}, "no such file or directory"),
        ({"baseline": "{empty}", "candidate": "{b}"}, "no spans found"),
        ({"baseline": "{b}", "candidate": "{c}", "gate": "no_such_evaluator"}, "no such evaluator"),
        ({"baseline": "{b}"}, "give --baseline and --candidate together"),
        ({"traces": "{b}", "split_by": "service.version"}, "--traces DIR --split-by"),
        ({"baseline": "{b}", "candidate": "{c}", "traces": "{b}"}, "not both"),
    ],
)
def test_bad_input_exits_2(versions: tuple[Path, Path], tmp_path: Path, options: dict[str, str], message: str) -> None:
    (tmp_path / "empty").mkdir()
    names = {"tmp": tmp_path, "empty": tmp_path / "empty", "b": versions[0], "c": versions[1]}
    code, out, err = compare(**{k: v.format(**names) for k, v in options.items()})
    assert (code, out) == (2, "")
    assert message in err


def test_bad_alpha_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["compare", "--alpha", "1.5"])
    assert exc.value.code == 2


def test_registered_in_the_cli() -> None:
    args = build_parser().parse_args(["compare", "--baseline", "a", "--candidate", "b"])
    assert args.handler is compare_cmd.run and (args.alpha, args.min_samples, args.gate) == (0.05, 30, None)
    assert isinstance(args, argparse.Namespace)


# --- failure signatures --------------------------------------------------------------------------


def test_the_candidates_new_tool_failure_is_a_signature_new_in_the_candidate(versions: tuple[Path, Path]) -> None:
    baseline, candidate = versions
    _, report, _ = compare(baseline=baseline, candidate=candidate)
    signatures = report["signatures"]
    new = [s for s in signatures if s["new_in_candidate"]]
    error_free = next(s for s in new if s["evaluator"] == "error_free")
    assert (error_free["baseline"], error_free["candidate"]) == (0, COPIES // 2)
    assert (error_free["step_kind"], error_free["error_type"], error_free["template"]) == (
        "tool",
        "error",
        "tool call failed",
    )
    assert all(t.startswith(f"{2:08x}") for t in error_free["example_traces"])  # the candidate's traces
    assert signatures[: len(new)] == new  # new failure modes first
    _, text, _ = compare("table", baseline=baseline, candidate=candidate)
    section = text[text.index("failure signatures (") :]
    line = next(row for row in section.splitlines() if " error_free " in row)
    assert line.strip().startswith("NEW in candidate") and f"0 → {COPIES // 2}" in line


def test_far_more_often_in_the_candidate_is_new_and_a_similar_rate_is_not() -> None:
    from evaluators.signatures import Failure, failure_signature
    from monitor.offline.signatures import SignatureGroup, compare_groups

    def group(message: str, count: int) -> SignatureGroup:
        sig = failure_signature("error_free", "trace", None, Failure("tool", "t", "error", message))
        return SignatureGroup(sig, count, [f"trace-{message}"])

    deltas = compare_groups(
        [group("often", 1), group("steady", 10), group("gone", 3)],
        [group("often", 20), group("steady", 12)],
        base_traces=40,
        cand_traces=40,
    )
    marks = {d.signature.template: (d.baseline, d.candidate, d.new_in_candidate) for d in deltas}
    assert marks == {"often": (1, 20, True), "steady": (10, 12, False), "gone": (3, 0, False)}
    assert deltas[0].signature.template == "often"
