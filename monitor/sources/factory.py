"""The source a `sources:` entry configures: the class its type's row of SOURCE_TYPES names (each type in a module
of its own, imported only when a source of that type is built)."""

from __future__ import annotations

import importlib

from monitor.config.sources import SOURCE_TYPES, AnySourceConfig
from monitor.sources.base import SpanFeed, TraceSource


def source_class(type_name: str) -> type[TraceSource | SpanFeed]:
    """The source class of a source type (ValueError for a type without a row in SOURCE_TYPES)."""
    kind = SOURCE_TYPES.get(type_name)
    if kind is None:
        raise ValueError(f"unknown source type {type_name!r}")
    module, _, name = kind.source.partition(":")
    cls: type[TraceSource | SpanFeed] = getattr(importlib.import_module(module), name)
    return cls


def make_source(config: AnySourceConfig) -> TraceSource | SpanFeed:
    """ValueError when the source cannot be set up (a token variable or file missing, TLS files unreadable)."""
    return source_class(config.type)(config)  # type: ignore[call-arg]
