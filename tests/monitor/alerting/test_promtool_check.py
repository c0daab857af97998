"""`promtool check rules` (syntax, PromQL, templates and its duplicate-rule lint) accepts every generated file."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from monitor.alerting.rules import render
from monitor.config import load_config
from tests.support.alert_rules import FULL, check_rules, config, write_rules

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
RULE_FILE = ROOT / "deploy" / "prometheus" / "rules" / "agent-monitor.rules.yml"
RESOURCE = ROOT / "deploy" / "kubernetes" / "prometheusrule.yaml"


def test_default_config(tmp_path: Path) -> None:
    # the default alerts of 7 default-set evaluators, the new-failure-signature alert, 8 health alerts, 3 spend
    # recording rules, 2 drift alerts
    assert "SUCCESS: 21 rules found" in check_rules(write_rules(tmp_path, load_config(None, env={})))


def test_deploy_rule_file() -> None:
    assert "SUCCESS: 50 rules found" in check_rules(RULE_FILE)


def test_deploy_prometheus_rule_resource(tmp_path: Path) -> None:
    spec = yaml.safe_load(RESOURCE.read_text(encoding="utf-8"))["spec"]
    path = tmp_path / "spec.yml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    assert "SUCCESS: 50 rules found" in check_rules(path)


def test_a_config_with_everything(tmp_path: Path) -> None:
    # 1 pass-ratio alert, 1 new-failure-signature alert, 2 SLOs of 8 error ratios + objective + budget + 4 alerts,
    # 8 health alerts, 3 spend recording rules, 2 drift alerts
    assert "SUCCESS: 43 rules found" in check_rules(write_rules(tmp_path, config(FULL)))


def test_nothing_to_alert_on(tmp_path: Path) -> None:
    off = {"default_alerts": {"enabled": False}, "health": {"enabled": False}}
    cfg = config(evaluators=[], alerting=off, drift={"enabled": False})
    path = tmp_path / "empty.yml"
    path.write_text(render(cfg), encoding="utf-8")
    assert "SUCCESS: 3 rules found" in check_rules(path)  # the spend recording rules only
