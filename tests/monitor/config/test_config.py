"""The daemon config: embedded default, validation with line numbers, env overrides, check-config."""

from __future__ import annotations

import argparse
import os
import textwrap
from importlib import resources
from pathlib import Path
from typing import get_origin

import pytest
import yaml
from pydantic import BaseModel

from evaluators.judges import DEFAULT_MODEL
from evaluators.pricing import table_description
from monitor.commands import check_config
from monitor.config import (
    AlertConfig,
    ConfigError,
    EvaluatorEntry,
    MonitorConfig,
    load_config,
    parse_duration,
    parse_size,
)
from monitor.config.alerting import DEFAULT_MIN_PASS_RATIOS

FULL = """\
receivers:
  grpc: {enabled: false, host: 127.0.0.1, port: 14317, max_message_bytes: 4MiB}
  http: {enabled: true, host: 127.0.0.2, port: 14318, max_body_bytes: 1048576}
  tls: {cert_file: CERT, key_file: KEY}
  auth: {bearer_token: s3cret}
assembly:
  quiet_period: 250ms
  max_trace_wait: 1m
  max_pending_spans: 1000
  max_spans_per_trace: 100
  evaluated_trace_memory: 50
  late_span_window: 1h
evaluation: {queue_size: 10, timeout: 2s, mode: experiment, workers: 3}
evaluators:
  - name: tool_error_rate
    params: {max_errors: 2}
    threshold: 0.8
    sampling: 0.5
    alert: {min_pass_ratio: 0.9, window: 10m, for: 2m, min_samples: 5, severity: critical}
  - name: tool_error_rate
    id: tool_error_rate_strict
    enabled: false
  - module: "mypkg.checks:tone"
metrics:
  host: 127.0.0.1
  port: 19464
  windows: [1m, 15m, 90]
  window_sample_cap: 500
  label_value_cap: 7
  score_buckets: [0.5, 1.0]
  duration_buckets: [1, 10]
store: {enabled: false, path: /tmp/x.db, retention: 2d, max_size: 64MiB, results: failing, max_steps: 20,
        url: "postgresql://u@db/x", pool_size: 2, connect_timeout: 2s, statement_timeout: 3s, lock_timeout: 1s,
        poll_lease: 10s, reopen_interval: 4s}
judges:
  gemini_api_key: KEY123
  vertex_project: proj
  vertex_location: europe-west4
  model: gemini-2.5-pro
  base_url: http://localhost:8080
  max_concurrency: 2
logging: {level: debug, format: json, per_span_problem_rate: 0}
shutdown: {grace_period: 5s}
"""


def write(tmp_path: Path, text: str, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def problems(path: Path | None, env: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_config(path, env=env or {})
    assert str(caught.value) == "\n".join(caught.value.problems)
    return caught.value.problems


@pytest.fixture
def full_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "CERT").write_text("cert")
    (tmp_path / "KEY").write_text("key")
    return write(tmp_path, FULL)


# --- defaults ---------------------------------------------------------------------------------


def test_embedded_default_has_the_documented_defaults() -> None:
    config = load_config(env={})
    assert config == MonitorConfig()
    r = config.receivers
    assert (r.grpc.enabled, r.grpc.host, r.grpc.port, r.grpc.max_message_bytes) == (True, "0.0.0.0", 4317, 16 << 20)
    assert (r.http.enabled, r.http.host, r.http.port, r.http.max_body_bytes) == (True, "0.0.0.0", 4318, 16 << 20)
    assert not r.tls.enabled and r.auth.token() is None
    a = config.assembly
    assert (a.quiet_period, a.max_trace_wait, a.late_span_window) == (5.0, 120.0, 600.0)
    assert (a.max_pending_spans, a.max_spans_per_trace, a.evaluated_trace_memory) == (500_000, 10_000, 100_000)
    e = config.evaluation
    assert (e.queue_size, e.timeout, e.mode, e.workers) == (256, 30.0, "monitor", "auto")
    assert e.worker_count() >= 1
    assert config.evaluators is None
    m = config.metrics
    assert (m.host, m.port, m.window_sample_cap, m.label_value_cap) == ("0.0.0.0", 9464, 10_000, 50)
    assert [(w.label, w.seconds) for w in m.windows] == [("5m", 300.0), ("1h", 3600.0)]
    assert m.score_buckets == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.99, 1.0]
    assert m.duration_buckets == [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300]
    assert (config.store.enabled, config.store.path, config.store.retention) == (True, "data/results.db", 7 * 86400.0)
    j = config.judges
    assert (j.gemini_api_key, j.vertex_project, j.vertex_location) == (None, None, "us-central1")
    assert (j.model, j.base_url, j.max_concurrency, j.enabled) == (DEFAULT_MODEL, None, 4, False)
    assert (config.logging.level, config.logging.format, config.logging.per_span_problem_rate) == ("INFO", "text", 10)
    assert config.shutdown.grace_period == 30.0


