"""`agent-monitor review` against a real API server on 127.0.0.1 (the in-memory reader behind it), and
through `--store` with the store factory."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.review import open_reader
from monitor.review.models import ResultFilter
from monitor.store.sqlite import ResultStore
from monitor.web.app import build_api_app
from tests.monitor.web.test_api_v1 import TOKEN, TRACE, evaluators
from tests.support.fake_reader import FakeReader, item, trace_detail
from tests.support.ports import closed_port
from tests.support.store_builders import outcome, row
from tests.support.threaded_server import get, serve

HOSTILE = "\x1b[2J\x1b[31mred\x07 alert\nnext\u202eline\x9b6n"


def make_reader() -> FakeReader:
    reader = FakeReader(items=[item(n) for n in range(1, 24)])
    reader.items.append(item(24, explanation=HOSTILE, service="svc\x1b]0;owned\x07", agent="planner"))
    reader.items.append(item(30, trace_id=TRACE, outcome="skip", score=None, skip_reason="needs_ground_truth"))
    reader.traces[TRACE] = trace_detail(TRACE, [reader.items[-1], item(31, trace_id=TRACE, agent="planner")])
    return reader


@pytest.fixture
def reader() -> FakeReader:
    return make_reader()


@pytest.fixture
def base(reader: FakeReader) -> Iterator[str]:
    app = build_api_app(lambda a: (b"", "text/plain"), dict, TOKEN, reader=reader, evaluators_info=evaluators)
    with serve(app) as url:
        yield url


@pytest.fixture(autouse=True)
def no_token_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_MONITOR_API_TOKEN", raising=False)


def review(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["review", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.integration
def test_results_table_newest_first_with_every_filter_sent_to_the_server(
    base: str, reader: FakeReader, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = review(
        capsys,
        *("--url", base, "--token", TOKEN, "--evaluator", "error_free", "--service", "checkout"),
        *("--agent", "", "--outcome", "fail", "--since", "1700000010", "--until", "2023-11-14T22:13:40Z"),
        *("--limit", "3"),
    )
    assert (code, err) == (0, "")
    where, limit, _ = reader.calls[-1][1]
    assert where == ResultFilter(
        evaluator="error_free", service="checkout", outcome="fail", since=1_700_000_010.0, until=1_700_000_020.0
    )
    assert limit == 3
    header, *rows, footer = out.splitlines()
    assert header.split() == ["TIME", "EVALUATOR", "OUTCOME", "SCORE", "SERVICE", "AGENT", "TRACE", "EXPLANATION"]
    assert [row.split()[6] for row in rows] == [f"{n:032x}" for n in (19, 18, 17)]
    assert rows[0].split()[:6] == ["2023-11-14T22:13:39Z", "error_free", "fail", "0.00", "checkout", "-"]
    assert all(row.index(f"{n:032x}") == header.index("TRACE") for row, n in zip(rows, (19, 18, 17)))
    assert footer.startswith("(3 shown; more match")


@pytest.mark.integration
def test_json_is_the_api_json(base: str, capsys: pytest.CaptureFixture[str]) -> None:
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    cases = [
        (["--outcome", "fail", "--limit", "4"], "results?" + urllib.parse.urlencode({"outcome": "fail", "limit": 4})),
        (["--trace", TRACE], f"traces/{TRACE}"),
        (["--by", "agent", "--evaluator", "error_free"], "breakdown?by=agent&evaluator=error_free"),
        (["--evaluators"], "evaluators"),
    ]
    for args, path in cases:
        code, out, _ = review(capsys, "--url", base, "--token", TOKEN, "--json", *args)
        assert code == 0, args
        assert json.loads(out) == get(f"{base}/api/v1/{path}", bearer)[2], args
        assert "\x1b" not in out


@pytest.mark.integration
def test_trace_shows_summary_step_tree_and_every_result(base: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = review(capsys, "--url", base, "--token", TOKEN, "--trace", TRACE.upper())
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"trace {TRACE}  service=checkout  spans=3  1250ms")
    assert "  input:  where is my order?" in lines
    assert "  └─ agent planner  1250ms" in lines
    assert '     └─ llm gpt-4o  120→30 tok  800ms  "calling lookup"' in lines
    assert '        └─ tool lookup  {"order": 7} → null  40ms  ERROR timeout talking to orders-db' in lines
    table = lines[lines.index("") + 1 :]
    assert table[0].split() == ["EVALUATOR", "LEVEL", "OUTCOME", "SCORE", "AGENT", "MODEL", "EXPLANATION"]
    assert [r.split()[2] for r in table[1:]] == ["skip", "fail"]
    assert "skipped: needs_ground_truth" in table[1]


@pytest.mark.integration
def test_breakdown_and_evaluators_tables(base: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = review(capsys, "--url", base, "--token", TOKEN, "--by", "service", "--since", "1700000001")
    assert code == 0
    head, columns, *rows = out.splitlines()
    assert head == "results by service (all evaluators, from 2023-11-14T22:13:21Z to now)"
    assert columns.split() == ["SERVICE", "PASSED", "FAILED", "SKIPPED", "PASS", "RATIO"]
    assert rows[0].split() == ["checkout", "0", "23", "1", "0.000"]  # most failures first
    code, out, _ = review(capsys, "--url", base, "--token", TOKEN, "--evaluators")
    assert code == 0
    columns, row = out.splitlines()
    assert columns.split()[:8] == ["EVALUATOR", "KIND", "LEVEL", "THRESHOLD", "SAMPLING", "ALERT", "STATE", "SLO"]
    assert "PASS 5m" in columns
    settings = ["error_free", "rule", "trace", "0.50", "1", "<", "0.9", "over", "5m", "firing", "-"]
    assert row.split() == [*settings, "0.250", "(4)"]


@pytest.mark.integration
def test_text_from_traces_is_printed_without_control_characters(base: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = review(capsys, "--url", base, "--token", TOKEN, "--limit", "20")
    assert code == 0
    assert not any(ch in out for ch in "\x1b\x07\x9b\u202e")
    row = next(line for line in out.splitlines() if f"{24:032x}" in line)
    assert "[2J [31mred alert next line 6n" in row  # escape sequences broken up, one line
    assert "svc ]0;owned" in row
    code, out, _ = review(capsys, "--url", base, "--token", TOKEN, "--json", "--limit", "20")
    assert not any(ch in out for ch in "\x1b\x07\x9b\u202e") and "\\u001b[2J" in out


@pytest.mark.integration
def test_errors_are_one_line_with_exit_status(
    base: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = [
        (["--url", f"http://127.0.0.1:{closed_port()}"], 1, "cannot reach http://127.0.0.1:"),
        (["--url", base], 1, "401 unauthorized: pass --token or set $AGENT_MONITOR_API_TOKEN"),
        (["--url", base, "--token", "wrong"], 1, "401 unauthorized: the token was refused"),
        (["--url", base, "--token", TOKEN, "--trace", "cd" * 16], 1, f"404: unknown trace {'cd' * 16}"),
        (["--url", base, "--token", TOKEN, "--trace", "nope"], 2, "400: trace id must be 32 hex characters"),
        (["--url", base, "--token", TOKEN, "--since", "yesterday"], 2, "--since: invalid time 'yesterday'"),
        (["--url", base, "--token", TOKEN, "--outcome", "bad"], 2, "400: outcome must be one of pass, fail, skip"),
        (["--url", base, "--token", TOKEN, "--limit", "900"], 2, "400: limit must be from 1 to 500, got 900"),
        (["--url", base, "--token", TOKEN, "--by", "region"], 2, "400: by must be one of service"),
        (["--url", base, "--by", "agent", "--service", "x"], 2, "--by takes no --service"),
        (["--url", base, "--trace", TRACE, "--limit", "3"], 2, "--trace takes no --limit"),
        (["--url", "ftp://127.0.0.1:1"], 2, "--url must be an http:// or https:// URL"),
        (["--url", base + "/metrics-port-typo", "--token", TOKEN], 1, "404: not found"),
    ]
    for args, status, message in cases:
        code, out, err = review(capsys, *args)
        assert (code, out) == (status, ""), args
        assert err.startswith(f"agent-monitor review: {message}"), (args, err)
        assert err.count("\n") == 1, err
    monkeypatch.setenv("AGENT_MONITOR_API_TOKEN", TOKEN)
    assert review(capsys, "--url", base, "--limit", "1")[0] == 0


@pytest.mark.integration
def test_unavailable_store_is_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    app = build_api_app(lambda a: (b"", "text/plain"), dict, None, reader=None, evaluators_info=evaluators)
    with serve(app) as url:
        code, out, err = review(capsys, "--url", url)
        assert (code, out) == (1, "")
        assert (
            err
            == "agent-monitor review: 503: review unavailable: the result store is disabled (store.enabled: false)\n"
        )
        assert review(capsys, "--url", url, "--evaluators")[0] == 0


def test_store_file_that_is_not_a_store_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = review(capsys, "--store", str(tmp_path / "missing.db"))
    assert (code, err) == (1, f"agent-monitor review: no such store file: {tmp_path / 'missing.db'}\n")
    (tmp_path / "r.db").write_bytes(b"not a database")
    code, _, err = review(capsys, "--store", str(tmp_path / "r.db"))
    assert code == 1
    assert err == f"agent-monitor review: the result store {tmp_path / 'r.db'} cannot be read: file is not a database\n"


def test_store_file_written_by_the_store_is_read_directly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--store FILE` reads a real store file (as the daemon writes it), read-only, with the same tables."""
    path = tmp_path / "results.db"
    store = ResultStore(path)
    store.write(
        [
            outcome("ab" * 16, row("error_free", False, explanation="tool search failed"), service="payments"),
            outcome("cd" * 16, row("error_free", True), service="search"),
        ]
    )
    store.close()
    code, out, err = review(capsys, "--store", str(path), "--outcome", "fail")
    assert (code, err) == (0, "")
    assert "ab" * 16 in out and "tool search failed" in out and "cd" * 16 not in out
    # without --outcome: the failing results, as the page and the runbooks say; --outcome any: all of them
    assert review(capsys, "--store", str(path))[1] == out
    code, every, _ = review(capsys, "--store", str(path), "--outcome", "any")
    assert code == 0 and "ab" * 16 in every and "cd" * 16 in every
    code, out, _ = review(capsys, "--store", str(path), "--by", "service", "--json")
    groups = {g["value"]: (g["passed"], g["failed"]) for g in json.loads(out)["groups"]}
    assert code == 0 and groups == {"payments": (0, 1), "search": (1, 0)}
    code, out, _ = review(capsys, "--store", str(path), "--trace", "ab" * 16)
    assert code == 0 and "tool search failed" in out


