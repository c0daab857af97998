"""Which variant (version) of an agent produced a trace, and which input it answered (to pair two variants'
answers to the same input)."""

from __future__ import annotations

import hashlib
from typing import Any

from evaluators.traces.model import Trace
from monitor.config.variants import FIRST_LLM_MODEL, PAIR_BY_INPUT, VariantsConfig

MAX_VARIANT_CHARS = 128


def attribute_value(trace: Trace, attribute: str) -> str | None:
    """The trace's value of `attribute` as text: from a root span's attributes, else the resource's; None when
    neither has it."""
    for root in trace.roots:
        if attribute in root.attributes:
            return _text(root.attributes[attribute])
    value = trace.resource_attributes.get(attribute)
    return None if value is None else _text(value)


def variant_of(trace: Trace, attribute: str) -> str:
    """The trace's variant under `attribute` (or `first_llm_model`): "" when the setting or the value is missing."""
    if not attribute:
        return ""
    if attribute == FIRST_LLM_MODEL:
        calls = trace.get_llm_calls()
        value = calls[0].model if calls else None
    else:
        value = attribute_value(trace, attribute)
    return (value or "").strip()[:MAX_VARIANT_CHARS]


def normalised_input(text: str | None) -> str | None:
    """`text` with case and runs of whitespace ignored; None when there is no text."""
    if not text:
        return None
    words = text.casefold().split()
    return " ".join(words) if words else None


def pair_key(trace: Trace, pair_by: str) -> str | None:
    """What two variants' traces must share to be judged as a pair: the `pair_by` attribute's value, or with
    `input` a digest of the normalised user input; None when the trace has none."""
    if pair_by == PAIR_BY_INPUT:
        text = normalised_input(trace.input)
        return None if text is None else "input:" + hashlib.sha256(text.encode()).hexdigest()
    value = attribute_value(trace, pair_by)
    return None if value is None or not value.strip() else f"{pair_by}:{value.strip()}"


def pair_keys(trace: Trace, variant: str, config: VariantsConfig) -> tuple[tuple[str, str], ...]:
    """((pair_by, key), ...) for every distinct `pair_by` of the pairwise entries that include `variant`."""
    if not variant or not config.pairwise:
        return ()
    keys: dict[str, str] = {}
    for entry in config.pairwise:
        if variant in (entry.baseline, entry.candidate) and entry.pair_by not in keys:
            key = pair_key(trace, entry.pair_by)
            if key is not None:
                keys[entry.pair_by] = key
    return tuple(keys.items())


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
