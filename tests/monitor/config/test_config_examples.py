"""The commented evaluators examples in the embedded default config are valid and name real builtins."""

from __future__ import annotations

import re
from importlib.resources import files

from monitor.config import EvaluatorSet, MonitorConfig, load_config
from monitor.engine.configured import ConfiguredEvaluator
from monitor.engine.evaluator_setup import build_evaluators, instantiate


def configured_evaluators(config: MonitorConfig) -> list[ConfiguredEvaluator]:
    """The evaluators `config` runs, as the daemon builds them (none fails to build)."""
    built, problems = build_evaluators(config.evaluator_entries())
    assert not problems
    return built


def _examples(tmp_path):
    """Each commented `# evaluators:` block of default_config.yaml, loaded as a config."""
    text = files("monitor").joinpath("default_config.yaml").read_text()
    blocks = re.findall(r"# evaluators:\n((?:#   .*\n)+)", text)
    configs = []
    for index, block in enumerate(blocks):
        example = tmp_path / f"example{index}.yaml"
        example.write_text("evaluators:\n" + "".join(line[2:] + "\n" for line in block.splitlines()))
        configs.append(load_config(example, env={}))
    return configs


def test_commented_evaluators_examples_load_and_name_real_builtins(tmp_path):
    listed, mapping = _examples(tmp_path)
    builtins = [e for e in listed.evaluators if e.name]
    assert [instantiate(e).name for e in builtins] == ["latency", "tool_success_rate"]
    assert instantiate(builtins[0]).params["max_latency_ms"] == 10000

    assert isinstance(mapping.evaluators, EvaluatorSet)
    built = {c.label: c for c in configured_evaluators(mapping)}
    assert "refusal" not in built and "error_free" in built
    assert built["latency"].evaluator.params["max_latency_ms"] == 10000
    assert built["latency"].entry.alert.severity == "critical"
    assert built["pii_leak"].sampling == 0.25
    assert built["prohibited_content"].evaluator.params["strings"] == ["BEGIN PRIVATE KEY"]
    assert built["tool_success_rate_strict"].evaluator.threshold == 0.99


def test_default_config_runs_every_rule_builtin_that_needs_no_ground_truth_nor_config():
    labels = {c.label for c in configured_evaluators(load_config(None, env={}))}
    assert {"error_free", "latency", "tool_success_rate", "pii_leak", "finish_reason"} <= labels
    assert not labels & {"exact_match", "tool_trajectory", "precision_at_k"}
    assert "prohibited_content" not in labels  # it cannot score until strings or patterns are configured