@pytest.mark.integration
def test_variant_filters_and_shows_in_the_tables(
    base: str, reader: FakeReader, capsys: pytest.CaptureFixture[str]
) -> None:
    reader.items += [item(41, variant="1.5.0"), item(42, variant="1.4.2", outcome="pass", score=1.0)]
    url = ("--url", base, "--token", TOKEN)
    code, out, err = review(capsys, *url, "--variant", "1.5.0")
    assert (code, err) == (0, "")
    assert reader.calls[-1][1][0] == ResultFilter(variant="1.5.0", outcome="fail")
    header, *rows = out.splitlines()
    assert header.split() == ["TIME", "EVALUATOR", "OUTCOME", "SCORE", "SERVICE", "VARIANT", "AGENT", "TRACE",
                              "EXPLANATION"]  # fmt: skip
    assert [r.split()[5:7] for r in rows] == [["1.5.0", "-"]]
    code, out, _ = review(capsys, *url, "--limit", "3", "--outcome", "any")
    assert [r.split()[5] for r in out.splitlines()[1:4]] == ["1.4.2", "1.5.0", "-"]  # "-": no variant
    code, out, _ = review(capsys, *url, "--by", "variant", "--variant", "1.4.2", "--evaluator", "error_free")
    assert code == 0 and reader.calls[-1] == ("breakdown", ("variant", "error_free", None, None, "1.4.2"))
    head, columns, *groups = out.splitlines()
    assert head == "results by variant (evaluator error_free, variant 1.4.2, everything stored)"
    assert columns.split()[0] == "VARIANT" and [g.split() for g in groups] == [["1.4.2", "1", "0", "0", "1.000"]]
    code, _, err = review(capsys, *url, "--trace", TRACE, "--variant", "1.5.0")
    assert code == 2 and "--trace takes no --variant" in err


