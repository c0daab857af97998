"""`--since` / `--until` of every command go through one bounded parser (monitor/review/api_params.parse_time;
`review` and `signatures` check it before any request, monitor/commands/time_args.py): an overflowing duration is a
one-line usage error (exit 2), never a traceback (`poll` run with an otlp_files source)."""

from __future__ import annotations

import contextlib
import io

import pytest

from monitor.cli import main
from monitor.review.api_params import LATEST_TIME, BadRequest, parse_time

OVERFLOW = "99999999999999999999d"
COMMANDS = [
    ["calibrate", "--evaluator", "latency"],
    ["review", "--url", "http://127.0.0.1:9"],
    ["signatures", "--url", "http://127.0.0.1:9"],
    ["dataset", "export", "-o", "tasks.json"],
]


def run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
    return code, err.getvalue()


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]))
@pytest.mark.parametrize("value", [OVERFLOW, "9" * 200 + "d", "1e400"])
def test_an_overflowing_since_is_a_usage_error(command: list[str], value: str, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, err = run([*command, "--since", value])
    assert code == 2, err
    assert "--since:" in err and ("out of range" in err or "finite" in err) and err.count("\n") == 1, err


@pytest.mark.parametrize("command", [c for c in COMMANDS if c[0] in ("review", "signatures")])
def test_an_overflowing_until_is_a_usage_error(command: list[str], tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, err = run([*command, "--since", "1h", "--until", OVERFLOW])
    assert code == 2 and "--until:" in err and "out of range" in err


def test_the_parser_bounds_every_form() -> None:
    now = 1_700_000_000.0
    assert parse_time("since", "1h", now) == now - 3600
    assert parse_time("since", "2023-11-14T22:13:20Z", now) == now
    assert parse_time("since", "9999-12-31T23:59:59Z", now) == LATEST_TIME
    for text in (OVERFLOW, "100000d", "9" * 200 + "d", "1e400", "1" + "0" * 30):
        with pytest.raises(BadRequest):
            parse_time("since", text, now)


@pytest.mark.parametrize("option", ["--since", "--until"])
def test_poll_refuses_an_overflowing_time(option: str, tmp_path, monkeypatch) -> None:
    (tmp_path / "dumps").mkdir()
    config = tmp_path / "config.yaml"
    config.write_text(f"sources:\n  - {{name: files, type: otlp_files, directory: {tmp_path / 'dumps'}}}\n")
    monkeypatch.chdir(tmp_path)
    times = {"--since": "1h", "--until": "1m"} | {option: OVERFLOW}
    code, err = run(["poll", "--config", str(config), "--source", "files", *(x for kv in times.items() for x in kv)])
    assert code == 2 and f"{option}: '{OVERFLOW}' is out of range" in err and err.count("\n") == 1, err
