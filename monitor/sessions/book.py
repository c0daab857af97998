"""SessionBook: the open sessions of this process, and when each is complete. Plain bookkeeping on the event loop
thread: no I/O, no evaluation, the time given by a clock the tests replace.

Open sessions are kept in order of their last turn's arrival (an OrderedDict moved to the end on every turn), so
the idle ones and the longest-idle one are at the front: finding what is due costs only what is due. Idle time
is counted from the arrival of a session's last turn on this clock, not from the spans' timestamps (the
senders' clocks, and turns may arrive out of order).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from evaluators.sessions import Ending, Session
from monitor.config.sessions import SessionsConfig
from monitor.engine.turn_wire import TrackedTurn

CUT_FOR_ROOM = "max_open_sessions"
CUT_FOR_TURNS = "max_open_turns"
CUT_AT_SHUTDOWN = "shutdown"


class _Open:
    __slots__ = ("last_seen", "session")

    def __init__(self, session: Session, last_seen: float) -> None:
        self.session = session
        self.last_seen = last_seen


class SessionBook:
    """Turns in, complete sessions out.

    `add` a turn to its session (a new one opens; beyond `max_open_sessions` sessions, or `max_open_turns` turns
    held in all, the longest-idle other session is completed early as `cut` and returned); `due` takes the
    sessions idle for `idle` seconds; `close_all` takes
    every open one (shutdown: `cut`). A session keeps at most `max_turns` turns (later ones are counted in its
    `turns_cut` and in `turns_cut` here). The ids of the last `max_open_sessions` completed sessions are
    remembered: a turn for one of them is counted in `late_turns` and dropped. A turn whose trace the session has
    already is ignored (counted in `duplicate_turns`)."""

    def __init__(
        self,
        idle: float,
        max_open_sessions: int,
        max_turns: int,
        *,
        max_open_turns: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.idle = idle
        self.max_open_sessions = max_open_sessions
        self.max_turns = max_turns
        self.max_open_turns = max_open_turns if max_open_turns is not None else max_open_sessions * max_turns
        self.clock = clock
        self.wall = wall  # a completed session's `completed_at` (epoch seconds: what the store keeps)
        self._open: OrderedDict[str, _Open] = OrderedDict()
        self._completed: OrderedDict[str, None] = OrderedDict()
        self.late_turns = 0
        self.turns_cut = 0
        self.duplicate_turns = 0
        self.cut: dict[str, int] = {CUT_FOR_ROOM: 0, CUT_FOR_TURNS: 0, CUT_AT_SHUTDOWN: 0}
        self.turns_held = 0

    @classmethod
    def from_config(cls, config: SessionsConfig, *, clock: Callable[[], float] = time.monotonic) -> SessionBook:
        return cls(
            config.idle, config.max_open_sessions, config.max_turns, max_open_turns=config.max_open_turns, clock=clock
        )

    @property
    def open_sessions(self) -> int:
        return len(self._open)

    def is_open(self, session_id: str) -> bool:
        return session_id in self._open

    def add(self, item: TrackedTurn) -> list[Session]:
        """Add one turn; returns the sessions completed early to make room for a new one (usually none)."""
        session_id = item.session_id
        if session_id in self._completed:
            self.late_turns += 1
            return []
        now = self.clock()
        entry = self._open.get(session_id)
        made_room: list[Session] = []
        if entry is None:
            while len(self._open) >= self.max_open_sessions:
                made_room.append(self._complete(next(iter(self._open)), "cut"))
                self.cut[CUT_FOR_ROOM] += 1
            entry = self._open[session_id] = _Open(Session(session_id, [], item.source), now)
        else:
            entry.last_seen = now
            self._open.move_to_end(session_id)
        session = entry.session
        trace_id = item.turn.trace_id
        if any(t.trace_id == trace_id for t in session.turns):
            self.duplicate_turns += 1
        elif len(session.turns) >= self.max_turns:
            session.turns_cut += 1
            self.turns_cut += 1
        else:
            session.add(item.turn)
            self.turns_held += 1
            while self.turns_held > self.max_open_turns and len(self._open) > 1:
                made_room.append(self._complete(next(iter(self._open)), "cut"))  # this session is the last
                self.cut[CUT_FOR_TURNS] += 1
        return made_room

    def due(self) -> list[Session]:
        """The sessions with no new turn for `idle` seconds, completed (`ended="idle"`), longest-idle first."""
        cutoff = self.clock() - self.idle
        done: list[Session] = []
        while self._open:
            session_id, entry = next(iter(self._open.items()))
            if entry.last_seen > cutoff:
                break
            done.append(self._complete(session_id, "idle"))
        return done

    def close_all(self) -> list[Session]:
        """Every open session, completed as `cut` (the daemon stops: they may not be over)."""
        done = [self._complete(session_id, "cut") for session_id in list(self._open)]
        self.cut[CUT_AT_SHUTDOWN] += len(done)
        return done

    def _complete(self, session_id: str, ended: Ending) -> Session:
        entry = self._open.pop(session_id)
        self.turns_held -= len(entry.session.turns)
        entry.session.ended = ended
        entry.session.completed_at = self.wall()
        self._completed[session_id] = None
        if len(self._completed) > self.max_open_sessions:
            self._completed.popitem(last=False)
        return entry.session
