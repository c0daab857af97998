"""The message parser's fast paths (a canonical role, a plain text part) read what the general code reads."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from evaluators.traces.conventions.parts import content_text, parse_parts_messages
from evaluators.traces.messages import _ROLE_ALIASES, normalize_role

_roles = st.one_of(
    st.none(),
    st.integers(),
    st.sampled_from(["user", "User", " user ", "assistant", "model", "tool", "system", "developer", "", "x"]),
    st.text(max_size=8),
)
_content = st.one_of(st.none(), st.integers(), st.text(max_size=8), st.lists(st.text(max_size=3), max_size=2))
_parts = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["text", "refusal"]) | st.none(),
        "content": _content,
        "text": _content,
        "refusal": _content,
    },
)


@settings(max_examples=300, deadline=None)
@given(_roles)
def test_normalize_role_as_the_string_work(role: Any) -> None:
    text = str(role or "").strip().lower()
    assert normalize_role(role) == _ROLE_ALIASES.get(text, text or "user")


@settings(max_examples=300, deadline=None)
@given(st.lists(_parts, min_size=1, max_size=3))
def test_text_parts_read_as_content_text(parts: list[dict]) -> None:
    [message] = parse_parts_messages([{"role": "user", "parts": parts}]) or []
    assert message.content == "\n".join(t for t in (content_text(p) for p in parts) if t)
