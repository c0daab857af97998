"""`agent-monitor explain` against a real API server on 127.0.0.1 with a stand-in explainer: the headline and
table, the parameters sent, `--json`, the note when nothing sets the slice apart, and the exit statuses (no
daemon, a refused token, explain off, a bad argument); hostile values neutralised."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from monitor.cli import main
from monitor.explain.model import ExplainQuery
from monitor.web.app import build_api_app
from tests.support.explanations import SIGNATURE, StubExplainer, factor, sample_explanation
from tests.support.ports import closed_port
from tests.support.threaded_server import serve

pytestmark = pytest.mark.integration

TOKEN = "explain-cli-token"


@contextmanager
def daemon(explainer: StubExplainer | None) -> Iterator[str]:
    app = build_api_app(lambda accept: (b"", "text/plain"), dict, TOKEN, explainer=explainer)
    with serve(app) as base:
        yield base


@pytest.fixture(autouse=True)
def no_token_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_MONITOR_API_TOKEN", raising=False)
    monkeypatch.delenv("AGENT_MONITOR_CONFIG", raising=False)


def explain(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["explain", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_headline_and_table_of_the_factors(capsys: pytest.CaptureFixture[str]) -> None:
    stub = StubExplainer()
    with daemon(stub) as base:
        code, out, err = explain(
            capsys, "--url", base, "--token", TOKEN, "--evaluator", "tool_success_rate", "--since", "2h"
        )
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith("what's different, ") and lines[0].endswith(
        ": 100 traces in the failures of tool_success_rate against 900 in its passing traces; 42 tested at FDR 1 %"
    )
    assert lines[1] == "model=gemini-2.5-pro AND tool=convert_currency: 92 % of failures, 14× the rest"
    assert lines[3].split() == ["#", "VALUES", "SLICE", "REFERENCE", "LIFT", "COVERAGE", "Q"]
    first, second = lines[4].split(), lines[5].split()
    assert " ".join(first) == "1 model=gemini-2.5-pro AND tool=convert_currency 92 % (92) 6.6 % (59) 14× 92 % < 0.0001"
    assert second[:2] == ["2", "tenant=acme"] and "only" in second and "here" in second
    (query,) = stub.queries
    assert query.evaluator == "tool_success_rate" and round(query.until - query.since) == 7200


def test_parameters_sent_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    stub = StubExplainer()
    with daemon(stub) as base:
        code, out, _ = explain(
            capsys,
            *("--url", base, "--token", TOKEN, "--signature", SIGNATURE, "--service", "checkout"),
            *("--agent", "planner", "--variant", "v2", "--since", "1764768600", "--until", "1764770400"),
            *("--reference-since", "1764682200", "--reference-until", "1764768000", "--json"),
        )
    assert code == 0
    body = json.loads(out)
    assert body["kind"] == "signature" and body["factors"][0]["lift"] == 14.0
    (query,) = stub.queries
    assert (query.signature, query.service, query.agent, query.variant) == (SIGNATURE, "checkout", "planner", "v2")
    assert (query.since, query.until) == (1_764_768_600.0, 1_764_770_400.0)
    assert (query.reference_since, query.reference_until) == (1_764_682_200.0, 1_764_768_000.0)


def test_nothing_sets_it_apart(capsys: pytest.CaptureFixture[str]) -> None:
    nothing = sample_explanation(ExplainQuery(evaluator="e", since=0, until=1)).model_copy(update={"factors": []})
    with daemon(StubExplainer(nothing)) as base:
        code, out, _ = explain(capsys, "--url", base, "--token", TOKEN, "--evaluator", "e")
    assert code == 0 and out.splitlines()[-1] == "no value sets the failures apart (42 values tested at FDR 1 %)"


def test_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    port = closed_port()
    code, _, err = explain(capsys, "--url", f"http://127.0.0.1:{port}", "--timeout", "2", "--evaluator", "e")
    assert code == 1 and err.startswith("agent-monitor explain: cannot reach") and "connection refused" in err
    with daemon(StubExplainer()) as base:
        code, _, err = explain(capsys, "--url", base, "--token", "wrong", "--evaluator", "e")
        assert code == 1 and "401 unauthorized: the token was refused" in err
        code, _, err = explain(capsys, "--url", base, "--token", TOKEN, "--signature", "nothex")
        assert code == 2 and "400: signature must be 16 hex characters" in err
        code, _, err = explain(capsys, "--url", base, "--token", TOKEN, "--since", "soon")
        assert code == 2 and "--since" in err
        code, _, err = explain(capsys, "--url", base, "--token", TOKEN, "--reference-since", "soon")
        assert code == 2 and "--reference-since: invalid time" in err
    with daemon(None) as base:
        code, _, err = explain(capsys, "--url", base, "--token", TOKEN, "--evaluator", "e")
        assert code == 1 and "503: explain unavailable: explanations are off" in err
    code, _, err = explain(capsys, "--url", "ftp://x")
    assert code == 2 and "--url must be" in err


def test_hostile_values_are_neutralised(capsys: pytest.CaptureFixture[str]) -> None:
    hostile = "svc\x1b]0;owned\x07\x1b[2J\nnext\u202e"
    query = ExplainQuery(evaluator=hostile, since=0, until=1)
    answer = sample_explanation(query, factor([("model", hostile), (hostile, "x")], 0.9, 0.1, 9.0, 1e-5))
    with daemon(StubExplainer(answer)) as base:
        code, out, _ = explain(capsys, "--url", base, "--token", TOKEN)
        assert code == 0 and "\x1b" not in out and "\x07" not in out and "\u202e" not in out
        code, out, _ = explain(capsys, "--url", base, "--token", TOKEN, "--json")
        assert code == 0 and out.isascii() and json.loads(out)["factors"][0]["values"][0]["value"] == hostile
