"""The genai-prices table, fast: a model's price at a time is affine in its token counts unless it is tiered, so
its coefficients are read from the library once (by pricing unit usages with the library itself) and a call then
costs a few multiplications instead of the library's ~200 µs unit decomposition. Tiered prices, and any price the
affine form does not reproduce at a check point, are computed by the library every time."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

import genai_prices
from genai_prices import data_snapshot, types

MTOK = 1_000_000
_MAX_PRICES = 512  # distinct (model, price period) coefficient sets kept per process
_CHECK = (123_457, 2_345, 678, 9_876)  # (uncached input, cache read, cache write, output) the affine form must match

Affine = tuple[float, float, float, float, float]  # per call, per 1M: uncached input, cache read, cache write, output


def table_size() -> int:
    """How many models the bundled table prices."""
    return sum(len(provider.models) for provider in data_snapshot.get_snapshot().providers)


def find(ref: str, provider_id: str | None) -> TablePrice:
    """The table's (provider, model) for `ref`; LookupError when the library knows no such model."""
    provider, model = data_snapshot.get_snapshot().find_provider_model(ref, None, provider_id, None)
    return TablePrice(provider, model)


class TablePrice:
    """One model of one provider in the table."""

    __slots__ = ("_affine", "_last", "model", "provider")

    def __init__(self, provider: types.Provider, model: types.ModelInfo) -> None:
        self.provider = provider
        self.model = model
        self._affine: dict[Any, Affine | None] = {}
        self._last: tuple[types.ModelPrice, Affine | None] | None = None  # the last price object and its form

    def _library(self, parts: tuple[int, int, int, int], when: datetime) -> Decimal:
        plain, read, write, out = parts
        usage = genai_prices.Usage(
            input_tokens=plain + read + write, cache_read_tokens=read, cache_write_tokens=write, output_tokens=out
        )
        return self.model.calc_price(usage, self.provider, genai_request_timestamp=when).total_price

    def cost(self, parts: tuple[int, int, int, int], when: datetime) -> float:
        """USD of (uncached input, cache read, cache write, output) tokens at `when`: the library's figure."""
        prices = self.model.get_prices(when)
        last = self._last
        affine = last[1] if last is not None and last[0] is prices else self._affine_of(prices, when)
        if affine is None:
            return float(self._library(parts, when))
        fixed, a_in, a_read, a_write, a_out = affine
        plain, read, write, out = parts
        return fixed + (plain * a_in + read * a_read + write * a_write + out * a_out) / MTOK

    def _affine_of(self, prices: types.ModelPrice, when: datetime) -> Affine | None:
        """The affine form of `prices` (by value: the library may build an equal price object per call)."""
        key = tuple(
            sorted((k, v if isinstance(v, Decimal) else repr(v)) for k, v in vars(prices).items() if v is not None)
        )
        if key not in self._affine:
            if len(self._affine) >= _MAX_PRICES:
                self._affine.clear()
            self._affine[key] = self._read_affine(prices, when)
        affine = self._affine[key]
        self._last = (prices, affine)
        return affine

    def _read_affine(self, prices: types.ModelPrice, when: datetime) -> Affine | None:
        """The affine coefficients of `prices`, read from the library; None for tiered prices or when the form
        does not give the library's figure at the check point."""
        if any(isinstance(v, types.TieredPrices) for v in vars(prices).values()):
            return None
        fixed = self._library((0, 0, 0, 0), when)
        rates = [self._library(unit, when) - fixed for unit in ((MTOK, 0, 0, 0), (0, MTOK, 0, 0), (0, 0, MTOK, 0),
                                                                  (0, 0, 0, MTOK))]  # fmt: skip
        affine = (float(fixed), *(float(r) for r in rates))
        expected = float(self._library(_CHECK, when))
        got = affine[0] + sum(n * a for n, a in zip(_CHECK, affine[1:], strict=True)) / MTOK
        return affine if abs(got - expected) <= 1e-12 * max(abs(expected), 1.0) else None  # type: ignore[return-value]
