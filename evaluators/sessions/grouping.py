"""Offline: traces (files, a dataset) grouped into sessions by their session ids."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from .ids import session_of
from .model import Session, Turn

if TYPE_CHECKING:
    from evaluators.pricing import ModelPrice
    from evaluators.traces.model import Trace

__all__ = ["group_sessions"]


def group_sessions(
    traces: Iterable[Trace],
    extra_attributes: Sequence[str] = (),
    prices: Mapping[str, ModelPrice] | None = None,
) -> list[Session]:
    """The sessions of `traces` (traces without a session id left out), each complete (`ended="idle"`: the
    files hold all that was recorded), in order of their first turn."""
    sessions: dict[str, Session] = {}
    for trace in traces:
        ref = session_of(trace, extra_attributes)
        if ref is None:
            continue
        session = sessions.get(ref.session_id)
        if session is None:
            session = sessions[ref.session_id] = Session(ref.session_id, [], ref.source, "idle")
        session.add(Turn.from_trace(trace, prices))
    return sorted(sessions.values(), key=lambda s: (s.start_ns, s.session_id))
