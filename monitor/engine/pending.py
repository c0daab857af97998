"""Waiting judgements kept in the result store, so that a restart does them (docs/durability.md).

A judgement waits for the judge model for seconds (a trace's LLM judgement, `JudgeJob`), a pairwise offer for its
partner for up to its entry's `window` and then for the pair's judgement: each is kept as a `pending_judgements`
row (schema.py version 9) written through the store's queue when it is accepted, before the intake log's release
of the batch that produced it, and forgotten in the transaction that writes its result. At start the rows of the
runs that are gone are adopted (`PendingKeeper.adopt`) and submitted again (pending_resume.py).

Ownership: every row names the run that holds it (`owner`, new at each start). With SQLite one daemon owns the
file: it adopts every row another run left. With PostgreSQL every replica heartbeats its owner id
(`pending_owners.seen_at`, by the database's clock, every third of `store.poll_lease`) and adopts the rows of
owners not seen for the lease, one replica at a time (postgres/pending_owners.py): a live replica's rows are
never taken.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import uuid
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple, Protocol

from evaluators.judges import JudgeRequest
from evaluators.sessions import Session, Turn, TurnError
from monitor.engine.pairing import PairOffer
from monitor.outcomes import JudgeJob
from monitor.store.rows import PendingRow, PendingWrite

JUDGEMENT = "judgement"
PAIR_OFFER = "pair_offer"
SESSION = "session"  # a completed conversation's session-level LLM judgements (monitor/sessions/judging.py)
EXPIRED = "expired while the daemon was down"  # the skip of a kept judgement older than judges.pending_max_age
_JOB_FIELDS = ("trace_id", "service", "evaluator", "level", "span_id", "agent", "model", "variant", "version")
_OFFER_FIELDS = ("trace_id", "service", "variant", "input", "output")


class Stored(NamedTuple):
    """A waiting judgement read back: its row id, kind, when it was accepted (epoch seconds) and its payload."""

    id: str
    kind: str
    created_at: float
    payload: dict[str, Any]


class PendingTables(Protocol):
    """A store's `pending_tables`: how its database adopts the rows of runs that are gone, and heartbeats."""

    SHARED: bool  # several replicas share the rows (PostgreSQL): heartbeat and adopt all along

    def adopt(self, db: Any, owner: str, lease: float) -> list[tuple]: ...

    def beat(self, db: Any, owner: str) -> None: ...

    def release(self, db: Any, owner: str) -> None: ...


class KeepingStore(Protocol):
    """What the keeper needs of the result store (writer.QueuedResultStore)."""

    pending_tables: PendingTables | None

    def write(self, outcomes: Sequence[Any], wait: float = 0.0) -> None: ...

    def transaction(self, work: Any) -> Any: ...

    def flush(self, timeout: float = 30.0) -> bool: ...


