"""The commented evaluators example in the embedded default config is valid and names real builtins."""

from __future__ import annotations

import re
from importlib.resources import files

from monitor.config import load_config
from monitor.evaluator_setup import configured_evaluators, instantiate


def test_commented_evaluators_example_loads_and_names_real_builtins(tmp_path):
    text = files("monitor").joinpath("default_config.yaml").read_text()
    block = re.search(r"# evaluators:\n((?:#.*\n)+?)evaluators: null", text).group(1)
    example = tmp_path / "example.yaml"
    example.write_text("evaluators:\n" + "".join(line[2:] + "\n" for line in block.splitlines()))
    config = load_config(example, env={})
    builtins = [e for e in config.evaluators if e.name]
    assert [instantiate(e).name for e in builtins] == ["latency", "tool_success_rate"]
    assert instantiate(builtins[0]).params["max_latency_ms"] == 10000


def test_default_config_runs_every_rule_builtin_that_needs_no_ground_truth():
    labels = {c.label for c in configured_evaluators(load_config(None, env={}))}
    assert {"error_free", "latency", "tool_success_rate", "pii_leak", "finish_reason"} <= labels
    assert not labels & {"exact_match", "tool_trajectory", "precision_at_k"}
