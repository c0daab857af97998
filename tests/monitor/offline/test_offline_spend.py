"""What the traces cost in `agent-monitor evaluate` and `compare`: each trace's spend from genai-prices (figures
computed here from the library itself), a spec's `pricing:` overrides, and the candidate/baseline cost ratio."""

from __future__ import annotations

import dataclasses
import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import genai_prices
import pytest

from monitor.cli import build_parser
from monitor.commands import compare_cmd, evaluate_cmd
from monitor.text import usd
from tests.conftest import CORPUS
from tests.support.otlp_json import corpus_traces, otlp_document

SCENARIO = "otel_genai__tool_agent"  # one gemini-2.0-flash call per trace
COPIES = 5
INPUT, OUTPUT = "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"

pytestmark = pytest.mark.skipif(not (CORPUS / SCENARIO).is_dir(), reason="corpus not available")


def write_copies(folder: Path, side: int, tokens: int = 1) -> Path:
    """COPIES copies of the scenario's trace (fresh trace ids) into folder/side-N.json, the LLM call's token
    counts multiplied by `tokens`."""
    (spans,) = corpus_traces(SCENARIO).values()
    written = []
    for i in range(COPIES):
        for span in spans:
            attributes = dict(span.attributes)
            for key in (INPUT, OUTPUT):
                if key in attributes:
                    attributes[key] = attributes[key] * tokens
            written.append(dataclasses.replace(span, trace_id=f"{side:08x}{i:024x}", attributes=attributes))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"side-{side}.json").write_text(json.dumps(otlp_document(written)), encoding="utf-8")
    return folder


def library_cost(tokens: int = 1) -> float:
    """genai-prices' own figure for the scenario's call (its tokens times `tokens`), at the call's start."""
    (spans,) = corpus_traces(SCENARIO).values()
    [call] = [s for s in spans if INPUT in s.attributes]
    usage = genai_prices.Usage(
        input_tokens=call.attributes[INPUT] * tokens, output_tokens=call.attributes[OUTPUT] * tokens
    )
    when = datetime.fromtimestamp(call.start_time_unix_nano / 1e9, UTC)
    price = genai_prices.calc_price(usage, "gemini-2.0-flash", provider_id="google", genai_request_timestamp=when)
    return float(price.total_price)


def run(command: Any, argv: list[str]) -> tuple[int, str, str]:
    args = build_parser().parse_args(argv)
    out, err = io.StringIO(), io.StringIO()
    code = command.run(args, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def spec(tmp_path: Path, pricing: str = "") -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text("evaluators:\n  - name: error_free\n" + pricing, encoding="utf-8")
    return path


def test_evaluate_reports_each_traces_cost_from_the_price_table(tmp_path: Path) -> None:
    traces = write_copies(tmp_path / "t", 1)
    code, out, err = run(evaluate_cmd, ["evaluate", str(traces), "--format", "json"])
    assert code == 0, err
    spend = json.loads(out)["spend"]
    each = library_cost()
    assert (spend["traces"], spend["priced_traces"], spend["calls"], spend["unpriced_calls"]) == (
        COPIES,
        COPIES,
        COPIES,
        0,
    )
    assert spend["mean_usd"] == pytest.approx(each, rel=1e-12)
    assert spend["p50_usd"] == pytest.approx(each, rel=1e-12) and spend["p95_usd"] == pytest.approx(each, rel=1e-12)
    assert spend["total_usd"] == pytest.approx(COPIES * each, rel=1e-12)
    code, out, _ = run(evaluate_cmd, ["evaluate", str(traces)])
    line = f"spend: {usd(spend['total_usd'])} over {COPIES} traces ({COPIES} priced); per trace mean {usd(each)}"
    assert line in out


def test_an_override_in_the_specs_pricing_section_changes_the_figure(tmp_path: Path) -> None:
    traces = write_copies(tmp_path / "t", 1)
    pricing = "pricing:\n  models:\n    gemini-2.0-flash: {input: 1.0, output: 2.0, per: 1K}\n"
    code, out, err = run(
        evaluate_cmd, ["evaluate", str(traces), "--evaluators", str(spec(tmp_path, pricing)), "--format", "json"]
    )
    assert code == 0, err
    (spans,) = corpus_traces(SCENARIO).values()
    [call] = [s for s in spans if INPUT in s.attributes]
    expected = (call.attributes[INPUT] * 1.0 + call.attributes[OUTPUT] * 2.0) / 1000
    assert json.loads(out)["spend"]["mean_usd"] == pytest.approx(expected, rel=1e-12)
    assert expected != pytest.approx(library_cost())


def test_a_malformed_pricing_section_is_a_usage_error(tmp_path: Path) -> None:
    traces = write_copies(tmp_path / "t", 1)
    pricing = "pricing:\n  models:\n    gemini-2.0-flash: {input: -1, output: 2.0, per: 1K}\n"
    code, _, err = run(evaluate_cmd, ["evaluate", str(traces), "--evaluators", str(spec(tmp_path, pricing))])
    assert code == 2 and "pricing.models.gemini-2.0-flash.input" in err


def test_compare_shows_a_candidate_that_costs_twice_as_much(tmp_path: Path) -> None:
    baseline = write_copies(tmp_path / "baseline", 1)
    candidate = write_copies(tmp_path / "candidate", 2, tokens=2)  # same answers, twice the tokens
    argv = ["compare", "--baseline", str(baseline), "--candidate", str(candidate), "--min-samples", "1"]
    code, out, err = run(compare_cmd, [*argv, "--format", "json"])
    assert code == 0, err
    report = json.loads(out)
    assert report["baseline"]["spend"]["mean_usd"] == pytest.approx(library_cost(), rel=1e-12)
    assert report["candidate"]["spend"]["mean_usd"] == pytest.approx(library_cost(2), rel=1e-12)
    assert report["cost_ratio"] == pytest.approx(2.0, rel=1e-9)
    code, out, _ = run(compare_cmd, argv)
    assert "cost per trace: candidate 2.00x the baseline" in out
    assert f"candidate spend: {usd(report['candidate']['spend']['total_usd'])} over {COPIES} traces" in out
