"""The base of every review API model: unknown fields refused, instances immutable."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ApiModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


__all__ = ["ApiModel"]
