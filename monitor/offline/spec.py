"""The evaluators of an offline run (`agent-monitor evaluate`, `compare`, `poll`): a YAML spec file in
the daemon config's `evaluators` form (a list of entries, or the default selection edited), each entry with an
optional `min_pass_rate` CI gate; without a spec, the default selection. Judge settings come with it."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, Field, ValidationError

from evaluators.judges import JudgeSettings
from evaluators.pricing import ModelPrice
from evaluators.sdk import BaseEvaluator, in_default_set, list_builtins
from evaluators.signatures import SignatureRule
from monitor.config import (
    EvaluatorEntry,
    EvaluatorOverride,
    EvaluatorSet,
    Loc,
    PricingConfig,
    dotted,
    validation_problems,
)
from monitor.config.evaluators import DEFAULTS_CONTEXT, evaluators_field, resolve_section
from monitor.config.signatures import SignaturesConfig
from monitor.config.units import Label
from monitor.engine.evaluator_setup import build_evaluators
from monitor.offline.judges import judge_settings

MAX_SPEC_BYTES = 1024 * 1024


class InputError(ValueError):
    """A bad evaluator spec or dataset: reported as a usage error (exit status 2)."""


PassRate = Annotated[float, Field(ge=0, le=1)]


class SpecEntry(EvaluatorEntry):
    """One evaluator of a spec file: a daemon-config evaluator entry, plus an optional CI gate."""

    min_pass_rate: PassRate | None = None


class SpecOverride(EvaluatorOverride):
    """A change to one evaluator of the default selection, which may set its CI gate too."""

    min_pass_rate: PassRate | None = None


class SpecSet(EvaluatorSet):
    """The mapping form of a spec's `evaluators`: the default selection edited, as in the daemon config."""

    entry_type = SpecEntry
    # Narrowed for pydantic to validate spec entries. mypy flags it (list and dict are invariant) though nothing
    # writes into these; Sequence/Mapping in EvaluatorSet would change pydantic's validation, its messages and
    # what the config error locator reads from the annotations.
    add: Annotated[list[SpecEntry], Field(default_factory=list)]  # type: ignore[assignment]
    override: Annotated[dict[Label, SpecOverride], Field(default_factory=dict)]  # type: ignore[assignment]


class SpecFile(BaseModel):
    """A spec file; keys other than `evaluators` (a daemon config's receivers, metrics, ...) are ignored."""

    evaluators: evaluators_field(SpecEntry, SpecSet)  # type: ignore[valid-type]


@dataclass(slots=True)
class Selected:
    """An evaluator chosen for an offline run, with its report label and gate."""

    evaluator: BaseEvaluator
    label: str
    min_pass_rate: float | None = None


def default_names() -> list[str]:
    """The builtins `evaluate` runs without a spec (and a spec's `defaults: true` starts from): the default
    set plus the ground-truth builtins (which skip without a dataset)."""
    return [info.name for info in list_builtins() if in_default_set(info) or _ground_truth_rule(info)]


def _ground_truth_rule(info: Any) -> bool:
    return info.kind == "rule" and info.needs_ground_truth and not info.needs_config


Prices = Mapping[str, ModelPrice]


def default_selection(prices: Prices | None = None) -> list[Selected]:
    """The default selection, each builtin with its defaults (`prices`: for the evaluators that price calls)."""
    return _select(resolve_section(None, default_names(), entry_type=SpecEntry), "default selection", prices)


def read_spec(path: str | os.PathLike[str], data: Any = None, prices: Prices | None = None) -> list[Selected]:
    """The evaluators a YAML spec file names (`data`: the file already loaded with `load_spec`); modules next
    to the file (or in the cwd) can be imported."""
    path = Path(path)
    if data is None:
        data = load_spec(path)
    with _importable(path.resolve().parent, Path.cwd()):
        return parse_spec(data, str(path), prices)


