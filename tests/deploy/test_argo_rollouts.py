"""deploy/argo-rollouts/analysis-template.yaml: a valid AnalysisTemplate (the CRD's own schema, vendored and
trimmed, and no field Kubernetes would prune), every arg declared and used, and conditions that give the phases
the template's comments promise for the values agent-monitor exports."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator

from tests.deploy.argo_analysis import ARG, arguments, fill, load, phase, python

SCHEMA = Path(__file__).resolve().parents[1] / "fixtures" / "argo" / "analysis-template.schema.json"
NAN = math.nan
ARGS = {"evaluator": "error_free", "baseline": "1.4", "candidate": "1.5"}


def pruned(value: Any, schema: dict[str, Any], where: str = "") -> list[str]:
    """Fields of `value` the structural schema does not know (the API server would silently drop them)."""
    found = []
    if isinstance(value, dict) and "properties" in schema:
        for key, item in value.items():
            if key not in schema["properties"]:
                found.append(f"{where}.{key}")
            else:
                found += pruned(item, schema["properties"][key], f"{where}.{key}")
    elif isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            found += pruned(item, schema["items"], f"{where}[{i}]")
    return found


def test_the_template_is_a_valid_analysis_template() -> None:
    template = load()
    schema = json.loads(SCHEMA.read_text())
    assert template["apiVersion"] == "argoproj.io/v1alpha1" and template["kind"] == "AnalysisTemplate"
    errors = [f"{list(e.path)}: {e.message}" for e in Draft7Validator(schema).iter_errors(template)]
    assert not errors
    assert not pruned(template, schema)
    assert "namespace" not in template["metadata"]  # applied next to the Rollout that uses it


def test_every_arg_is_declared_and_used_and_every_metric_queries_prometheus() -> None:
    template = load()
    declared = [a["name"] for a in template["spec"]["args"]]
    text = json.dumps(template["spec"]["metrics"])
    assert set(ARG.findall(text)) == set(declared)
    assert [m["name"] for m in template["spec"]["metrics"]] == ["verdict", "drop-margin", "decided"]
    for metric in template["spec"]["metrics"]:
        prometheus = metric["provider"]["prometheus"]
        assert prometheus["address"] == "{{args.prometheus-address}}"
        for label in ("evaluator", "baseline", "candidate"):
            assert f'{label}="{{{{args.{label}}}}}"' in prometheus["query"], metric["name"]
        for key in ("successCondition", "failureCondition"):
            compile(python(fill(metric[key], arguments(template, ARGS))), key, "eval")


@pytest.mark.parametrize(
    "metric, result, expected",
    [
        ("verdict", [-1.0], "Failed"),
        ("verdict", [0.0], "Successful"),
        ("verdict", [1.0], "Successful"),
        ("verdict", [], "Inconclusive"),  # no series: never a pass
        ("drop-margin", [-0.2], "Failed"),  # even the upper bound is 20 points down
        ("drop-margin", [-0.01], "Successful"),  # within the 5-point margin
        ("drop-margin", [NAN], "Successful"),  # a side without results: `decided` covers it
        ("drop-margin", [], "Successful"),  # too few results yet: the query is empty, `decided` waits
        ("decided", [0.0], "Successful"),
        ("decided", [1.0], "Inconclusive"),  # too few results never fails, it waits
        ("decided", [], "Inconclusive"),
    ],
)
def test_measurement_phases(metric: str, result: list[float], expected: str) -> None:
    template = load()
    [spec] = [m for m in template["spec"]["metrics"] if m["name"] == metric]
    assert phase(spec, result, arguments(template, ARGS)) == expected


def test_the_margin_arg_moves_the_drop_threshold() -> None:
    template = load()
    [spec] = [m for m in template["spec"]["metrics"] if m["name"] == "drop-margin"]
    assert phase(spec, [-0.08], arguments(template, ARGS)) == "Failed"
    assert phase(spec, [-0.08], arguments(template, {**ARGS, "margin": "0.1"})) == "Successful"
