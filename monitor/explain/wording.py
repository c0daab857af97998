"""An explanation in words, as the review's panel and `agent-monitor explain` write it: a factor's values
(`model = gemini-2.5-pro AND tool = convert_currency`), its shares, lift and q-value, the headline of the top
factor ("model=gemini-2.5-pro AND tool=convert_currency: 92 % of failures, 14× the rest") and the note when no
value sets the slice apart. Plain text: the page escapes it, the command clips it."""

from __future__ import annotations

from collections.abc import Iterable

from monitor.explain.model import Explanation, Factor, SliceKind

# per kind: (what a share is "of", the slice as a subject, its reference)
NOUNS: dict[SliceKind, tuple[str, str, str]] = {
    "failures": ("failures", "the failures", "the rest"),
    "signature": ("the signature's traces", "the signature's traces", "the rest"),
    "drift": ("the recent window", "the recent window", "the baseline"),
    "filter": ("the slice", "the slice", "the rest"),
}
ONLY_HERE = "only here"
CONJUNCTION = " AND "  # between the values of a pair


def conjoined(parts: Iterable[str]) -> str:
    """`parts` as a pair's text: `model AND tool`."""
    return CONJUNCTION.join(parts)


def values_text(factor: Factor, equals: str = " = ") -> str:
    """`model = gemini-2.5-pro`, or a pair joined by AND."""
    return conjoined(f"{v.dimension}{equals}{v.value}" for v in factor.values)


def share_text(share: float) -> str:
    """`92 %`, `4.5 %`, `0 %`."""
    percent = share * 100
    return f"{percent:.0f} %" if percent >= 10 or percent == 0 else f"{percent:.1f} %"


def lift_text(lift: float | None) -> str:
    """`14×`, `2.3×`; "only here" when no reference trace has the value."""
    if lift is None:
        return ONLY_HERE
    return f"{lift:.0f}×" if lift >= 10 else f"{lift:.1f}×"


def q_text(q: float) -> str:
    return "< 0.0001" if q < 0.0001 else f"{q:.2g}"


def fdr_text(fdr: float) -> str:
    return f"FDR {fdr * 100:g} %"


def headline(found: Explanation) -> str | None:
    """The top factor in one sentence; None when there is none."""
    if not found.factors:
        return None
    top = found.factors[0]
    of, _, reference = NOUNS[found.kind]
    lift = f"none in {reference}" if top.lift is None else f"{lift_text(top.lift)} {reference}"
    return f"{values_text(top, '=')}: {share_text(top.slice_share)} of {of}, {lift}"


def nothing_text(found: Explanation) -> str:
    """Why there are no factors: the explanation's note, else that nothing tested is significant."""
    if found.note:
        return found.note
    _, subject, _ = NOUNS[found.kind]
    values = "value" if found.tested == 1 else "values"
    return f"no value sets {subject} apart ({found.tested} {values} tested at {fdr_text(found.fdr)})"


def counts_text(found: Explanation) -> str:
    """`120 traces in <slice> against 880 in <reference>`."""
    return f"{found.slice_traces} traces in {found.slice} against {found.reference_traces} in {found.reference}"


TRUNCATED = "the range held more traces than explain.max_traces: only the newest were read"

__all__ = [
    "CONJUNCTION",
    "NOUNS",
    "ONLY_HERE",
    "TRUNCATED",
    "conjoined",
    "counts_text",
    "fdr_text",
    "headline",
    "lift_text",
    "nothing_text",
    "q_text",
    "share_text",
    "values_text",
]
