"""What an explanation answers: the dimension values (and the pair of values) that set a slice of traces apart
from its reference, as the API, the review's panels, the CLI and the attribution gauge show them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from monitor.review.api_model import ApiModel

SliceKind = Literal["failures", "signature", "drift", "filter"]


class DimensionValue(ApiModel):
    dimension: str
    value: str


class Factor(ApiModel):
    """One value (or a pair: `values` holds two) and how it splits the slice from its reference.

    Shares are among the traces that carry the dimension(s); `coverage` is over the whole slice (the share of the
    slice it explains). `lift` is slice share / reference share (None: no reference trace has it). `p_value`: the
    one-sided hypergeometric (Fisher's exact) test that the slice holds it more often than its reference;
    `q_value`: Benjamini–Hochberg over every value (or pair) tested."""

    values: list[DimensionValue] = Field(min_length=1, max_length=2)
    slice_traces: int
    slice_share: float
    reference_traces: int
    reference_share: float
    lift: float | None
    p_value: float
    q_value: float
    coverage: float


class ExplainQuery(ApiModel):
    """Which slice to explain and against what. Times are epoch seconds; `since` inclusive, `until` exclusive.

    - `evaluator` alone: its failing traces against its passing ones, in the range;
    - `signature` (with or without `evaluator`): the traces of one failure signature against the evaluator's other
      verdicts (every other trace with a verdict when no evaluator is named);
    - `reference_since`/`reference_until` (a drift's baseline): the traces of the range against those of the
      reference range, of the same service (and agent);
    - neither: the traces of the filter (service, agent, variant) against the rest of the range."""

    evaluator: str | None = None
    signature: str | None = None
    service: str | None = None
    agent: str | None = None
    variant: str | None = None
    since: float
    until: float
    reference_since: float | None = None
    reference_until: float | None = None


class Explanation(ApiModel):
    kind: SliceKind
    query: ExplainQuery
    slice: str  # what the slice is, in words ("the failures of helpfulness")
    reference: str  # what it is compared with
    slice_traces: int
    reference_traces: int
    tested: int  # values and pairs tested (the false discovery rate's family)
    fdr: float
    factors: list[Factor]  # significant, largest share difference first; singles and pairs alike
    truncated: bool = False  # the range held more than `explain.max_traces` traces: the newest were read
    note: str | None = None  # why there is nothing to say (no traces, too few), or None


__all__ = ["DimensionValue", "ExplainQuery", "Explanation", "Factor", "SliceKind"]
