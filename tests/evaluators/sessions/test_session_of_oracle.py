"""`session_of` reads each attribute map once (a set intersection per map, the best name so far kept): on random
traces it must answer what the straightforward version answers, which tries every name in priority order over
every map. That version is kept here as the oracle."""

from __future__ import annotations

import json
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from evaluators.sessions import SESSION_ATTRIBUTES, SessionRef, session_of
from evaluators.sessions.ids import MAX_ID, MAX_METADATA, METADATA_ATTRIBUTE, METADATA_KEYS
from evaluators.traces.model import Trace
from tests.support.spanfactory import make_span, trace_of


def _text(value: object) -> str | None:
    if isinstance(value, str):
        text = value.strip()
    elif isinstance(value, int) and not isinstance(value, bool):
        text = str(value)
    else:
        return None
    return text[:MAX_ID] or None


def _from_metadata(value: object) -> SessionRef | None:
    if isinstance(value, str):
        if len(value) > MAX_METADATA or not value.lstrip().startswith("{"):
            return None
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return None
    if not isinstance(value, dict):
        return None
    for key in METADATA_KEYS:
        text = _text(value.get(key))
        if text is not None:
            return SessionRef(text, f"{METADATA_ATTRIBUTE}.{key}")
    return None


def oracle(trace: Trace, extra_attributes: Sequence[str] = ()) -> SessionRef | None:
    """Every name in priority order, over every map (root spans first, each span's resource the first time met);
    then the `metadata` keys over the same maps."""
    ids = {id(r) for r in trace.roots}
    spans = [*trace.roots, *(s for s in trace.spans if id(s) not in ids)]
    maps: list[dict] = []
    seen: set[int] = set()
    for span in spans:
        maps.append(span.record.attributes)
        if id(span.record.resource_attributes) not in seen:
            seen.add(id(span.record.resource_attributes))
            maps.append(span.record.resource_attributes)
    for name in (*extra_attributes, *SESSION_ATTRIBUTES):
        for attributes in maps:
            text = _text(attributes.get(name))
            if text is not None:
                return SessionRef(text, name)
    for attributes in maps:
        ref = _from_metadata(attributes.get(METADATA_ATTRIBUTE))
        if ref is not None:
            return ref
    return None


_NAMES = [*SESSION_ATTRIBUTES, METADATA_ATTRIBUTE, "app.session", "app.thread", "other"]
_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.sampled_from(["", "  ", "a", "b", " c ", "x" * 300]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.dictionaries(st.sampled_from([*METADATA_KEYS, "x"]), st.sampled_from(["", "m1", 7, None]), max_size=3),
    st.dictionaries(st.sampled_from([*METADATA_KEYS, "x"]), st.sampled_from(["", "m2", " "]), max_size=3).map(
        json.dumps
    ),
)
_maps = st.dictionaries(st.sampled_from(_NAMES), _values, max_size=5)
# Each span: its attributes, its parent (an index among the earlier spans, or None: a root), its resource (an
# index into a pool of shared resource dicts) and its start time (roots are ordered by it).
_spans = st.lists(
    st.tuples(_maps, st.one_of(st.none(), st.integers(0, 10)), st.integers(0, 2), st.integers(1, 50)),
    min_size=1,
    max_size=8,
)
_extra = st.lists(st.sampled_from(_NAMES), max_size=4)


def _trace(spans: list[tuple[dict, int | None, int, int]], resources: list[dict]) -> Trace:
    records = []
    for index, (attributes, parent, resource, start) in enumerate(spans):
        parent_record = records[parent % index] if parent is not None and index else None
        record = make_span(f"s{index}", attributes, parent=parent_record, start=start, end=start + 5)
        record.resource_attributes = resources[resource]  # shared, as spans of one process share their resource
        records.append(record)
    return trace_of(*records)


@settings(max_examples=400, deadline=None)
@given(spans=_spans, resources=st.lists(_maps, min_size=3, max_size=3), extra=_extra)
def test_session_of_answers_as_the_priority_ordered_walk(
    spans: list[tuple[dict, int | None, int, int]], resources: list[dict], extra: list[str]
) -> None:
    trace = _trace(spans, resources)
    assert session_of(trace, extra) == oracle(trace, extra)
    assert session_of(trace, tuple(extra)) == oracle(trace, extra)


def test_a_lower_priority_name_on_the_root_gives_way_to_a_higher_one_further_down() -> None:
    root = make_span("root", {"gen_ai.conversation.id": "genai", "metadata": '{"session_id": "m"}'}, start=1)
    child = make_span("child", {"session.id": "oi"}, parent=root, start=2)
    trace = trace_of(root, child)
    assert session_of(trace) == oracle(trace) == ("oi", "session.id")
    assert session_of(trace, ["gen_ai.conversation.id"]) == ("genai", "gen_ai.conversation.id")
    assert session_of(trace, ["metadata"]) == ('{"session_id": "m"}', "metadata")  # a configured name, read as text
