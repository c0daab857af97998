"""`agent-monitor changes` against a real API server on 127.0.0.1: the table, the filters sent, `--json`, and the
exit statuses (no daemon, a refused token, drift off, a bad argument); hostile labels neutralised."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from monitor.cli import main
from monitor.detection.model import DriftReport
from monitor.web.app import build_api_app
from tests.support.change_reports import AS_OF, sample_report
from tests.support.ports import closed_port
from tests.support.threaded_server import serve

pytestmark = pytest.mark.integration

TOKEN = "changes-cli-token"


@contextmanager
def daemon(changes: Callable[[], DriftReport | None] | None = sample_report) -> Iterator[str]:
    app = build_api_app(lambda accept: (b"", "text/plain"), dict, TOKEN, changes=changes)
    with serve(app) as base:
        yield base


@pytest.fixture(autouse=True)
def no_token_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_MONITOR_API_TOKEN", raising=False)
    monkeypatch.delenv("AGENT_MONITOR_CONFIG", raising=False)


def changes(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["changes", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_table_of_the_active_changes_largest_first(capsys: pytest.CaptureFixture[str]) -> None:
    with daemon() as base:
        code, out, err = changes(capsys, "--url", base, "--token", TOKEN)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == (
        "drift as of 2025-12-03T14:00:00Z (recent window from 2025-12-03T13:30:00Z): 5 signals tested, 3 changed"
    )
    header = lines[1].split()
    assert header[:6] == ["#", "SERVICE", "AGENT", "SIGNAL", "KIND", "STATE"]
    rows = [line.split() for line in lines[2:5]]
    assert [r[3] for r in rows] == ["latency", "pass_ratio[helpfulness]", "tool_success"]
    assert rows[0][:6] == ["1", "search", "-", "latency", "behaviour", "changed"]
    assert "+50%" in lines[2] and "-15.0pt" in lines[3] and "0.970 n=1000" in lines[4] and "v2" in lines[2]
    assert lines[6].startswith("1. latency mean 1.2 → 1.8 s (+50 %) against the same hours of the previous days")
    assert lines[8].startswith("3. tool_success 0.97 → 0.89")


def test_filters_all_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    with daemon() as base:
        code, out, _ = changes(capsys, "--url", base, "--token", TOKEN, "--service", "checkout", "--kind", "quality")
        assert code == 0 and "latency" not in out and out.count("worse") == 2
        code, out, _ = changes(capsys, "--url", base, "--token", TOKEN, "--all", "--json")
        body = json.loads(out)
        assert code == 0 and body["all"] is True and body["as_of"] == AS_OF
        assert [i["signal"] for i in body["items"]] == ["latency", "pass_ratio", "tool_success", "error_rate", "tokens"]
        code, out, _ = changes(capsys, "--url", base, "--token", TOKEN, "--agent", "planner", "--limit", "1")
        assert code == 0 and "(1 of 2 shown: raise --limit)" in out
        code, out, _ = changes(capsys, "--url", base, "--token", TOKEN, "--service", "nowhere")
        assert code == 0 and out.splitlines()[-1] == "no change"


def test_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    port = closed_port()
    code, _, err = changes(capsys, "--url", f"http://127.0.0.1:{port}", "--timeout", "2")
    assert code == 1 and err.startswith("agent-monitor changes: cannot reach") and "connection refused" in err
    with daemon() as base:
        code, _, err = changes(capsys, "--url", base, "--token", "wrong")
        assert code == 1 and "401 unauthorized: the token was refused" in err
        code, _, err = changes(capsys, "--url", base, "--token", TOKEN, "--limit", "0")
        assert code == 2 and "400" in err and "limit" in err
    with daemon(None) as base:
        code, _, err = changes(capsys, "--url", base, "--token", TOKEN)
        assert code == 1 and "503: drift unavailable: drift detection is disabled" in err
    with daemon(lambda: None) as base:
        code, _, err = changes(capsys, "--url", base, "--token", TOKEN)
        assert code == 1 and "no report yet" in err
    with pytest.raises(SystemExit) as exited:
        main(["changes", "--kind", "mood"])
    assert exited.value.code == 2
    code, _, err = changes(capsys, "--url", "ftp://x")
    assert code == 2 and "--url must be" in err


def test_hostile_labels_are_neutralised(capsys: pytest.CaptureFixture[str]) -> None:
    hostile = "svc\x1b]0;owned\x07\x1b[2J\nnext\u202e"
    report = sample_report(service=hostile, agent=hostile, subject=hostile)
    with daemon(lambda: report) as base:
        code, out, _ = changes(capsys, "--url", base, "--token", TOKEN)
        assert code == 0 and "\x1b" not in out and "\x07" not in out and "\u202e" not in out
        code, out, _ = changes(capsys, "--url", base, "--token", TOKEN, "--json")
        assert code == 0 and out.isascii() and json.loads(out)["items"][1]["service"] == hostile