def test_store_file_variants_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "results.db"
    store = ResultStore(path)
    store.write(
        [
            outcome("ab" * 16, row("error_free", False), variant="2.0.0-canary"),
            outcome("cd" * 16, row("error_free", False), row("latency", True)),
        ]
    )
    store.close()
    code, out, _ = review(capsys, "--store", str(path), "--variant", "2.0.0-canary", "--json", "--outcome", "fail")
    assert code == 0 and [(i["trace_id"], i["variant"]) for i in json.loads(out)["items"]] == [
        ("ab" * 16, "2.0.0-canary")
    ]
    code, out, _ = review(capsys, "--store", str(path), "--by", "variant", "--json")
    groups = {g["value"]: (g["passed"], g["failed"]) for g in json.loads(out)["groups"]}
    assert code == 0 and groups == {"2.0.0-canary": (0, 1), "": (1, 1)}
    code, out, _ = review(capsys, "--store", str(path), "--trace", "ab" * 16)
    assert code == 0 and out.startswith(f"trace {'ab' * 16}  service=svc  variant=2.0.0-canary  spans=3")


@pytest.mark.integration
def test_store_source_answers_as_the_api_through_the_same_service(
    base: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With the factory giving a reader, `--store` prints exactly what `--url` prints for the same data."""
    opened: list[str] = []

    def open_fake(path: str) -> FakeReader:
        opened.append(path)
        return make_reader()

    monkeypatch.setattr(open_reader, "open_store_reader", open_fake)
    (tmp_path / "r.db").write_bytes(b"")
    store = ("--store", str(tmp_path / "r.db"))
    url = ("--url", base, "--token", TOKEN)
    for args in (
        ("--outcome", "fail", "--limit", "5", "--since", "1700000003"),
        ("--trace", TRACE),
        ("--by", "tool"),
        ("--json", "--limit", "2"),
        ("--trace", "cd" * 16),
    ):
        assert review(capsys, *store, *args) == review(capsys, *url, *args), args
    assert opened == [str(tmp_path / "r.db")] * 5
    code, _, err = review(capsys, *store, "--evaluators")
    assert code == 2 and "--evaluators needs the daemon (--url)" in err


def test_long_explanations_are_cut_at_a_boundary_and_whole_in_the_trace_view(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "results.db"
    explanation = (
        'get_weather called with arguments {"city": "Paris", "units": "metric", "days": 5, "hourly": true} that do '
        "not match its schema: days must be at most 3"
    )
    store = ResultStore(path)
    store.write([outcome("ab" * 16, row("tool_arguments_valid", False, explanation=explanation))])
    store.close()
    code, out, _ = review(capsys, "--store", str(path))
    [shown] = [line.split("ab" * 16, 1)[1].strip() for line in out.splitlines()[1:]]
    assert code == 0 and shown == "get_weather called with arguments…"  # not inside the JSON
    code, out, _ = review(capsys, "--store", str(path), "--trace", "ab" * 16)
    assert code == 0 and explanation in out