def _keys(model: type[BaseModel], data: dict, prefix: str = "") -> set[str]:
    found = set()
    for name, info in model.model_fields.items():
        key = info.alias or name
        found.add(prefix + key)
        sub = info.annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel) and isinstance(data.get(key), dict):
            found |= _keys(sub, data[key], f"{prefix}{key}.")
        elif get_origin(sub) is dict and isinstance(data.get(key), dict):  # a mapping's own keys
            found |= {f"{prefix}{key}.{name}" for name in data[key]}
    return found


def _yaml_keys(data: dict, prefix: str = "") -> set[str]:
    found = set()
    for key, value in data.items():
        found.add(prefix + key)
        if isinstance(value, dict):
            found |= _yaml_keys(value, f"{prefix}{key}.")
    return found


def test_embedded_default_spells_out_every_key() -> None:
    text = resources.files("monitor").joinpath("default_config.yaml").read_text("utf-8")
    data = yaml.safe_load(text)
    assert _yaml_keys(data) == _keys(MonitorConfig, data)
    for word in ("min_pass_ratio", "for:", "severity", "module:", "id:", "AGENT_MONITOR_"):
        assert word in text  # the commented evaluator example documents the entry keys


def test_empty_file_and_empty_sections_mean_defaults(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, ""), env={}) == MonitorConfig()
    assert load_config(write(tmp_path, "receivers:\nmetrics:\n  windows: [1m]\n"), env={}).receivers.grpc.port == 4317


# --- full file --------------------------------------------------------------------------------