def selection_and_judges(spec_path: str | None, prices: Prices | None = None) -> tuple[list[Selected], JudgeSettings]:
    """What an offline command evaluates with: the spec file's evaluators (default: every rule-based builtin) and
    judge settings (its `judges` section, the key from the environment); `prices` (`pricing_overrides`) go to the
    evaluators that price calls (`cost_budget`). InputError, ValidationError."""
    spec = load_spec(spec_path) if spec_path else None
    selection = read_spec(spec_path, spec, prices) if spec_path else default_selection(prices)
    return selection, judge_settings(spec if isinstance(spec, dict) else None, os.environ)


def signature_rules(spec_path: str | None) -> tuple[SignatureRule, ...]:
    """The fingerprint rules of the spec file's `signatures:` section (the daemon config's, so one file serves
    both); none without a spec or a section. InputError when the section is invalid."""
    spec = load_spec(spec_path) if spec_path else None
    section = spec.get("signatures") if isinstance(spec, dict) else None
    try:
        return SignaturesConfig.model_validate(section or {}).compiled_rules()
    except ValidationError as exc:
        problems = [(("signatures", *loc), message) for loc, message in validation_problems(SignaturesConfig, exc)]
        raise _invalid(str(spec_path), problems) from None


def pricing_overrides(spec_path: str | None) -> dict[str, ModelPrice]:
    """The price overrides of the spec file's `pricing:` section (the daemon config's); none without a spec or
    a section. InputError when the section is invalid."""
    spec = load_spec(spec_path) if spec_path else None
    section = spec.get("pricing") if isinstance(spec, dict) else None
    try:
        return PricingConfig.model_validate(section or {}).overrides()
    except ValidationError as exc:
        problems = [(("pricing", *loc), message) for loc, message in validation_problems(PricingConfig, exc)]
        raise _invalid(str(spec_path), problems) from None


def load_spec(path: str | os.PathLike[str]) -> Any:
    """A spec file's YAML, parsed (size-limited)."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_SPEC_BYTES:
            raise InputError(f"{path}: over the {MAX_SPEC_BYTES} byte limit for a spec file")
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not valid YAML: {exc}") from None


@contextlib.contextmanager
def _importable(*folders: Path) -> Iterator[None]:
    """Let `module:` entries import from these folders while the spec loads."""
    added = [str(f) for f in folders if str(f) not in sys.path]
    sys.path.extend(added)
    try:
        yield
    finally:
        for folder in added:
            with contextlib.suppress(ValueError):
                sys.path.remove(folder)


def parse_spec(data: Any, where: str = "spec", prices: Prices | None = None) -> list[Selected]:
    """Evaluators from a parsed spec: `{evaluators: ...}` or a bare list of entries.

    `evaluators` is a list of entries, or (as in the daemon config) a mapping that edits the default
    selection: `{defaults: true, add: [...], override: {label: {...}}, remove: [...]}`. Other top-level
    keys are ignored; `enabled: false` entries are left out; `sampling` and `alert` only matter to the daemon.
    """
    if isinstance(data, dict):
        if "evaluators" not in data:
            raise InputError(f"{where}: expected an 'evaluators' list (or a top-level list of evaluators)")
        data = data["evaluators"]
    if not isinstance(data, list | dict) or not data:
        raise InputError(
            f"{where}: 'evaluators' must be a non-empty list of {{name|module, params, ...}} entries, "
            "or a mapping of defaults, add, override and remove"
        )
    try:
        spec = SpecFile.model_validate({"evaluators": data}, context={DEFAULTS_CONTEXT: default_names()})
    except ValidationError as exc:
        raise _invalid(where, validation_problems(SpecFile, exc)) from None
    return _select(resolve_section(spec.evaluators, default_names(), entry_type=SpecEntry), where, prices)


def _select(resolved: Sequence[Any], where: str, prices: Prices | None = None) -> list[Selected]:
    built, problems = build_evaluators(resolved, prices)
    if problems:
        raise _invalid(where, problems)
    if not built:
        raise InputError(f"{where}: every evaluator is disabled")
    return [Selected(c.evaluator, c.label, getattr(c.entry, "min_pass_rate", None)) for c in built]


def _invalid(where: str, problems: list[tuple[Loc, str]]) -> InputError:
    return InputError(
        f"{where}: invalid evaluator spec:\n  " + "\n  ".join(f"{dotted(loc)}: {m}" for loc, m in problems)
    )
