"""What one LLM call cost in USD: from the `genai-prices` price table, or from an override that wins over it.

The prices are the data bundled with the installed `genai-prices` package (its bundled snapshot, read through
`_price_table`; nothing here calls `genai_prices.UpdatePrices`), so nothing here fetches prices over the
network: upgrading the package updates them. The library resolves the provider, model aliases and dated model
names, cache read/write rates and prices that changed over time (`when`, the call's start).

A model the table does not know is priced None, never 0: callers count it as unpriced.
"""

from __future__ import annotations

import fnmatch
import functools
import importlib.metadata
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal, NamedTuple

from evaluators._price_table import TablePrice, find, table_size
from evaluators.traces.conventions.base import TokenUsage

if TYPE_CHECKING:
    from evaluators.traces.spans import LLMSpan

__all__ = [
    "TOKEN_KINDS",
    "CallCost",
    "CallPrice",
    "ModelPrice",
    "call_cost",
    "price_call",
    "table_description",
    "token_kinds",
    "warm",
]

PER = 1_000_000  # override prices are per 1M tokens, like the library's


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """An override: USD per 1M tokens. Cache reads and writes cost the input rate unless given."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None


class CallPrice(NamedTuple):
    """The cost of one call in USD, where it came from, and the price entry (library model id or override key)."""

    usd: float
    source: Literal["price_table", "override"]
    entry: str
    provider: str = ""  # the library's provider id when priced from the table


class CallCost(NamedTuple):
    """What one call cost in USD and where the figure came from: the span's own cost attribute (`span`), the
    price table or an override. `provider`: the price table's provider id, else the provider the span names."""

    usd: float
    source: Literal["span", "price_table", "override"]
    provider: str


def _normalize(model: str) -> str:
    """`models/gemini-2.0-flash`, `openai/gpt-4o`, `GPT-4o` → the bare lower-case model name."""
    return model.strip().lower().rsplit("/", 1)[-1]


_VERSION_SUFFIX = re.compile(r"[-@](?:\d{8}|\d{4}-\d{2}-\d{2}|\d{3}|latest)")


def _dated(model: str, key: str) -> bool:
    """`model` is `key` with a date or version after it: `-2024-08-06`, `-20250514`, `@20240620`, `-001`,
    `-latest` (not `-mini`, not `-5`: those are other models)."""
    return model.startswith(key) and _VERSION_SUFFIX.fullmatch(model, len(key)) is not None


def _override_for(model: str, overrides: Mapping[str, ModelPrice]) -> tuple[str, ModelPrice] | None:
    """The override of `model`: its exact name, else its normalized name, else a glob (`my-llama-*`), else the
    longest listed name that `model` is a dated version of (`gpt-4o` prices `gpt-4o-2024-08-06`, not
    `gpt-4o-mini`)."""
    if model in overrides:
        return model, overrides[model]
    wanted = _normalize(model)
    best: str | None = None
    for key in overrides:
        norm = _normalize(key)
        if norm == wanted:
            return key, overrides[key]
        matches = fnmatch.fnmatchcase(wanted, norm) if "*" in norm else _dated(wanted, norm)
        if matches and (best is None or len(norm) > len(_normalize(best))):
            best = key
    return (best, overrides[best]) if best is not None else None


def _parts(usage: TokenUsage) -> tuple[int, int, int, int]:
    """(uncached input, cache read, cache write, output) tokens; cache parts never exceed the input they are in.
    (Comparisons rather than min/max: this runs for every LLM call.)"""
    total_in = usage.input_tokens if usage.input_tokens > 0 else 0
    out = usage.output_tokens if usage.output_tokens > 0 else 0
    read = usage.cache_read_tokens
    write = usage.cache_write_tokens
    if not read and not write:
        return total_in, 0, 0, out
    read = 0 if read is None or read < 0 else read if read < total_in else total_in
    rest = total_in - read
    write = 0 if write is None or write < 0 else write if write < rest else rest
    return rest - write, read, write, out


def _override_cost(usage: TokenUsage, price: ModelPrice) -> float:
    plain, read, write, out = _parts(usage)
    read_rate = price.input if price.cache_read is None else price.cache_read
    write_rate = price.input if price.cache_write is None else price.cache_write
    return (plain * price.input + read * read_rate + write * write_rate + out * price.output) / PER


