"""Value types shared by the config models: the strict section base, durations, sizes, ports, ratios, labels."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from .config_load import parse_duration, parse_size

MiB = 1024 * 1024

Duration = Annotated[float, BeforeValidator(parse_duration), Field(gt=0)]
NonNegativeDuration = Annotated[float, BeforeValidator(parse_duration), Field(ge=0)]
Size = Annotated[int, BeforeValidator(parse_size), Field(gt=0)]
Port = Annotated[int, Field(ge=0, le=65535)]
Ratio = Annotated[float, Field(ge=0, le=1)]
Label = Annotated[str, Field(min_length=1, pattern=r"^\S+$")]


class Section(BaseModel):
    """Base of every config model: unknown keys are errors, values are re-validated on assignment."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)
