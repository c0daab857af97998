"""The source types are one table (monitor.config.sources.SOURCE_TYPES): the config union and make_source both
read it, so adding a type is its config class, its source class and one row."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal, get_args, get_type_hints

import pytest

from monitor.config import ConfigError
from monitor.config.loader import load_config
from monitor.config.sources import SOURCE_TYPES, AnySourceConfig, SourceConfig, SourceType
from monitor.sources.base import SpanFeed, TraceSource
from monitor.sources.factory import make_source, source_class

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("name", list(SOURCE_TYPES))
def test_each_row_names_a_source_class_that_takes_its_config(name: str) -> None:
    kind = SOURCE_TYPES[name]
    module, _, attr = kind.source.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    assert source_class(name) is cls
    assert get_type_hints(cls.__init__)["config"] is kind.config
    assert hasattr(cls, "close") and (hasattr(cls, "pages") or hasattr(cls, "read"))  # TraceSource or SpanFeed


def test_the_config_union_is_the_table() -> None:
    (union, _) = get_args(AnySourceConfig)
    assert get_args(union) == tuple(kind.config for kind in SOURCE_TYPES.values())
    assert list(SOURCE_TYPES) == ["jaeger", "tempo", "phoenix", "amp", "otlp_files"]


def test_an_unknown_type_lists_the_table(tmp_path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("sources:\n  - type: zipkin\n    name: z\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    expected = "'jaeger', 'tempo', 'phoenix', 'amp', 'otlp_files'"
    assert f"input tag 'zipkin' found using 'type' does not match any of the expected tags: {expected}" in str(
        caught.value
    )
    with pytest.raises(ValueError, match="unknown source type 'zipkin'"):
        source_class("zipkin")


@pytest.mark.integration
def test_the_sources_stay_unimported_until_one_is_built() -> None:
    probe = (
        "import sys\n"
        "from monitor.config import MonitorConfig\n"
        "from monitor.config.sources import SOURCE_TYPES\n"
        "from monitor.sources.factory import make_source\n"
        "config = MonitorConfig.model_validate({'sources': [{'type': 'otlp_files', 'name': 'f', 'directory': '.'}]})\n"
        "make_source(config.sources[0])\n"
        "print(sorted(k.source.split(':')[0] for k in SOURCE_TYPES.values() if k.source.split(':')[0] in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "['monitor.sources.otlp_files']"


# --- a new type: a config class, a source class, one row --------------------------------------------------


class EchoSourceConfig(SourceConfig):
    type: Literal["echo"]


class EchoSource:
    def __init__(self, config: EchoSourceConfig) -> None:
        self.name = config.name

    async def read(self, state: Any, limit: int) -> tuple[list, list, Any]:
        return [], [], state

    async def close(self) -> None:
        return None


def test_make_source_builds_any_type_of_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(SOURCE_TYPES, "echo", SourceType(EchoSourceConfig, f"{__name__}:EchoSource"))
    assert SOURCE_TYPES["echo"].name == "echo"
    source = make_source(EchoSourceConfig(type="echo", name="e"))
    assert isinstance(source, EchoSource) and isinstance(source, SpanFeed) and not isinstance(source, TraceSource)
    assert source.name == "e"