def test_full_file_loads_every_value_and_round_trips(full_config: Path, tmp_path: Path) -> None:
    config = load_config(full_config, env={})
    r = config.receivers
    assert (r.grpc.enabled, r.grpc.host, r.grpc.port, r.grpc.max_message_bytes) == (False, "127.0.0.1", 14317, 4 << 20)
    assert (r.http.host, r.http.port, r.http.max_body_bytes) == ("127.0.0.2", 14318, 1 << 20)
    assert r.tls.enabled and (r.tls.cert_file, r.tls.key_file) == ("CERT", "KEY")
    assert r.auth.token() == "s3cret"
    a = config.assembly
    assert (a.quiet_period, a.max_trace_wait, a.late_span_window) == (0.25, 60.0, 3600.0)
    assert (a.max_pending_spans, a.max_spans_per_trace, a.evaluated_trace_memory) == (1000, 100, 50)
    assert config.evaluation.model_dump() == {"queue_size": 10, "timeout": 2.0, "mode": "experiment", "workers": 3}
    first, second, third = config.evaluators or []
    assert (first.name, first.params, first.threshold, first.sampling, first.label) == (
        "tool_error_rate",
        {"max_errors": 2},
        0.8,
        0.5,
        "tool_error_rate",
    )
    assert first.alert == AlertConfig(min_pass_ratio=0.9, window=600, for_=120, min_samples=5, severity="critical")
    assert (second.label, second.enabled, second.alert) == ("tool_error_rate_strict", False, None)
    assert (third.module, third.name, third.label) == ("mypkg.checks:tone", None, "mypkg.checks:tone")
    m = config.metrics
    assert [(w.label, w.seconds) for w in m.windows] == [("1m", 60.0), ("15m", 900.0), ("90s", 90.0)]
    assert (m.host, m.port, m.window_sample_cap, m.label_value_cap) == ("127.0.0.1", 19464, 500, 7)
    assert (m.score_buckets, m.duration_buckets) == ([0.5, 1.0], [1.0, 10.0])
    assert config.store.model_dump() == {
        "enabled": False,
        "path": "/tmp/x.db",
        "retention": 2 * 86400.0,
        "max_size": 64 * 1024 * 1024,
        "results": "failing",
        "max_steps": 20,
        "url": "postgresql://u@db/x",
        "pool_size": 2,
        "connect_timeout": 2.0,
        "statement_timeout": 3.0,
        "lock_timeout": 1.0,
        "poll_lease": 10.0,
        "reopen_interval": 4.0,
    }
    j = config.judges
    assert (j.gemini_api_key, j.vertex_project, j.vertex_location, j.model) == (
        "KEY123",
        "proj",
        "europe-west4",
        "gemini-2.5-pro",
    )
    assert (j.base_url, j.max_concurrency, j.enabled) == ("http://localhost:8080", 2, True)
    assert config.logging.model_dump() == {"level": "DEBUG", "format": "json", "per_span_problem_rate": 0}
    assert config.shutdown.grace_period == 5.0
    dumped = config.to_dict()
    assert dumped["evaluators"][0]["alert"]["for"] == 120.0 and dumped["metrics"]["windows"] == ["1m", "15m", "90s"]
    again = write(tmp_path, yaml.safe_dump(dumped), "again.yaml")
    assert load_config(again, env={}) == config


# --- errors with line numbers -----------------------------------------------------------------


def test_unknown_key_names_the_field_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "receivers:\n  grpc:\n    port: 4317\n    prot: 1\nstorage: {}\n")
    found = problems(path)
    assert found[0].startswith(f"{path}:4: receivers.grpc.prot: unknown key (expected one of: enabled, host, port")
    assert found[1].startswith(f"{path}:5: storage: unknown key")
    assert len(found) == 2


