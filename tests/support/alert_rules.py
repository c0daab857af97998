"""Shared by the rule-generation tests: configs, rule lookup, and `promtool` (check and unit-test rules)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from monitor.alerting.rules import render, rule_groups
from monitor.config import MonitorConfig
from tests.integration.promstack import binary

# A config with every kind of rule: pass-ratio alerts, SLOs (30d and 7d), health alerts, selector, labels.
FULL: dict[str, Any] = {
    "evaluators": [
        {"name": "error_free", "alert": {"min_pass_ratio": 0.9, "window": "10m", "for": "5m", "min_samples": 20}},
        {"name": "latency", "slo": {"objective": 0.99}},
        {"name": "loop_detection", "slo": {"objective": 0.9, "period": "7d", "severity": "info"}},
        {"name": "refusal", "enabled": False, "alert": {"min_pass_ratio": 0.5}, "slo": {"objective": 0.9}},
    ],
    "alerting": {
        "selector": 'namespace="agents"',
        "group_interval": "30s",
        "labels": {"team": "ml"},
        "runbook_url_template": "https://runbooks.example/{alert}.md?evaluator={evaluator}&s={{ $labels.service }}",
        "traces_url_template": "https://monitor.example/api/failing?evaluator={evaluator}",
        "health": {"for": "5m", "severity": "critical", "refused_ratio": 0.05, "queue_depth": 200},
    },
}


def config(data: dict[str, Any] | None = None, **sections: Any) -> MonitorConfig:
    return MonitorConfig.model_validate({**(data or {}), **sections})


def rules(cfg: MonitorConfig) -> list[dict[str, Any]]:
    return [rule for group in rule_groups(cfg) for rule in group["rules"]]


def alerts(cfg: MonitorConfig, name: str) -> list[dict[str, Any]]:
    return [rule for rule in rules(cfg) if rule.get("alert") == name]


def promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [binary("promtool"), *args], capture_output=True, text=True, timeout=120, cwd=cwd, check=False
    )


def check_rules(path: Path) -> str:
    """`promtool check rules` (its lint included); fails the test with promtool's output."""
    result = promtool("check", "rules", str(path))
    assert result.returncode == 0, f"promtool check rules {path}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def write_rules(directory: Path, cfg: MonitorConfig, name: str = "rules.yml") -> Path:
    path = directory / name
    path.write_text(render(cfg), encoding="utf-8")
    return path


def run_rule_tests(directory: Path, cfg: MonitorConfig, tests: list[dict[str, Any]], interval: str = "1m") -> str:
    """Write the config's rules and a `promtool test rules` file with `tests`, run it; fails on any failure."""
    rules_path = write_rules(directory, cfg)
    test_path = directory / "rules_test.yml"
    document = {"rule_files": [rules_path.name], "evaluation_interval": interval, "tests": tests}
    test_path.write_text(yaml.safe_dump(document, sort_keys=False, width=10_000), encoding="utf-8")
    result = promtool("test", "rules", test_path.name, cwd=directory)
    assert result.returncode == 0, f"promtool test rules:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def cumulative(*segments: tuple[int, float], start: float = 0) -> str:
    """Counter values, one per interval: each (steps, increment) segment adds `increment` per step."""
    values = [start]
    for steps, increment in segments:
        for _ in range(steps):
            values.append(values[-1] + increment)
    return " ".join(f"{value:g}" for value in values)


def series(name: str, values: str, **labels: str) -> dict[str, str]:
    inner = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    return {"series": f"{name}{{{inner}}}", "values": values}


def alerts_sample(alertname: str, state: str = "firing", **labels: str) -> dict[str, Any]:
    """An expected sample of the ALERTS series (what /alerts shows): labels of the alert, value 1."""
    every = {"alertname": alertname, "alertstate": state, **labels}
    inner = ",".join(f'{key}="{value}"' for key, value in sorted(every.items()))
    return {"labels": f"ALERTS{{{inner}}}", "value": 1}
