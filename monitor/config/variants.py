"""The `variants` config section: which attribute tells an agent's versions apart, the live comparisons of a
candidate against a baseline, and the pairwise judge of their answers to the same input."""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import Field, field_validator, model_validator

from .units import Duration, Label, Ratio, Section

FIRST_LLM_MODEL = "first_llm_model"  # `attribute` value: the model of the trace's first LLM call
PAIR_BY_INPUT = "input"  # `pair_by` value: the trace's user input, normalised (case, whitespace)

Alpha = Annotated[float, Field(gt=0, lt=1)]
VariantValue = Annotated[str, Field(min_length=1)]


class _Pair(Section):
    baseline: VariantValue
    candidate: VariantValue

    @model_validator(mode="after")
    def _different(self) -> Self:
        if self.baseline == self.candidate:
            raise ValueError(f"baseline and candidate are the same variant ({self.baseline!r})")
        return self


class ComparisonConfig(_Pair):
    """One evaluator's results of `candidate` against `baseline` over the last `window`, exported as the
    agent_eval_variant_* gauges. No verdict (0, reason insufficient_samples) while a side has fewer than
    `min_samples` results with a verdict in the window."""

    evaluator: Label  # the evaluator's metric label (its `name`, or `label` when set)
    window: Duration = 3600.0
    min_samples: Annotated[int, Field(ge=1)] = 200
    alpha: Alpha | None = None  # None: variants.alpha


class PairwiseConfig(_Pair):
    """The pairwise judge (`evaluator`, default pairwise_quality) on traces of `baseline` and `candidate` that
    answer the same input: the same value of the `pair_by` attribute (a task id), or with `pair_by: input` the
    same normalised user input, arriving within `window` of each other. Each pair is judged twice, once in each
    order; a trace with no partner within `window` is skipped as no_pair."""

    evaluator: Label = "pairwise_quality"
    pair_by: Label = PAIR_BY_INPUT
    window: Duration = 600.0
    sampling: Ratio = 1.0
    max_waiting: Annotated[int, Field(ge=1)] = 10_000  # unpaired traces held, per pairing; the oldest go first


class VariantsConfig(Section):
    """`attribute`: a root-span or resource attribute (`service.version`, `deployment.environment`, a feature
    flag), or `first_llm_model`; empty: variants are off and the `variant` label is empty everywhere."""

    attribute: str = ""
    alpha: Alpha = 0.05
    compare: list[ComparisonConfig] = Field(default_factory=list)
    pairwise: list[PairwiseConfig] = Field(default_factory=list)

    @field_validator("attribute")
    @classmethod
    def _strip(cls, attribute: str) -> str:
        return attribute.strip()

    @model_validator(mode="after")
    def _needs_attribute(self) -> Self:
        if (self.compare or self.pairwise) and not self.attribute:
            raise ValueError("`compare` and `pairwise` need `attribute`: the attribute telling the variants apart")
        for name, entries in (("compare", self.compare), ("pairwise", self.pairwise)):
            keys = [(e.evaluator, e.baseline, e.candidate) for e in entries]
            for key in {k for k in keys if keys.count(k) > 1}:
                raise ValueError(f"{name}: {key[0]} of {key[2]!r} against {key[1]!r} is configured twice")
        return self

    @property
    def enabled(self) -> bool:
        return bool(self.attribute)