def test_wrong_type_and_out_of_range_point_at_their_lines(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        metrics:
          port: 70000
        evaluation:
          queue_size: many
        evaluators:
          - name: a
          - name: b
            sampling: 0
            alert:
              min_pass_ratio: 2
        """,
    )
    found = problems(path)
    assert [p.split(": ")[0:2] for p in found] == [
        [f"{path}:2", "metrics.port"],
        [f"{path}:4", "evaluation.queue_size"],
        [f"{path}:8", "evaluators[1].sampling"],
        [f"{path}:10", "evaluators[1].alert.min_pass_ratio"],
    ]
    assert "less than or equal to 65535 (got 70000)" in found[0]
    assert "valid integer" in found[1] and "'many'" in found[1]


def test_missing_required_field_falls_back_to_parent_line(tmp_path: Path) -> None:
    path = write(tmp_path, "evaluators:\n  - name: a\n    alert:\n      window: 5m\n")
    assert problems(path) == [f"{path}:3: evaluators[0].alert.min_pass_ratio: required"]


def test_invalid_yaml_reports_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "receivers:\n  grpc: {port: 1\nmetrics: {}\n")
    (problem,) = problems(path)
    assert problem.startswith(f"{path}:3:8: invalid YAML")


def test_duplicate_yaml_key_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "store:\n  path: a.db\n  path: b.db\n")
    assert problems(path) == [f"{path}:3: store.path: duplicate key (first at line 2)"]


def test_unreadable_file_and_non_mapping(tmp_path: Path) -> None:
    assert problems(tmp_path / "missing.yaml")[0].endswith("cannot read: No such file or directory")
    assert problems(write(tmp_path, "- a\n"))[0].endswith(
        "the document must be a mapping of sections (receivers:, metrics:, …)"
    )


def test_quiet_period_must_be_below_max_trace_wait(tmp_path: Path) -> None:
    path = write(tmp_path, "assembly:\n  max_trace_wait: 10s\n  quiet_period: 10s\n")
    assert problems(path) == [f"{path}:3: assembly.quiet_period: must be less than max_trace_wait (10s)"]


def test_listeners_must_not_share_a_port(tmp_path: Path) -> None:
    path = write(tmp_path, "metrics:\n  port: 4317\n")
    assert problems(path) == [f"{path}:2: metrics.port: port 4317 is also used by receivers.grpc.port"]
    assert load_config(write(tmp_path, "metrics: {port: 4317}\nreceivers: {grpc: {enabled: false}}\n"), env={})


# --- durations and sizes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("250ms", 0.25), ("5s", 5), ("2m", 120), ("1h", 3600), ("7d", 604800), ("1h30m", 5400), (90, 90), ("1.5", 1.5)],
)
def test_durations_parse(text: object, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["5x", "m", "", "5 m m", True, None, "inf", float("nan")])
def test_bad_durations_are_rejected(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(bad)


def test_bad_duration_in_file_points_at_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "shutdown:\n  grace_period: soon\n")
    (problem,) = problems(path)
    assert problem.startswith(f"{path}:2: shutdown.grace_period: invalid duration 'soon'")


def test_sizes_parse() -> None:
    assert (parse_size("16MiB"), parse_size("512KiB"), parse_size("4MB"), parse_size(100)) == (
        16 << 20,
        512 << 10,
        4_000_000,
        100,
    )
    with pytest.raises(ValueError):
        parse_size("lots")


# --- environment overrides --------------------------------------------------------------------


def test_env_overrides_nested_fields_and_beats_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "receivers:\n  grpc:\n    port: 5000\nmetrics:\n  windows: [5m]\nstore:\n  enabled: true\n")
    env = {
        "AGENT_MONITOR_RECEIVERS__GRPC__PORT": "14317",
        "agent_monitor_metrics__windows": "[1m, 10m]",
        "AGENT_MONITOR_STORE__ENABLED": "false",
        "AGENT_MONITOR_RECEIVERS__AUTH__BEARER_TOKEN": "0123",
        "AGENT_MONITOR_CONFIG": "ignored: no section named config",
        "UNRELATED": "x",
    }
    config = load_config(path, env=env)
    assert config.receivers.grpc.port == 14317
    assert [(w.label, w.seconds) for w in config.metrics.windows] == [("1m", 60.0), ("10m", 600.0)]
    assert config.store.enabled is False
    assert config.receivers.auth.token() == "0123"  # string fields keep the text, not YAML's int


def test_env_can_set_a_whole_list_section(tmp_path: Path) -> None:
    config = load_config(None, env={"AGENT_MONITOR_EVALUATORS": "[{name: a}, {module: 'pkg.mod:b', sampling: 0.1}]"})
    assert [e.label for e in config.evaluators or []] == ["a", "pkg.mod:b"]


def test_unknown_env_field_is_an_error_naming_the_variable() -> None:
    found = problems(None, {"AGENT_MONITOR_RECEIVERS__GRPC__PROT": "1", "AGENT_MONITOR_STORE__PATH__X": "1"})
    assert found[0].startswith("env AGENT_MONITOR_RECEIVERS__GRPC__PROT: receivers.grpc.prot: unknown field")
    assert found[1] == "env AGENT_MONITOR_STORE__PATH__X: store.path.x: unknown field (store.path has no sub-fields)"


def test_invalid_env_value_names_the_variable_not_a_line(tmp_path: Path) -> None:
    path = write(tmp_path, "receivers:\n  http:\n    port: 4318\n")
    found = problems(path, {"AGENT_MONITOR_RECEIVERS__HTTP__PORT": "-1", "AGENT_MONITOR_ASSEMBLY__QUIET_PERIOD": "1y"})
    assert found[0].startswith("env AGENT_MONITOR_ASSEMBLY__QUIET_PERIOD: assembly.quiet_period: invalid duration")
    assert found[1].startswith("env AGENT_MONITOR_RECEIVERS__HTTP__PORT: receivers.http.port: input should be")


def test_judge_key_falls_back_to_gemini_then_google_env() -> None:
    assert load_config(None, env={"GOOGLE_API_KEY": "g", "GEMINI_API_KEY": "m"}).judges.gemini_api_key == "m"
    config = load_config(None, env={"GOOGLE_API_KEY": "google-key"})
    assert config.judges.gemini_api_key == "google-key" and config.judges.enabled
    assert "google-key" not in repr(config)
    assert load_config(None, env={}).judges.enabled is False


# --- receivers: tls and auth ------------------------------------------------------------------


def test_tls_half_set_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "cert.pem").write_text("x")
    path = write(tmp_path, f"receivers:\n  tls:\n    cert_file: {tmp_path / 'cert.pem'}\n")
    assert problems(path) == [f"{path}:2: receivers.tls.key_file: cert_file and key_file must be set together"]


def test_tls_files_must_exist(tmp_path: Path) -> None:
    path = write(tmp_path, f"receivers:\n  tls:\n    cert_file: {tmp_path / 'c'}\n    key_file: {tmp_path / 'k'}\n")
    found = problems(path)
    assert [p.split(": ")[:3] for p in found] == [
        [f"{path}:3", "receivers.tls.cert_file", "file not found"],
        [f"{path}:4", "receivers.tls.key_file", "file not found"],
    ]


def test_bearer_token_file_is_read_and_stripped(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("  tok-en\n")
    config = load_config(write(tmp_path, f"receivers:\n  auth:\n    bearer_token_file: {token}\n"), env={})
    assert config.receivers.auth.token() == "tok-en"


def test_bearer_token_sources_are_exclusive_and_checked(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("\n")
    both = write(tmp_path, f"receivers:\n  auth:\n    bearer_token: a\n    bearer_token_file: {token}\n", "both.yaml")
    assert problems(both) == [
        f"{both}:4: receivers.auth.bearer_token_file: set bearer_token or bearer_token_file, not both"
    ]
    empty = write(tmp_path, f"receivers:\n  auth:\n    bearer_token_file: {token}\n", "empty.yaml")
    assert problems(empty) == [f"{empty}:3: receivers.auth.bearer_token_file: {token} is empty"]
    missing = write(tmp_path, f"receivers:\n  auth:\n    bearer_token_file: {tmp_path / 'nope'}\n", "missing.yaml")
    assert "cannot read" in problems(missing)[0]


# --- evaluators -------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", ["{params: {}}", "{name: a, module: pkg.mod}"])
def test_evaluator_entry_needs_exactly_one_of_name_and_module(tmp_path: Path, entry: str) -> None:
    path = write(tmp_path, f"evaluators:\n  - {entry}\n")
    assert problems(path) == [
        f"{path}:2: evaluators[0]: set exactly one of name (a builtin evaluator) or module (e.g. mypkg.checks:tone)"
    ]


def test_evaluator_module_path_is_checked(tmp_path: Path) -> None:
    path = write(tmp_path, "evaluators:\n  - module: 'not a path'\n")
    assert problems(path)[0].startswith(f"{path}:2: evaluators[0].module: invalid module path")
    assert EvaluatorEntry(module="pkg.sub").label == "pkg.sub"


def test_duplicate_evaluator_names_error_unless_an_id_separates_them(tmp_path: Path) -> None:
    path = write(tmp_path, "evaluators:\n  - name: a\n  - name: b\n  - name: a\n    threshold: 0.5\n")
    (problem,) = problems(path)
    assert problem.startswith(f"{path}:4: evaluators[2].name: duplicate evaluator 'a' (also entry 0)")
    ok = write(tmp_path, "evaluators:\n  - name: a\n  - name: a\n    id: a_strict\n", "ok.yaml")
    assert [e.label for e in load_config(ok, env={}).evaluators or []] == ["a", "a_strict"]


def test_alert_for_is_the_yaml_key(tmp_path: Path) -> None:
    path = write(tmp_path, "evaluators:\n  - name: a\n    alert: {min_pass_ratio: 0.9, for: 1m}\n")
    alert = (load_config(path, env={}).evaluators or [])[0].alert
    assert alert is not None and (alert.for_, alert.window, alert.min_samples, alert.severity) == (
        60,
        300,
        20,
        "warning",
    )


# --- check-config -----------------------------------------------------------------------------


def _run(path: Path) -> int:
    return check_config.run(argparse.Namespace(path=str(path), no_env=True))


def test_check_config_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(
        tmp_path,
        "evaluators:\n  - name: latency\n  - name: error_free\n    enabled: false\nmetrics: {windows: [1m, 1h]}\n",
    )
    assert _run(path) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        f"{path}: OK",
        "receivers grpc :4317, http :4318; 1 evaluator (1 disabled); metrics :9464 windows 1m, 1h",
        f"prices: {table_description()}",
        "evaluators:",
        "  latency  builtin latency  threshold 1  sampling 1  alert -",
    ]
    assert err == ""
    assert _run(write(tmp_path, "", "empty.yaml")) == 0
    assert "default evaluator set" in capsys.readouterr().out


def test_check_config_says_where_judges_go_or_that_they_will_skip(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    judges = "evaluators:\n  - {name: latency}\n  - {name: safety, sampling: 0.1}\n"
    assert _run(write(tmp_path, judges)) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("judges: 1 configured but no GEMINI_API_KEY")
    keyed = judges + "judges: {gemini_api_key: sekrit-key-123, daily_token_budget: 5000, requests_per_minute: 0}\n"
    assert _run(write(tmp_path, keyed, "keyed.yaml")) == 0
    out = capsys.readouterr().out
    assert (
        out.splitlines()[-1] == f"judges: 1 on the Gemini API, model {DEFAULT_MODEL}; no rate limit, 5,000 tokens a day"
    )
    assert "sekrit" not in out  # the key itself is never printed


def test_check_config_invalid_exits_2_with_problems_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "metrics:\n  port: x\n  nope: 1\n")
    assert _run(path) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert lines[0].startswith(f"{path}:2: metrics.port:") and lines[1].startswith(
        f"{path}:3: metrics.nope: unknown key"
    )
    assert lines[2] == f"{path}: invalid (2 problems)"
    assert _run(tmp_path / "absent.yaml") == 2


def test_check_config_parser_sets_the_handler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parser = argparse.ArgumentParser()
    check_config.add_parser(parser.add_subparsers())
    args = parser.parse_args(["check-config", str(write(tmp_path, "store: {enabled: false}\n"))])
    monkeypatch.setenv("AGENT_MONITOR_STORE__ENABLED", "maybe")
    assert args.handler is check_config.run and args.handler(args) == 2
    assert check_config.run(parser.parse_args(["check-config", "--no-env", args.path])) == 0


# --- evaluators: the mapping form -------------------------------------------------------------

MAPPING = """\
evaluators:
  defaults: true
  remove: [refusal, pii_leak]
  override:
    latency:
      params: {max_latency_ms: 2500}
      threshold: 0.7
      alert: {min_pass_ratio: 0.95, for: 10m, severity: critical}
    error_free: {sampling: 0.5, enabled: true}
  add:
    - name: prohibited_content
      params: {strings: [hunter2]}
    - name: latency
      id: latency_strict
      params: {max_latency_ms: 500}
"""


def test_mapping_form_edits_the_default_set_without_restating_it(tmp_path: Path) -> None:
    from monitor.engine.evaluator_setup import build_evaluators, thresholds_of

    config = load_config(write(tmp_path, MAPPING), env={})
    defaults = [r.entry.label for r in load_config(None, env={}).evaluator_entries()]
    built, problems = build_evaluators(config.evaluator_entries())
    assert not problems
    labels = [c.label for c in built]
    assert labels == [n for n in defaults if n not in ("refusal", "pii_leak")] + [
        "prohibited_content",
        "latency_strict",
    ]
    by_label = {c.label: c for c in built}
    latency = by_label["latency"]
    assert latency.evaluator.params["max_latency_ms"] == 2500 and latency.evaluator.threshold == 0.7
    assert latency.entry.alert == AlertConfig(min_pass_ratio=0.95, for_=600, severity="critical")
    assert by_label["error_free"].sampling == 0.5
    assert by_label["tool_success_rate"].evaluator.params == by_label["tool_success_rate"].evaluator.info.config
    assert by_label["latency_strict"].evaluator.params["max_latency_ms"] == 500
    assert by_label["prohibited_content"].evaluator.params["strings"] == ["hunter2"]
    # latency's own alert, and the default alerts of the default-set evaluators without one (not latency_strict)
    assert set(thresholds_of(built)) == {"latency", *DEFAULT_MIN_PASS_RATIOS}
    assert by_label["error_free"].entry.alert == AlertConfig(
        min_pass_ratio=0.8, window=1800, for_=300, min_samples=50, severity="warning"
    )
    where = {r.entry.label: r.loc for r in config.evaluator_entries()}
    assert where["latency"] == ("evaluators", "override", "latency") and where["latency_strict"] == (
        "evaluators",
        "add",
        1,
    )
    again = write(tmp_path, yaml.safe_dump(config.to_dict()), "again.yaml")
    assert load_config(again, env={}) == config


def test_mapping_form_with_defaults_false_starts_from_nothing(tmp_path: Path) -> None:
    path = write(tmp_path, "evaluators:\n  defaults: false\n  add:\n    - name: latency\n")
    assert [r.entry.label for r in load_config(path, env={}).evaluator_entries()] == ["latency"]
    empty = write(tmp_path, "evaluators: {defaults: false}\n", "empty.yaml")
    assert load_config(empty, env={}).evaluator_entries() == []
    # an empty mapping, or one that only says `defaults: true`, is the default set
    same = write(tmp_path, "evaluators: {}\n", "same.yaml")
    assert load_config(same, env={}).evaluator_entries() == load_config(None, env={}).evaluator_entries()


def test_mapping_form_errors_are_located(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        evaluators:
          add:
            - name: latency
            - name: prohibited_content
            - name: prohibited_content
          override:
            latncy: {threshold: 0.5}
            tool_success_rate: {threshold: 0.9}
          remove: [tool_success_rate, nope]
        """,
    )
    assert [p.split(": ", 2)[:2] for p in problems(path)] == [
        [f"{path}:3", "evaluators.add[0].name"],
        [f"{path}:5", "evaluators.add[2].name"],
        [f"{path}:7", "evaluators.override.latncy"],
        [f"{path}:8", "evaluators.override.tool_success_rate"],
        [f"{path}:9", "evaluators.remove[1]"],
    ]
    found = "\n".join(problems(path))
    assert "duplicate evaluator 'latency': it is already in the default set" in found
    assert "duplicate evaluator 'prohibited_content' (also entry 1)" in found
    assert "'latncy' is not in the default set; did you mean 'latency'?" in found
    assert "'tool_success_rate' is also removed" in found
    assert "'nope' is not in the default set (abandonment, agent_efficiency, " in found