@functools.lru_cache(maxsize=1024)  # model names are few; unknown ones are not looked up again
def _resolve(model: str, provider: str | None) -> TablePrice | None:
    """The table entry the library knows `model` by: as given, the name after a `provider/` prefix (the prefix
    as the provider), then without the provider; None when it knows none of them."""
    candidates: list[tuple[str, str | None]] = [(model, provider)]
    if "/" in model:
        head, tail = model.rsplit("/", 1)
        candidates += [(tail, provider or head.rsplit("/", 1)[-1]), (tail, None)]
    if provider is not None:
        candidates.append((model, None))
    for ref, prov in candidates:
        try:
            return find(ref, prov)
        except LookupError:
            continue
    return None


def warm(models: Iterable[str] = (), provider: str | None = None) -> None:
    """Load the price table and resolve `models` now (~35 ms the first time), so that the first call priced on
    an event loop does not stall it."""
    for model in models:
        entry = _resolve(model, provider)
        if entry is not None:
            entry.cost((1, 0, 0, 1), datetime.now(UTC))
    table_size()


def table_description() -> str:
    """Which price table is in use: the installed genai-prices version and how many models it prices."""
    return f"genai-prices {importlib.metadata.version('genai-prices')} bundled table ({table_size()} models)"


def price_call(
    model: str | None,
    usage: TokenUsage,
    *,
    provider: str | None = None,
    when: datetime | None = None,
    overrides: Mapping[str, ModelPrice] | None = None,
) -> CallPrice | None:
    """The cost of one call of `model` (by `provider`, at `when`, default now): an override of the model wins
    over the price table; None when neither knows the model (never a silent 0)."""
    if not model:
        return None
    if overrides:
        found = _override_for(model, overrides)
        if found is not None:
            return CallPrice(_override_cost(usage, found[1]), "override", found[0])
    entry = _resolve(model, provider or None)
    if entry is None:
        return None
    usd = entry.cost(_parts(usage), when or datetime.now(UTC))
    return CallPrice(usd, "price_table", entry.model.id, entry.provider.id)


_MEMO = "_call_cost"  # the attribute of an LLMSpan that remembers its cost under one overrides mapping


def call_cost(call: LLMSpan, overrides: Mapping[str, ModelPrice] | None = None) -> CallCost | None:
    """The cost of one LLM call: the cost its span reports (a finite number ≥ 0) wins; else its usage priced at
    its start time (`price_call`); None when it has no usage or no known price. Remembered on the span for the
    same `overrides` (the same mapping object, or none), so the spend metrics and cost_budget price it once."""
    key = overrides or None
    memo = call.__dict__.get(_MEMO)
    if memo is not None and memo[0] is key:
        return memo[1]
    cost = _call_cost(call, key)
    call.__dict__[_MEMO] = (key, cost)
    return cost


def _call_cost(call: LLMSpan, overrides: Mapping[str, ModelPrice] | None) -> CallCost | None:
    provider = call.provider or ""
    reported = call.metrics.cost
    if isinstance(reported, int | float) and math.isfinite(reported) and reported >= 0:
        return CallCost(float(reported), "span", provider)
    usage = call.usage
    if usage is None:
        return None
    when = _at_second(call.start_time // 1_000_000_000) if call.start_time > 0 else None
    priced = price_call(call.model, usage, provider=call.provider, when=when, overrides=overrides)
    if priced is None:
        return None
    return CallCost(priced.usd, priced.source, priced.provider or provider)


@functools.lru_cache(maxsize=256)  # a batch's calls start within a few seconds of each other
def _at_second(seconds: int) -> datetime:
    """The UTC datetime of a Unix second: prices change by the day, a call is priced at its start second."""
    return datetime.fromtimestamp(seconds, UTC)


TOKEN_KINDS = ("input", "cache_read", "cache_write", "output", "reasoning")


def token_kinds(usage: TokenUsage) -> tuple[int, int, int, int, int]:
    """The tokens of `usage` by kind, in TOKEN_KINDS order, as disjoint parts that sum to input + output:
    input (not from or to a cache), cache_read, cache_write, output (not reasoning), reasoning."""
    plain, read, write, out = _parts(usage)
    reasoning = min(max(usage.reasoning_tokens or 0, 0), out)
    return plain, read, write, out - reasoning, reasoning
