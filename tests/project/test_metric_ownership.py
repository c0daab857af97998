"""Each metric group is updated by its own component only: outside the modules listed as a metric's owners, no
code in `monitor/` calls a metric's update methods (`inc`, `set`, `observe`, `labels`, ...) on an attribute of
that name, and no code assigns one. A component updates another's metrics only through a method the daemon hands
it (e.g. `EvaluationMetrics.dropped`), never by reaching into the group."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from prometheus_client.metrics import MetricWrapperBase

from monitor.metrics import MetricsExporter
from monitor.metrics.series import CounterSeries, HistogramSeries

ROOT = Path(__file__).resolve().parents[2]
MUTATORS = {"inc", "dec", "set", "observe", "labels", "set_function", "set_to_current_time", "remove", "clear"}
# group attribute on MetricsExporter -> the modules (besides the group's own) that may update its metrics
OWNERS: dict[str, set[str]] = {
    "results": set(),
    "intake": set(),
    "assembly": set(),
    "evaluation": set(),
    "recording": set(),
    "store": set(),
    "judges": set(),
    "pairwise": set(),
    "poll": {"monitor/sources/runner.py", "monitor/sources/leadership.py", "monitor/sources/write_back.py"},
    "build": set(),
    "signatures": set(),
    "sessions": set(),
    "reviews": set(),
    "rebuild": set(),
    "drift": set(),
    "attribution": set(),
    "exports": set(),
    "intake_log": {"monitor/intake/consumer.py", "monitor/intake/log.py", "monitor/intake/replay.py"},
}


def _metric_names(group: object) -> set[str]:
    """The attributes of `group` (and of its sub-groups) that are metrics."""
    metric_types = (MetricWrapperBase, CounterSeries, HistogramSeries)
    names = set()
    for name, value in vars(group).items():
        if isinstance(value, metric_types):
            names.add(name)
        elif type(value).__module__.startswith("monitor.metrics.") and hasattr(value, "__dict__"):
            names |= _metric_names(value)
    return names


def allowed_modules() -> dict[str, set[str]]:
    """Metric attribute name -> the modules that may update a metric of that name."""
    exporter = MetricsExporter()
    assert set(OWNERS) == {k for k in vars(exporter) if k != "registry"}, "a group without owners listed here"
    allowed: dict[str, set[str]] = {}
    for group_name, extra in OWNERS.items():
        group = getattr(exporter, group_name)
        home = {str(Path(type(group).__module__.replace(".", "/") + ".py"))}
        for sub in vars(group).values():  # sub-groups (the normalizers' within the results)
            if type(sub).__module__.startswith("monitor.metrics."):
                home.add(type(sub).__module__.replace(".", "/") + ".py")
        for name in _metric_names(group):
            allowed.setdefault(name, set()).update(home | extra)
    return allowed


def _touched(node: ast.AST, names: set[str]) -> str | None:
    """The metric attribute name a call or assignment updates, if it updates one of `names`."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
        target = node.func.value
        if isinstance(target, ast.Attribute) and target.attr in names:
            return target.attr
    if isinstance(node, ast.Assign | ast.AugAssign):
        for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
            if isinstance(target, ast.Attribute) and target.attr in names and isinstance(target.value, ast.Attribute):
                return target.attr  # `x.group.metric = ...`
    return None


def violations(sources: dict[str, str], allowed: dict[str, set[str]]) -> list[str]:
    """`path:line: name` for every update of a metric outside its owners, in `sources` (path -> text)."""
    found = []
    for path, text in sorted(sources.items()):
        for node in ast.walk(ast.parse(text)):
            name = _touched(node, set(allowed))
            if name is not None and path not in allowed[name]:
                found.append(f"{path}:{getattr(node, 'lineno', 0)}: {name}")
    return found


def _monitor_sources() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in sorted((ROOT / "monitor").rglob("*.py"))}


def test_no_component_updates_another_components_metrics() -> None:
    assert violations(_monitor_sources(), allowed_modules()) == []


@pytest.mark.parametrize(
    "line",
    [
        "self.metrics.evaluation.queue_depth.set(self.pool.depth)",
        "metrics.evaluation.traces_dropped.labels(reason='x').inc()",
        "self.metrics.judges.pending.set(3)",
        "telemetry.recording.completion_delay.observe(1.0)",
        "telemetry.store.review_available = 1",
    ],
)
def test_the_check_sees_a_daemon_that_reaches_into_a_group(line: str) -> None:
    """The check is not vacuous: the updates the daemon and the ingest used to make are caught."""
    source = f"def wire(self, metrics, telemetry):\n    {line}\n"
    assert violations({"monitor/daemon.py": source}, allowed_modules()) != []
