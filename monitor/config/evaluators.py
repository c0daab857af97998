"""The `evaluators` config section: one entry per evaluator, as a list, or as a mapping that edits the
default set (`defaults`, `add`, `override`, `remove`). `resolve_section` turns either form into the
entries to build, each with the config location it came from (for located errors)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    ConfigDict,
    Discriminator,
    Field,
    PositiveInt,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)

from evaluators.sdk import default_builtins

from .locate import LIST_TAG, MAPPING_TAG, Loc, LocatedError
from .units import Duration, Label, Ratio, Section

__all__ = [
    "DEFAULTS_CONTEXT",
    "AlertConfig",
    "EvaluatorEntry",
    "EvaluatorOverride",
    "EvaluatorSet",
    "EvaluatorsSection",
    "Resolved",
    "SloConfig",
    "default_set_names",
    "evaluators_field",
    "resolve_section",
]

# The tags of the two forms; pydantic puts them in error locations, config_load leaves them out.
# Validation context key: the default set's names, for a caller whose default set is not the daemon's.
DEFAULTS_CONTEXT = "default_evaluators"

Sampling = Annotated[float, Field(gt=0, le=1)]


class AlertConfig(Section):
    """Fire when the pass ratio over `window` stays below `min_pass_ratio` for `for` (YAML key)."""

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True)

    min_pass_ratio: Ratio
    window: Duration = 300.0
    for_: Duration = Field(default=300.0, alias="for")
    min_samples: PositiveInt = 20
    severity: Literal["warning", "critical", "info"] = "warning"


class SloConfig(Section):
    """A service-level objective on the evaluator's pass ratio: `agent-monitor rules` writes the four
    multi-window multi-burn-rate alerts of the SRE workbook for it (error budget = 1 - objective over `period`)."""

    objective: Annotated[float, Field(gt=0, lt=1)]
    period: Duration = 30 * 86400.0
    severity: Literal["warning", "critical", "info"] | None = None  # default: page on fast burn, ticket on slow


_MODULE_PATH = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*(:[A-Za-z_]\w*)?")


class EvaluatorEntry(Section):
    """One configured evaluator: a builtin `name` or a `module` path, never both."""

    id: Label | None = None
    name: Label | None = None
    module: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    threshold: Ratio | None = None
    sampling: Sampling = 1.0
    enabled: bool = True
    alert: AlertConfig | None = None
    slo: SloConfig | None = None

    @model_validator(mode="before")
    @classmethod
    def _builtin_is_name(cls, data: Any) -> Any:
        """`builtin: X` is another spelling of `name: X` (a builtin evaluator)."""
        if isinstance(data, dict) and "builtin" in data:
            data = dict(data)
            if "name" in data:
                raise ValueError("set either builtin or name (they mean the same), not both")
            data["name"] = data.pop("builtin")
        return data

    @field_validator("module")
    @classmethod
    def _module_path(cls, value: str | None) -> str | None:
        if value is not None and not _MODULE_PATH.fullmatch(value):
            raise ValueError(f"invalid module path {value!r}: expected 'package.module' or 'package.module:name'")
        return value

    @model_validator(mode="after")
    def _name_xor_module(self) -> EvaluatorEntry:
        if (self.name is None) == (self.module is None):
            raise ValueError("set exactly one of name (a builtin evaluator) or module (e.g. mypkg.checks:tone)")
        return self

    @property
    def label(self) -> str:
        """The `evaluator` metric label: `id`, else `name`, else `module`."""
        return self.id or self.name or self.module or ""

    @property
    def label_key(self) -> str:
        """The key the label comes from (where a duplicate label is reported)."""
        return "id" if self.id else "name" if self.name else "module"


def _duplicates(entries: Sequence[EvaluatorEntry], where: Loc = ()) -> list[tuple[Loc, str]]:
    problems: list[tuple[Loc, str]] = []
    first: dict[str, int] = {}
    for i, entry in enumerate(entries):
        if entry.label in first:
            problems.append(
                (
                    (*where, i, entry.label_key),
                    f"duplicate evaluator {entry.label!r} (also entry {first[entry.label]}); "
                    "set a distinct `id:` on one of them",
                )
            )
        first.setdefault(entry.label, i)
    return problems


def _distinct_labels(entries: list[EvaluatorEntry]) -> list[EvaluatorEntry]:
    if problems := _duplicates(entries):
        raise LocatedError(problems)
    return entries


class EvaluatorOverride(Section):
    """Changes to one evaluator of the default set; keys left out keep the default entry's value."""

    params: dict[str, Any] | None = None
    threshold: Ratio | None = None
    sampling: Sampling | None = None
    enabled: bool | None = None
    alert: AlertConfig | None = None
    slo: SloConfig | None = None

    def changes(self) -> dict[str, Any]:
        """The fields this override sets (null means "keep the default": default entries have no values to reset)."""
        return {key: value for key in type(self).model_fields if (value := getattr(self, key)) is not None}


