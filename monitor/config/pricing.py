"""The `pricing` config section: prices that add to or override the genai-prices table (negotiated discounts,
self-hosted models), in USD per 1K or 1M tokens."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, PrivateAttr, field_validator

from evaluators.pricing import ModelPrice

from .units import Section

_PER = {"1K": 1_000, "1M": 1_000_000}
Rate = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class ModelPriceConfig(Section):
    """One model's price in USD per `per` tokens (1K or 1M; no default, so a price is never read at the wrong
    scale). Cache reads and writes cost the input rate unless given."""

    input: Rate
    output: Rate
    cache_read: Rate | None = None
    cache_write: Rate | None = None
    per: Literal["1K", "1M"]

    @field_validator("per", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    def model_price(self) -> ModelPrice:
        """This price per 1M tokens, as `evaluators.pricing` takes it."""
        scale = 1_000_000 / _PER[self.per]

        def scaled(rate: float | None) -> float | None:
            return None if rate is None else rate * scale

        return ModelPrice(self.input * scale, self.output * scale, scaled(self.cache_read), scaled(self.cache_write))


class PricingConfig(Section):
    """`models`: a model name (as spans name it; matched exactly, then without a `provider/` prefix and case, then
    as a glob such as `my-llama-*`, then as a name the model is a dated version of: `gpt-4o` prices
    `gpt-4o-2024-08-06`, not `gpt-4o-mini`) → its price, winning over the price table."""

    models: dict[Annotated[str, Field(min_length=1)], ModelPriceConfig] = Field(default_factory=dict)

    _overrides: dict[str, ModelPrice] | None = PrivateAttr(default=None)

    def overrides(self) -> dict[str, ModelPrice]:
        """The overrides per 1M tokens: one mapping per config, so every part prices with the same object."""
        if self._overrides is None:
            self._overrides = {name: price.model_price() for name, price in self.models.items()}
        return self._overrides


__all__ = ["ModelPriceConfig", "PricingConfig"]
