"""The `sessions` config section: conversations tracked across traces (each turn one trace), when one is complete,
and the bounds on what the daemon holds of open ones."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from .units import Duration, Label, Section


class SessionsConfig(Section):
    """`idle`: a session with no new turn for this long is complete and its session-level evaluators run.
    `max_open_sessions`: sessions held open at once; beyond it the longest-idle one is completed early (ended
    `cut`); as many completed session ids are remembered, so a turn for one of them is counted late, not
    re-evaluated. `max_turns`: turns kept per session; later ones are counted (`turns_cut`), not kept.
    `max_open_turns`: turns held in all open sessions; beyond it the longest-idle session is completed early
    (ended `cut`): with `max_open_sessions` it bounds the memory (a turn keeps at most 2 × 2000 characters).
    `attribute`: span or resource attribute names tried for the session id before each convention's own.
    Open sessions live in the result store when it is enabled (a restart neither cuts nor splits them; SQLite
    always), in memory without one (completed as `cut` at shutdown). `shared`: with a PostgreSQL result store
    (`store.url`), open sessions live in it, shared by every replica (turns of one conversation reach different
    replicas), and each is evaluated once, by the replica that claims it; false: each replica holds the turns it
    receives in memory."""

    enabled: bool = True
    idle: Duration = 900.0
    max_open_sessions: Annotated[int, Field(ge=1)] = 10_000
    max_turns: Annotated[int, Field(ge=1)] = 200
    max_open_turns: Annotated[int, Field(ge=1)] = 50_000
    attribute: list[Label] = Field(default_factory=list)
    shared: bool = True