def new_owner() -> str:
    """An owner id for this run: the host and process, and a random part (a restarted process is another run)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


class PendingKeeper:
    """The waiting judgements of this run in `store` (see the module docstring)."""

    def __init__(self, store: KeepingStore, lease: float, owner: str | None = None) -> None:
        if store.pending_tables is None:
            raise ValueError("this result store keeps no waiting judgements")
        self.store = store
        self.tables: PendingTables = store.pending_tables
        self.lease = lease
        self.owner = owner if owner is not None else new_owner()
        self._sequence = itertools.count()

    @property
    def shared(self) -> bool:
        return self.tables.SHARED

    def new_id(self) -> str:
        """A row id: unique, and in submission order within this run (rows kept at once have one `created_at`)."""
        return f"{next(self._sequence):012x}{uuid.uuid4().hex[:20]}"

    def keep(self, rows: Sequence[PendingRow]) -> None:
        """Queue `rows` for the store's writer (a full queue drops them, counted by the store: not kept)."""
        if rows:
            self.store.write([PendingWrite(tuple(rows))])

    def forget(self, ids: Iterable[str]) -> None:
        """Queue the removal of rows settled without a stored result (a sampled-out pair)."""
        resolved = tuple(ids)
        if resolved:
            self.store.write([PendingWrite(resolved=resolved)])

    def adopt(self) -> list[Stored]:
        """The rows of the runs that are gone, now this run's, oldest first (blocking: run it in a thread).
        Raises when the store cannot be read."""
        rows = self.store.transaction(lambda db: self.tables.adopt(db, self.owner, self.lease))
        return sorted((Stored(key, kind, float(at), _loads(payload)) for key, kind, at, payload in rows),
                      key=lambda s: (s.created_at, s.id))  # fmt: skip

    def beat(self) -> None:
        """Tell the other replicas this run is alive (blocking). Raises when the store cannot be written."""
        self.store.transaction(lambda db: self.tables.beat(db, self.owner))

    def release(self, flush_seconds: float) -> None:
        """This run stops: once what it queued is written (`flush_seconds` at most), the rows it still holds may
        be adopted at once (blocking). Raises when the store cannot be written."""
        self.store.flush(flush_seconds)
        self.store.transaction(lambda db: self.tables.release(db, self.owner))

    # --- rows ---------------------------------------------------------------------------------
    def job_row(self, job: JudgeJob, key: str, now: float) -> PendingRow:
        request: JudgeRequest = job.request
        payload = {name: getattr(job, name) for name in _JOB_FIELDS}
        payload.update(system=request.system, prompt=request.prompt, request_model=request.model,
                       num_samples=request.num_samples, schema=request.schema)  # fmt: skip
        return PendingRow(key, JUDGEMENT, now, self.owner, payload, ("prompt",))

    def offer_row(self, offer: PairOffer, entry: Sequence[str], key: str, now: float) -> PendingRow:
        payload: dict[str, Any] = {name: getattr(offer, name) for name in _OFFER_FIELDS}
        payload.update(pair_keys=[list(k) for k in offer.pair_keys], entry=list(entry))
        return PendingRow(key, PAIR_OFFER, now, self.owner, payload, ("input", "output"))

    def session_row(self, session: Session, labels: Sequence[str], key: str, now: float) -> PendingRow:
        """A completed session waiting for its session-level judges `labels`: its turns, their texts apart
        (masked)."""
        turns, texts = [], []
        for t in session.turns:
            errors = [[e.kind, None, None, e.error_type] for e in t.errors]
            turns.append([t.trace_id, t.start_ns, t.end_ns, None, None, list(t.tool_calls), errors, list(t.agents),
                          t.input_tokens, t.output_tokens, t.cost_usd, t.service])  # fmt: skip
            texts += [t.user_message, t.answer, *(text for e in t.errors for text in (e.name, e.message))]
        payload = {"session_id": session.session_id, "source": session.source, "ended": session.ended,
                   "turns_cut": session.turns_cut, "completed_at": session.completed_at, "labels": list(labels),
                   "turns": turns, "texts": texts}  # fmt: skip
        return PendingRow(key, SESSION, now, self.owner, payload, ("texts",))


def session_of(payload: dict[str, Any]) -> tuple[Session, list[str]]:
    """The Session of a kept session judgement (`PendingKeeper.session_row`) and its judges' labels."""
    texts = iter(payload["texts"])
    turns = []
    for trace_id, start, end, _, _, tools, errors, agents, tokens_in, tokens_out, cost, service in payload["turns"]:
        user, answer = next(texts), next(texts)
        kept_errors = tuple(
            TurnError(kind, next(texts) or "", next(texts) or "", etype) for kind, _, _, etype in errors
        )
        figures = {"input_tokens": tokens_in, "output_tokens": tokens_out, "cost_usd": cost, "service": service}
        turns.append(Turn(trace_id, start, end, user, answer, tuple(tools), kept_errors, tuple(agents), **figures))
    session = Session(payload["session_id"], turns, payload["source"], payload["ended"], payload["turns_cut"])
    session.completed_at = payload["completed_at"]
    return session, list(payload["labels"])


def job_of(payload: dict[str, Any]) -> JudgeJob:
    """The JudgeJob of a stored judgement (`PendingKeeper.job_row`)."""
    request = JudgeRequest(
        payload["system"], payload["prompt"], payload["request_model"], payload["num_samples"], payload["schema"]
    )
    fields = {name: payload[name] for name in _JOB_FIELDS}
    return JudgeJob(request=request, **fields)


def offer_of(payload: dict[str, Any]) -> tuple[tuple[str, ...], PairOffer]:
    """The pairwise entry (evaluator, baseline, candidate, pair_by) and the PairOffer of a stored offer."""
    keys = tuple((str(k), str(v)) for k, v in payload["pair_keys"])
    offer = PairOffer(payload["trace_id"], payload["service"], payload["variant"], keys, payload["input"],
                      payload["output"])  # fmt: skip
    return tuple(payload["entry"]), offer


def _loads(payload: Any) -> dict[str, Any]:
    return json.loads(payload) if isinstance(payload, str) else dict(payload)