def test_mapping_form_rejects_unknown_keys_and_names_outside_an_empty_set(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "evaluators:\n  defaults: false\n  override:\n    latency:\n      name: other\n  extra: 1\n",
    )
    assert problems(path) == [
        f"{path}:5: evaluators.override.latency.name: unknown key "
        "(expected one of: params, threshold, sampling, enabled, alert, slo)",
        f"{path}:6: evaluators.extra: unknown key (expected one of: defaults, add, override, remove)",
    ]
    fixed = write(tmp_path, "evaluators:\n  defaults: false\n  remove: [latency]\n", "fixed.yaml")
    (problem,) = problems(fixed)
    assert problem.startswith(f"{fixed}:3: evaluators.remove[0]: 'latency' is not in the evaluator set: ")
    assert "`defaults: false` starts from an empty set" in problem
    scalar = write(tmp_path, "evaluators: all\n", "scalar.yaml")
    assert problems(scalar) == [
        f"{scalar}:1: evaluators: expected a list of evaluator entries, or a mapping of defaults, add, override "
        "and remove (got 'all')"
    ]


def test_mapping_form_from_the_environment() -> None:
    config = load_config(None, env={"AGENT_MONITOR_EVALUATORS__REMOVE": "[latency]"})
    labels = [r.entry.label for r in config.evaluator_entries()]
    assert "latency" not in labels and "error_free" in labels


