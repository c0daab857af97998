"""A conversation's turn on the wire: what an evaluation worker sends the main process for each evaluated trace
with a session id (the tally carries it, like the judge jobs), as builtins and tuples so it pickles small."""

from __future__ import annotations

from typing import NamedTuple

from evaluators.sessions import SessionRef, Turn, TurnError

TurnWire = tuple  # (session id, source, the Turn's fields in order, errors as (kind, name, message, error type) tuples;
# a turn written before the error type was kept has 3-tuples, read with the type "")


class TrackedTurn(NamedTuple):
    """One turn of one session, as the session tracker takes it."""

    session_id: str
    source: str  # the attribute the session id came from
    turn: Turn


def turn_wire(ref: SessionRef, turn: Turn) -> TurnWire:
    """The wire form of `turn` of session `ref`."""
    return (
        ref.session_id,
        ref.source,
        turn.trace_id,
        turn.start_ns,
        turn.end_ns,
        turn.user_message,
        turn.answer,
        turn.tool_calls,
        tuple((e.kind, e.name, e.message, e.error_type) for e in turn.errors),
        turn.agents,
        turn.input_tokens,
        turn.output_tokens,
        turn.cost_usd,
        turn.service,
    )


def turn_of_wire(wire: TurnWire) -> TrackedTurn:
    """The TrackedTurn a `turn_wire` tuple describes."""
    session_id, source, trace_id, start, end, user, answer, tools, errors, agents, tokens_in, tokens_out, cost, svc = (
        wire
    )
    turn = Turn(
        trace_id=trace_id,
        start_ns=start,
        end_ns=end,
        user_message=user,
        answer=answer,
        tool_calls=tuple(tools),
        errors=tuple(TurnError(*e) for e in errors),
        agents=tuple(agents),
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cost_usd=cost,
        service=svc,
    )
    return TrackedTurn(session_id, source, turn)
