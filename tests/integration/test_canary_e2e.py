"""Canary analysis end to end: a real daemon receives two versions of an agent through the real OTel SDK
exporter (copies of a recorded corpus trace, service.version 1.4 and 1.5, the candidate's tool calls failing),
compares them live, and a real Prometheus scrapes it. Every query of the Argo Rollouts AnalysisTemplate then runs
against that Prometheus, and its conditions fail the analysis for the evaluator the tool errors hurt, pass it for
one they do not touch, and wait (never fail) where a side has too few results."""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.deploy.argo_analysis import arguments, fill, load, phase
from tests.integration.conftest import send
from tests.integration.promstack import ServerSet, poll, query, scrape_config

pytestmark = pytest.mark.integration

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus" / "adk_native__tool_agent"
COPIES = 30
PAIR = {"baseline": "1.4", "candidate": "1.5"}
VARIANTS = {
    "attribute": "service.version",
    "compare": [
        {"evaluator": "error_free", **PAIR, "window": "1h", "min_samples": 20},  # hurt by the tool errors
        {"evaluator": "token_budget", **PAIR, "window": "1h", "min_samples": 20},  # untouched by them
        {"evaluator": "tool_success_rate", **PAIR, "window": "1h", "min_samples": 1000},  # hurt, too few results
    ],
}


@pytest.fixture
def canary(daemon_factory, tmp_path) -> Iterator[tuple[object, int]]:
    """A daemon (default evaluator set, the comparisons above) fed both versions, and a Prometheus scraping it."""
    daemon = daemon_factory({"variants": VARIANTS}, evaluators=None)
    endpoint = f"127.0.0.1:{daemon.grpc_port}"
    send("grpc", endpoint, "variant", str(CORPUS), "--copies", str(COPIES), "--version", "1.4")
    send("grpc", endpoint, "variant", str(CORPUS), "--copies", str(COPIES), "--version", "1.5", "--fail-tools")
    done = lambda: all(  # noqa: E731
        daemon.value("agent_eval_variant_samples", evaluator="error_free", role=role) == COPIES
        for role in ("baseline", "candidate")
    )
    assert daemon.wait_for_condition(done, timeout=60), daemon.output()
    servers = ServerSet(tmp_path)
    with contextlib.ExitStack() as stack:
        stack.callback(servers.stop)
        yield daemon, servers.start_prometheus(scrape_config(daemon.metrics_port))


def gauge(daemon, name: str, evaluator: str, **labels: str) -> float:
    [(_, value)] = [
        (lab, v)
        for lab, v in daemon.metrics()[name]
        if lab["evaluator"] == evaluator and all(lab.get(k) == x for k, x in {**PAIR, **labels}.items())
    ]
    return value


def reason(daemon, evaluator: str) -> str:
    on = [lab["reason"] for lab, v in daemon.metrics()["agent_eval_variant_verdict_reason"]
          if lab["evaluator"] == evaluator and v == 1.0]  # fmt: skip
    assert len(on) == 1
    return on[0]


def analysis(port: int, evaluator: str) -> dict[str, str]:
    """Each metric of the AnalysisTemplate measured once against Prometheus: its phase."""
    template = load()
    args = arguments(template, {"evaluator": evaluator, **PAIR})
    phases = {}
    for metric in template["spec"]["metrics"]:
        promql = fill(metric["provider"]["prometheus"]["query"], args)
        result = [float(sample["value"][1]) for sample in query(port, promql)]
        phases[metric["name"]] = phase(metric, result, args)
    return phases


def test_a_worse_candidate_fails_the_rollout_gate_and_an_unaffected_evaluator_passes(canary) -> None:
    daemon, port = canary
    # The daemon's own figures.
    assert gauge(daemon, "agent_eval_variant_verdict", "error_free") == -1
    assert reason(daemon, "error_free") == "worse"
    delta = gauge(daemon, "agent_eval_variant_delta", "error_free")
    lower = gauge(daemon, "agent_eval_variant_delta_lower", "error_free")
    upper = gauge(daemon, "agent_eval_variant_delta_upper", "error_free")
    assert delta == -1.0 and lower <= delta <= upper < -0.05
    assert gauge(daemon, "agent_eval_variant_pass_ratio", "error_free", role="baseline") == 1.0
    assert gauge(daemon, "agent_eval_variant_verdict", "token_budget") == 0
    assert reason(daemon, "token_budget") == "no_significant_difference"
    assert gauge(daemon, "agent_eval_variant_delta", "token_budget") == 0
    assert gauge(daemon, "agent_eval_variant_verdict", "tool_success_rate") == 0
    assert reason(daemon, "tool_success_rate") == "insufficient_samples"
    assert math.isclose(gauge(daemon, "agent_eval_variant_samples", "tool_success_rate", role="candidate"), COPIES)
    # The variant label on the result counters.
    failing = daemon.value("agent_eval_results_total", evaluator="error_free", variant="1.5", outcome="fail")
    assert failing == COPIES

    # Prometheus has scraped them; the AnalysisTemplate's queries and conditions decide.
    verdict = 'agent_eval_variant_verdict{evaluator="error_free"}'
    poll(port, verdict, lambda result: bool(result) and float(result[0]["value"][1]) == -1)
    assert analysis(port, "error_free") == {"verdict": "Failed", "drop-margin": "Failed", "decided": "Successful"}
    assert analysis(port, "token_budget") == {
        "verdict": "Successful",
        "drop-margin": "Successful",
        "decided": "Successful",
    }
    # Too few results: nothing fails, the decision waits (the run turns inconclusive: the rollout pauses).
    assert analysis(port, "tool_success_rate") == {
        "verdict": "Successful",
        "drop-margin": "Successful",
        "decided": "Inconclusive",
    }
    # An evaluator with no comparison configured: no series, so nothing passes by default.
    assert analysis(port, "latency")["verdict"] == "Inconclusive"

    # The canary view shows the same verdicts.
    status, body, _ = daemon.get("/api/v1/comparisons")
    assert status == 200
    comparisons = {c["evaluator"]: c for c in json.loads(body)}
    assert comparisons["error_free"]["verdict"] == -1 and comparisons["error_free"]["candidate"]["total"] == COPIES
    assert comparisons["tool_success_rate"]["reason"] == "insufficient_samples"
