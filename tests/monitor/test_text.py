"""Terminal text: one line, bounded, and cut where a reader can still make sense of it."""

from __future__ import annotations

from monitor.text import clip, clip_at_boundary


def test_short_text_is_kept_and_long_text_is_bounded() -> None:
    assert clip_at_boundary("tool failed", 80) == clip("tool failed", 80) == "tool failed"
    for text in ("x" * 500, "word " * 100, '{"a": ' * 100, "it's " * 100):
        assert len(clip_at_boundary(text, 60)) <= 60


def test_cut_before_an_open_json_value_else_after_a_word() -> None:
    text = 'arguments {"city": "Paris", "units": "metric"} are invalid because units is not an enum value'
    assert clip(text, 40) == 'arguments {"city": "Paris", "units": "m…'
    assert clip_at_boundary(text, 40) == "arguments…"
    assert clip_at_boundary(text, 60) == 'arguments {"city": "Paris", "units": "metric"} are invalid…'
    assert clip_at_boundary('the answer quoted "a very long passage of text" at length', 30) == "the answer quoted…"
    assert clip_at_boundary("args {'city': 'Paris', 'units': 'metric'} (a Python repr)", 30) == "args…"
    assert clip_at_boundary("it's the last one of many words here", 20) == "it's the last one…"
    assert clip_at_boundary("x" * 100, 10) == "x" * 9 + "…"  # no boundary: a plain cut
    # a text that is one JSON value: after a whole element
    assert clip_at_boundary('{"a": 1, "b": [1, 2, 3, 4, 5, 6, 7]}', 20) == '{"a": 1, "b": [1…'
