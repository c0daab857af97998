"""deploy/argo-rollouts/analysis-template.yaml as Argo Rollouts runs it: its args filled in, each metric's
Prometheus query, and each measurement's phase from the query's result, by the rules of Argo's
utils/evaluate/evaluate.go (both conditions evaluated; failure wins; neither true is Inconclusive).

The conditions are expr-lang expressions; the few forms the template uses (len, result[i], isNaN, comparisons,
&&, ||, !, true/false, numbers) are translated to Python here, and anything else is refused, so a template
change this evaluator cannot read fails its tests instead of being misread.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "deploy" / "argo-rollouts" / "analysis-template.yaml"
ARG = re.compile(r"\{\{\s*args\.([A-Za-z0-9_-]+)\s*\}\}")
_TOKENS = re.compile(r"\s*(len|isNaN|result|true|false|&&|\|\||>=|<=|==|!=|[<>!()\[\]]|-?\d+(?:\.\d+)?)")
_PYTHON = {"&&": " and ", "||": " or ", "!": " not ", "true": "True", "false": "False"}


def load() -> dict[str, Any]:
    return yaml.safe_load(TEMPLATE.read_text(encoding="utf-8"))


def fill(text: str, args: dict[str, str]) -> str:
    """`{{args.NAME}}` replaced; an arg that is not given fails."""
    return ARG.sub(lambda m: args[m[1]], text)


def arguments(template: dict[str, Any], given: dict[str, str]) -> dict[str, str]:
    """The template's arg defaults overridden by `given`; a required arg missing fails."""
    values = {a["name"]: a["value"] for a in template["spec"]["args"] if "value" in a}
    values.update(given)
    missing = [a["name"] for a in template["spec"]["args"] if a["name"] not in values]
    assert not missing, f"args without a value: {missing}"
    return values


def python(condition: str) -> str:
    """The condition as a Python expression (only the forms listed in the module docstring)."""
    out, position = [], 0
    text = condition.strip()
    while position < len(text):
        match = _TOKENS.match(text, position)
        assert match, f"cannot read {text[position:]!r} in {condition!r}"
        token = match[1]
        out.append(_PYTHON.get(token, token))
        position = match.end()
    return "".join(out)


def holds(condition: str, result: list[float]) -> bool:
    return bool(eval(python(condition), {"__builtins__": {}}, {"len": len, "isNaN": math.isnan, "result": result}))


def phase(metric: dict[str, Any], result: list[float], args: dict[str, str]) -> str:
    """Successful, Failed or Inconclusive: one measurement of `metric` with this query result."""
    success_text = fill(metric.get("successCondition", ""), args)
    failure_text = fill(metric.get("failureCondition", ""), args)
    success = holds(success_text, result) if success_text else False
    failure = holds(failure_text, result) if failure_text else False
    if not success_text and not failure_text:
        return "Successful"
    if success_text and not failure_text:
        failure = not success
    elif failure_text and not success_text:
        success = not failure
    if failure:
        return "Failed"
    return "Successful" if success else "Inconclusive"
