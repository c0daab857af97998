"""evaluators._price_table: the fast path gives genai-prices' own figure for every model of the bundled table
(affine ones from coefficients read from the library, tiered ones from the library itself), for any usage."""

from __future__ import annotations

from datetime import UTC, datetime

import genai_prices
import pytest
from genai_prices import data_snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluators._price_table import TablePrice

WHEN = datetime(2025, 9, 1, tzinfo=UTC)


def _priced(provider, model) -> bool:
    try:
        model.calc_price(genai_prices.Usage(input_tokens=1, output_tokens=1), provider, genai_request_timestamp=WHEN)
    except Exception:  # a model with no price at WHEN, or one the library prices by other units only
        return False
    return True


ENTRIES = [(p, m) for p in data_snapshot.get_snapshot().providers for m in p.models if _priced(p, m)]
usages = st.tuples(*[st.integers(0, 3_000_000)] * 4).map(lambda t: (t[0], min(t[1], t[0]), t[2], t[3]))


def _library(provider, model, parts: tuple[int, int, int, int]) -> float:
    plain, read, write, out = parts
    usage = genai_prices.Usage(
        input_tokens=plain + read + write, cache_read_tokens=read, cache_write_tokens=write, output_tokens=out
    )
    return float(model.calc_price(usage, provider, genai_request_timestamp=WHEN).total_price)


def test_the_table_has_affine_and_tiered_models() -> None:
    assert len(ENTRIES) > 500
    tiered = [m for _, m in ENTRIES if "TieredPrices" in repr(vars(m.get_prices(WHEN)))]
    assert tiered, "no tiered model left: the library path is untested"


@settings(max_examples=300, deadline=None)
@given(index=st.integers(0, 10**9), parts=usages)
def test_every_model_costs_the_librarys_figure(index: int, parts: tuple[int, int, int, int]) -> None:
    provider, model = ENTRIES[index % len(ENTRIES)]
    entry = TablePrice(provider, model)
    assert entry.cost(parts, WHEN) == pytest.approx(_library(provider, model, parts), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("ref", ["gemini-2.5-pro", "claude-sonnet-4-20250514"])
def test_tiered_prices_cross_their_tier_as_the_library_does(ref: str) -> None:
    provider, model = data_snapshot.get_snapshot().find_provider_model(ref, None, None, None)
    entry = TablePrice(provider, model)
    for tokens in (1_000, 199_999, 200_001, 900_000):
        parts = (tokens, 0, 0, 1_000)
        assert entry.cost(parts, WHEN) == pytest.approx(_library(provider, model, parts), rel=1e-12)
