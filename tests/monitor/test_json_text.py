"""monitor/json_text.py: orjson's JSON, read back as the standard library's would be, and its fallbacks."""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
from typing import NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.json_text import compact_json, compact_json_or_str

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text() | st.integers(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(values)
def test_any_json_value_reads_back_as_the_standard_library_writes_it(value: object) -> None:
    """Lone surrogates, integers past 64 bits, int keys and non-ASCII text included (hypothesis draws them)."""
    expected = json.loads(json.dumps(value, ensure_ascii=False))
    for encode in (compact_json, compact_json_or_str):
        text = encode(value)
        assert json.loads(text) == expected


class Point(NamedTuple):
    x: int
    y: float


class Score(float):
    pass


@dataclasses.dataclass
class Thing:
    name: str


def test_what_orjson_does_not_know_is_written_as_the_standard_library_did() -> None:
    assert compact_json({"p": Point(1, 2.5), "s": Score(0.5)}) == '{"p":[1,2.5],"s":0.5}'
    moment = datetime.datetime(2026, 12, 4, 12, 0, tzinfo=datetime.UTC)
    assert json.loads(compact_json_or_str({"t": moment, "d": Thing("x"), "set": {1}})) == {
        "t": str(moment),
        "d": str(Thing("x")),
        "set": str({1}),
    }
    with pytest.raises(TypeError):
        compact_json({"d": Thing("x")})


def test_a_lone_surrogate_and_a_big_integer_go_to_the_standard_library() -> None:
    assert compact_json(["\ud800", 2**70]) == '["\ud800",1180591620717411303424]'


def test_nan_is_null_and_non_ascii_is_kept() -> None:
    assert compact_json({"n": math.nan, "i": -math.inf, "é": "€"}) == '{"n":null,"i":null,"é":"€"}'
