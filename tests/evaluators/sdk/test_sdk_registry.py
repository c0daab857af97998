"""The builtin catalog, load_evaluator specs and entry-point discovery."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evaluators.sdk import (
    BaseEvaluator,
    EvaluatorConfigError,
    builtin,
    entry_point_evaluators,
    evaluator,
    list_builtins,
    load_evaluator,
    register,
    unregister,
)
from evaluators.traces.model import Trace
from tests.evaluators.sdk import sdk_fixture_evals as fx

FIXTURE = "tests.evaluators.sdk.sdk_fixture_evals"
registry = importlib.import_module("evaluators.sdk.registry")


@pytest.fixture
def registered() -> Iterator[list[str]]:
    """Names registered by a test; removed from the catalog afterwards."""
    names: list[str] = []
    yield names
    for name in names:
        unregister(name)


def test_register_a_class_and_configure_it_by_name(registered: list[str]) -> None:
    registered.append(register(fx.SpanBudget).name)
    first = builtin("fixture_span_budget", max_spans=10)
    second = builtin("fixture_span_budget")
    assert isinstance(first, fx.SpanBudget)
    assert (first.max_spans, second.max_spans) == (10, 1000)
    assert first is not second
    with pytest.raises(EvaluatorConfigError, match="fixture_span_budget: param 'max_spans' must be >= 1"):
        builtin("fixture_span_budget", max_spans=0)


def test_register_an_instance_gives_fresh_configured_copies(registered: list[str]) -> None:
    registered.append(register(fx.span_count).name)
    configured = builtin("fixture_span_count", min_spans=7)
    assert configured.min_spans == 7
    assert fx.span_count.min_spans == 1  # the registered instance is untouched
    assert builtin("fixture_span_count") is not fx.span_count


def test_list_builtins_gives_infos(registered: list[str]) -> None:
    registered.extend([register(fx.SpanBudget).name, register(fx.exact_answer).name])
    infos = {info.name: info for info in list_builtins()}
    assert infos["fixture_span_budget"].level == "trace"
    assert infos["fixture_span_budget"].params[0].name == "max_spans"
    assert infos["fixture_exact_answer"].needs_ground_truth is True
    names = [info.name for info in list_builtins()]
    assert names == sorted(names)


def test_unknown_builtin_names_the_close_ones(registered: list[str]) -> None:
    registered.append(register(fx.SpanBudget).name)
    with pytest.raises(ValueError, match=r"unknown builtin evaluator 'fixture_span_budgte'.*'fixture_span_budget'"):
        builtin("fixture_span_budgte")


def test_a_taken_name_is_refused_unless_replaced(registered: list[str]) -> None:
    registered.append(register(fx.SpanBudget).name)
    register(fx.SpanBudget)  # the same class again (e.g. a reload) is fine

    class Impostor(BaseEvaluator):
        name = "fixture_span_budget"
        level = "trace"

    with pytest.raises(ValueError, match="already registered"):
        register(Impostor)
    register(Impostor, replace=True)
    assert isinstance(builtin("fixture_span_budget"), Impostor)


def test_register_rejects_non_evaluators() -> None:
    with pytest.raises(TypeError, match="BaseEvaluator subclass or instance"):
        register(fx.plain_function)


def test_load_one_attribute() -> None:
    assert load_evaluator(f"{FIXTURE}:span_count") == [fx.span_count]
    [budget] = load_evaluator(f"{FIXTURE}:SpanBudget")  # a class is instantiated
    assert isinstance(budget, fx.SpanBudget)


def test_load_a_whole_module_in_definition_order() -> None:
    loaded = load_evaluator(FIXTURE)
    assert [e.name for e in loaded] == [
        "fixture_span_count",
        "fixture_agent_steps",
        "fixture_llm_model",
        "fixture_exact_answer",
        "fixture_span_budget",
    ]
    assert [e.level for e in loaded] == ["trace", "agent", "llm", "trace", "trace"]


def test_module_scan_skips_imported_evaluators_and_prefers_instances(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "sdk_scan_probe.py").write_text(
        "from tests.evaluators.sdk.sdk_fixture_evals import span_count, SpanBudget\n"
        "from evaluators.sdk import BaseEvaluator, evaluator\n"
        "from evaluators.traces.model import Trace\n"
        "class Local(BaseEvaluator):\n"
        "    name = 'probe_local'\n"
        "    def evaluate(self, trace: Trace, task=None):\n"
        "        return 1.0\n"
        "strict_local = Local()\n"
        "@evaluator('probe_fn')\n"
        "def probe_fn(trace: Trace) -> float:\n"
        "    return 1.0\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        loaded = load_evaluator("sdk_scan_probe")
    finally:
        sys.modules.pop("sdk_scan_probe", None)
    assert [e.name for e in loaded] == ["probe_local", "probe_fn"]  # Local once, via its instance


@pytest.mark.parametrize(
    ("spec", "error", "message"),
    [
        ("", ValueError, "bad evaluator spec"),
        (f"{FIXTURE}:", ValueError, "bad evaluator spec"),
        ("no_such_module_xyz:thing", ImportError, "cannot import evaluator module 'no_such_module_xyz'"),
        (f"{FIXTURE}:missing", AttributeError, "has no attribute 'missing'"),
        (f"{FIXTURE}:plain_function", TypeError, "plain function; decorate it with @evaluator"),
    ],
)
def test_bad_specs(spec: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        load_evaluator(spec)


def test_non_evaluator_attribute_is_refused() -> None:
    with pytest.raises(TypeError, match="is not an evaluator"):
        load_evaluator(f"{FIXTURE}:TYPE_CHECKING")


def _install_plugin(root: Path, lines: list[str]) -> None:
    dist = root / "sdk_fixture_plugin-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: sdk-fixture-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[agent_monitor.evaluators]\n" + "\n".join(lines) + "\n")


def test_entry_points_are_loaded(tmp_path: Path, monkeypatch) -> None:
    _install_plugin(
        tmp_path,
        [f"span_count = {FIXTURE}:span_count", f"budget = {FIXTURE}:SpanBudget"],
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    try:
        loaded = entry_point_evaluators()
    finally:
        monkeypatch.undo()
        importlib.invalidate_caches()
    names = [e.name for e in loaded]
    assert "fixture_span_count" in names
    assert "fixture_span_budget" in names
    assert fx.span_count in loaded
    assert "fixture_span_count" not in [e.name for e in entry_point_evaluators()]  # gone with the path


def test_an_entry_point_naming_a_module_loads_all_of_it(tmp_path: Path, monkeypatch) -> None:
    _install_plugin(tmp_path, [f"all = {FIXTURE}"])
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    names = [e.name for e in entry_point_evaluators()]
    assert {"fixture_span_count", "fixture_exact_answer", "fixture_span_budget"} <= set(names)


def test_a_broken_entry_point_is_reported_by_name(tmp_path: Path, monkeypatch) -> None:
    _install_plugin(tmp_path, ["broken = no_such_module_xyz:thing"])
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    with pytest.raises(ImportError, match="entry point 'broken'"):
        entry_point_evaluators()


def test_decorated_evaluators_register_like_classes(registered: list[str]) -> None:
    @evaluator("fixture_inline")
    def inline(trace: Trace, factor: float = 0.5) -> float:
        return factor

    registered.append(register(inline).name)
    assert builtin("fixture_inline", factor=0.25).factor == 0.25


def _fresh_builtins(monkeypatch, module: str) -> None:
    monkeypatch.setattr(registry, "BUILTINS_MODULE", module)
    monkeypatch.setattr(registry, "_builtins_loaded", False)


def test_builtins_module_is_imported_once_when_present(tmp_path: Path, monkeypatch, registered) -> None:
    (tmp_path / "sdk_probe_builtins.py").write_text(
        "from evaluators.sdk import register\n"
        "from tests.evaluators.sdk.sdk_fixture_evals import SpanBudget\n"
        "register(SpanBudget)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    _fresh_builtins(monkeypatch, "sdk_probe_builtins")
    registered.append("fixture_span_budget")
    try:
        assert "fixture_span_budget" in [info.name for info in list_builtins()]
        assert registry._builtins_loaded is True
    finally:
        sys.modules.pop("sdk_probe_builtins", None)


def test_an_absent_builtins_module_is_fine(monkeypatch) -> None:
    _fresh_builtins(monkeypatch, "evaluators.no_such_builtins_module")
    list_builtins()
    with pytest.raises(ValueError, match="unknown builtin evaluator 'nothing_here'"):
        builtin("nothing_here")


def test_a_builtins_module_with_a_missing_dependency_is_an_error(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "sdk_probe_broken_builtins.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    _fresh_builtins(monkeypatch, "sdk_probe_broken_builtins")
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_xyz"):
        list_builtins()
    assert registry._builtins_loaded is False  # tried again next time
