"""Config value types: durations and sizes parsed from text, ports, ratios, labels, and the strict section base."""

from __future__ import annotations

import math
import re
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)")
_SIZE = re.compile(r"(\d+)\s*(b|kb|kib|mb|mib|gb|gib)?", re.IGNORECASE)
_SIZE_UNITS = {"b": 1, "kb": 1000, "kib": 1024, "mb": 1000**2, "mib": 1024**2, "gb": 1000**3, "gib": 1024**3}


def parse_duration(value: object) -> float:
    """Seconds from a number or text like "250ms", "5s", "2m", "1h", "7d" (or "1h30m")."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration, got {value!r}")
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise ValueError(f"expected a finite duration, got {value!r}")
        return float(value)
    if not isinstance(value, str):
        raise ValueError(f"expected a duration like 5s, 2m or 1h, got {value!r}")
    text = value.strip().lower()
    try:
        return parse_duration(float(text))
    except ValueError:
        pass
    parts = _duration_parts(text)
    if not parts:
        shown = value if len(value) <= 40 else value[:40] + "…"
        raise ValueError(f"invalid duration {shown!r}: use seconds or a number with ms, s, m, h or d (e.g. 5s, 2m)")
    return sum(float(number) * _DURATION_UNITS[unit] for number, unit in parts)


def _duration_parts(text: str) -> list[tuple[str, str]]:
    """The (number, unit) parts of `text` ("1h 30m"), [] unless all of it is such parts. One left-to-right
    pass, so linear in the text's length (a search from every position, as `findall`, is quadratic on a run of
    digits without a unit)."""
    parts: list[tuple[str, str]] = []
    position, end = 0, len(text)
    while position < end:
        match = _DURATION_PART.match(text, position)
        if match is None:
            return []
        parts.append((match[1], match[2]))
        position = match.end()
        while position < end and text[position].isspace():
            position += 1
    return parts


def parse_size(value: object) -> int:
    """Bytes from an int or text like "16MiB", "512KiB", "4MB"."""
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(f"expected a size in bytes, got {value!r}")
    if isinstance(value, int | float):
        return int(value)
    match = _SIZE.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"invalid size {value!r}: use bytes or a number with KiB, MiB, GiB, KB, MB or GB")
    return int(match[1]) * _SIZE_UNITS[(match[2] or "b").lower()]


# --- loading ------------------------------------------------------------------------------------


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
