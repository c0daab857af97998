"""`agent-monitor review --level session` and `--session ID` over a real store (SQLite file and PostgreSQL URL
through `--store`, and the daemon's API through `--url`): conversations with their session-level results and their
turns' trace ids, one conversation turn by turn with each verdict under the turn it names."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.cli import main
from tests.monitor.review.test_session_reader import seeded, tid
from tests.monitor.web.test_api_v1 import TOKEN, api
from tests.support.backends import Backend, sqlite_backend
from tests.support.session_rows import SessionRow, TurnRow, insert_session, insert_session_result

ODD_ID = "team a/conv 7"  # a space and a slash: URL-encoded on the way, read back whole
HOSTILE = "\x1b[2J\x1b[31mred\x07 alert\nnext"


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "postgres":
        backend = Backend("postgres", request.getfixturevalue("postgres_url"))
    else:
        backend = sqlite_backend(tmp_path)
    now, _ = seeded(backend)
    odd = SessionRow(ODD_ID, [TurnRow(tid(50), now - 300, HOSTILE, "ok")], completed_at=now - 200, failed=1)
    insert_session(backend, odd)
    insert_session_result(backend, odd, "user_frustration", 0, now - 200, "the user is upset", turn=1)
    yield backend.location


@pytest.fixture(autouse=True)
def no_token_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_MONITOR_API_TOKEN", raising=False)


def review(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["review", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.integration
def test_level_session_lists_failing_conversations_with_results_and_trace_ids(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = review(capsys, "--store", store, "--level", "session")
    assert (code, err) == (0, "")
    header, *rows = out.splitlines()
    assert header.split() == ["COMPLETED", "SESSION", "SERVICE", "TURNS", "ENDED", "RESULTS", "TRACES"]
    assert len(rows) == 2 and "conv-rephrase" in rows[0] and ODD_ID in rows[1]  # failing ones, newest first
    assert "user_rephrase:fail@2, human_handoff_request:fail@3, conversation_completion:pass" in rows[0]
    assert rows[0].endswith(f"{tid(1)} {tid(2)} {tid(3)}")

    code, out, _ = review(capsys, "--store", store, "--level", "session", "--outcome", "any", "--service", "faq-bot")
    assert code == 0 and [line.split()[1] for line in out.splitlines()[1:]] == ["conv-clean"]
    code, out, _ = review(capsys, "--store", store, "--level", "session", "--evaluator", "user_frustration")
    assert code == 0 and len(out.splitlines()) == 2 and ODD_ID in out


def test_session_prints_the_conversation_with_verdicts(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = review(capsys, "--store", store, "--session", "conv-rephrase")
    assert (code, err) == (0, "")
    text = out.split("\n\n")
    assert text[0].startswith("session conv-rephrase  service support-bot  id from session.id")
    assert text[1].splitlines() == ["conversation:", "  [pass] conversation_completion: resolved by handoff"]
    second = text[3].splitlines()
    assert second[0].startswith(f"turn 2  trace {tid(2)}")
    assert second[1:] == [
        "  user:  I asked where order 42 IS",
        "  tools: lookup_order",
        "  error: tool lookup_order: HTTP 503",
        "  agent: (none)",
        "  [fail] user_rephrase: the user asked again",
    ]
    assert text[4].splitlines()[-1] == "  [fail] human_handoff_request: asked for a human"

    code, out, _ = review(capsys, "--store", store, "--session", ODD_ID)
    assert code == 0 and out.startswith(f"session {ODD_ID}")
    assert "\x1b" not in out and "\x07" not in out and "[fail] user_frustration" in out
    code, out, err = review(capsys, "--store", store, "--session", "nope")
    assert (code, out) == (1, "") and err.startswith("agent-monitor review: 404: unknown session 'nope'")


@pytest.mark.integration
def test_through_the_api_as_through_the_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    backend = sqlite_backend(tmp_path)
    now, _ = seeded(backend)
    odd = SessionRow(ODD_ID, [TurnRow(tid(50), now - 300)], completed_at=now - 200)
    insert_session(backend, odd)
    reader = backend.reader()
    try:
        with api(reader, token=TOKEN) as base:
            for args in (
                ["--level", "session", "--outcome", "any"],
                ["--session", "conv-rephrase"],
                ["--session", ODD_ID],
            ):
                code, over_http, err = review(capsys, "--url", base, "--token", TOKEN, *args)
                assert (code, err) == (0, ""), args
                assert review(capsys, "--store", backend.location, *args)[1] == over_http, args
            code, out, _ = review(capsys, "--url", base, "--token", TOKEN, "--session", ODD_ID, "--json")
            assert code == 0 and f'"session_id": "{ODD_ID}"' in out
    finally:
        reader.close()  # type: ignore[attr-defined]


def test_trace_names_the_conversation_it_is_a_turn_of(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = review(capsys, "--store", store, "--trace", tid(2))
    assert (code, err) == (0, "")
    assert "  session: conv-rephrase" in out.splitlines()
    code, out, _ = review(capsys, "--store", store, "--trace", tid(50))
    assert code == 0 and "  session: team a/conv 7" in out.splitlines()


def test_bad_arguments_are_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    backend = sqlite_backend(tmp_path)
    seeded(backend)
    store = backend.location
    cases = [
        (["--level", "trace"], "--level must be one of session, got 'trace'"),
        (["--level", "session", "--variant", "1.5"], "--level session takes no --variant"),
        (["--level", "session", "--outcome", "pass"], "--level session takes --outcome fail (the default) or any"),
        (["--session", "conv-clean", "--since", "1h"], "--session takes no --since"),
        (["--level", "session", "--limit", "900"], "400: limit must be from 1 to 200, got 900"),
    ]
    for args, message in cases:
        code, out, err = review(capsys, "--store", store, *args)
        assert (code, out) == (2, ""), args
        assert err == f"agent-monitor review: {message}\n", (args, err)