def test_check_config_prints_the_resulting_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(write(tmp_path, MAPPING)) == 0
    out = capsys.readouterr().out.splitlines()
    assert "evaluators (the default set, 2 added, 2 overridden, 2 removed)" in out[1]
    rows = {line.split()[0]: line.split() for line in out[out.index("evaluators:") + 1 :]}
    assert "refusal" not in rows and "pii_leak" not in rows
    assert rows["latency"][:7] == ["latency", "builtin", "latency", "threshold", "0.7", "sampling", "1"]
    assert " ".join(rows["latency"][7:]) == "alert pass ratio < 0.95 over 5m for 10m (critical, min 20 samples)"
    assert " ".join(rows["error_free"][5:]) == (
        "sampling 0.5 alert pass ratio < 0.8 over 30m for 5m (warning, min 50 samples)"  # the default alert
    )
    assert " ".join(rows["latency_strict"][7:]) == "alert -"
    assert rows["latency_strict"][1:3] == ["builtin", "latency"]
    assert len(rows) == int(out[1].split("; ")[1].split()[0])


def test_default_set_leaves_out_builtins_that_need_config() -> None:
    from evaluators.sdk import builtin, default_builtins

    names = [info.name for info in default_builtins()]
    assert "prohibited_content" not in names and builtin("prohibited_content").info.needs_config
    assert {"latency", "error_free"} <= set(names)
    labels = [r.entry.label for r in load_config(None, env={}).evaluator_entries()]
    assert labels == names