@dataclass(frozen=True, slots=True)
class Resolved:
    """An entry of the resulting evaluator set and where in the config it comes from."""

    entry: EvaluatorEntry
    loc: Loc


def default_set_names() -> list[str]:
    """The builtins of the default evaluator set (those `agent-monitor evaluators list` marks as default)."""
    return [info.name for info in default_builtins()]


class EvaluatorSet(Section):
    """The mapping form: start from the default set (or, with `defaults: false`, from nothing), drop
    `remove`, change `override`, then append `add`."""

    entry_type: ClassVar[type[EvaluatorEntry]] = EvaluatorEntry

    defaults: bool = True
    add: Annotated[list[EvaluatorEntry], Field(default_factory=list)]
    override: Annotated[dict[Label, EvaluatorOverride], Field(default_factory=dict)]
    remove: Annotated[list[Label], Field(default_factory=list)]

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> EvaluatorSet:
        names = (info.context or {}).get(DEFAULTS_CONTEXT)
        self.resolve(default_set_names() if names is None else names)
        return self

    def resolve(self, defaults: Sequence[str], where: Loc = ()) -> list[Resolved]:
        """The resulting entries (default set first, then `add`); LocatedError for every bad name."""
        base = list(defaults) if self.defaults else []
        problems = self._removal_problems(base) + self._override_problems(base)
        kept = [name for name in base if name not in self.remove]
        problems += [
            (
                ("add", i, entry.label_key),
                f"duplicate evaluator {entry.label!r}: it is already in the default set; change it under "
                f"`override: {{{entry.label}: ...}}`, or give this entry a distinct `id:`",
            )
            for i, entry in enumerate(self.add)
            if entry.label in kept
        ]
        problems += _duplicates(self.add, ("add",))
        if problems:
            raise LocatedError(problems)
        resolved = []
        for name in kept:
            entry = self.entry_type(name=name)
            loc: Loc = where
            if name in self.override:
                entry = entry.model_copy(update=self.override[name].changes())
                loc = (*where, "override", name)
            resolved.append(Resolved(entry, loc))
        resolved += [Resolved(entry, (*where, "add", i)) for i, entry in enumerate(self.add)]
        return resolved

    def _not_in(self, label: str, base: list[str]) -> str:
        if not self.defaults:
            return f"{label!r} is not in the evaluator set: `defaults: false` starts from an empty set (use add:)"
        close = difflib.get_close_matches(label, base, n=1)
        if close:
            return f"{label!r} is not in the default set; did you mean {close[0]!r}?"
        return f"{label!r} is not in the default set ({', '.join(base)})"

    def _removal_problems(self, base: list[str]) -> list[tuple[Loc, str]]:
        problems: list[tuple[Loc, str]] = []
        for i, label in enumerate(self.remove):
            if label not in base:
                problems.append((("remove", i), self._not_in(label, base)))
            elif label in self.remove[:i]:
                problems.append((("remove", i), f"{label!r} is already removed"))
        return problems

    def _override_problems(self, base: list[str]) -> list[tuple[Loc, str]]:
        problems: list[tuple[Loc, str]] = []
        for label in self.override:
            if label not in base:
                problems.append((("override", label), self._not_in(label, base)))
            elif label in self.remove:
                problems.append((("override", label), f"{label!r} is also removed"))
        return problems


def _form(value: Any) -> str | None:
    if isinstance(value, list | tuple):
        return LIST_TAG
    if isinstance(value, dict | EvaluatorSet):
        return MAPPING_TAG
    return None


def evaluators_field(entry_type: type[EvaluatorEntry], set_type: type[EvaluatorSet]) -> Any:
    """The type of an `evaluators` section: a list of `entry_type`, a `set_type` mapping, or null."""
    return (
        Annotated[
            Annotated[list[entry_type], AfterValidator(_distinct_labels), Tag(LIST_TAG)]  # type: ignore[valid-type]
            | Annotated[set_type, Tag(MAPPING_TAG)],
            Discriminator(
                _form,
                custom_error_type="evaluators_form",
                custom_error_message="expected a list of evaluator entries, or a mapping of defaults, add, "
                "override and remove",
            ),
        ]
        | None
    )


EvaluatorsSection = evaluators_field(EvaluatorEntry, EvaluatorSet)


def resolve_section(
    section: list[EvaluatorEntry] | EvaluatorSet | None,
    defaults: Sequence[str],
    where: Loc = ("evaluators",),
    entry_type: type[EvaluatorEntry] = EvaluatorEntry,
) -> list[Resolved]:
    """The entries an `evaluators` section stands for: null → the default set, a list → itself, a mapping
    → the default set edited. Locations are absolute (under `where`)."""
    if section is None:
        return [Resolved(entry_type(name=name), where) for name in defaults]
    if isinstance(section, EvaluatorSet):
        return section.resolve(defaults, where)
    return [Resolved(entry, (*where, i)) for i, entry in enumerate(section)]