def test_auto_workers_follow_a_cgroup_cpu_quota(tmp_path) -> None:
    from monitor.config.pipeline import usable_cpus

    affinity = len(os.sched_getaffinity(0))
    limit = tmp_path / "cpu.max"
    limit.write_text("max 100000\n")
    assert usable_cpus(limit) == affinity
    limit.write_text("50000 100000\n")  # half a CPU: one worker, in-process
    assert usable_cpus(limit) == 1
    limit.write_text(f"{(affinity + 8) * 100000} 100000\n")  # a quota above the mask does not add CPUs
    assert usable_cpus(limit) == affinity
    assert usable_cpus(tmp_path / "missing") == affinity


def test_store_url_is_a_postgresql_url_kept_out_of_reprs_and_messages(tmp_path: Path) -> None:
    url = "postgresql://agents:s3cret@db.internal:5432/monitor"
    config = load_config(write(tmp_path, f"store:\n  url: {url}\n  pool_size: 8\n"), env={})
    assert (config.store.url, config.store.pool_size) == (url, 8)
    assert config.store.location == "postgresql://agents:***@db.internal:5432/monitor"
    assert "s3cret" not in repr(config) and "s3cret" not in repr(config.store)
    env = {"AGENT_MONITOR_STORE__URL": "postgres://app@127.0.0.1/x"}  # a Kubernetes Secret as an env var
    assert load_config(write(tmp_path, ""), env=env).store.url == "postgres://app@127.0.0.1/x"
    path = write(tmp_path, "store:\n  url: mysql://root@db/monitor\n")
    [problem] = problems(path)
    assert problem.startswith(f"{path}:2: store.url: must be a PostgreSQL URL")
    path = write(tmp_path, "store:\n  url: 'postgresql://h/db?sslmode'\n")  # a parameter without its value
    [problem] = problems(path)
    assert problem.startswith(f"{path}:2: store.url: is not a valid PostgreSQL URL")
