"""The store's own rows: judgements waiting for the judge model as `pending_judgements` keeps them, and the stored
verdicts the start-up rebuild of the windows reads back. What an evaluation produces is in monitor/outcomes.py."""

from __future__ import annotations

from typing import Any, NamedTuple


class PendingRow(NamedTuple):
    """A judgement still waiting for the judge model, as `pending_judgements` keeps it until its result is written
    (monitor/engine/pending.py): `payload` is the job's JSON-able fields; `masked` names the texts in it that the
    store masks before writing (a judge prompt, a trace's input and output)."""

    id: str
    kind: str  # "judgement" or "pair_offer"
    created_at: float  # epoch seconds
    owner: str
    payload: dict[str, Any]
    masked: tuple[str, ...] = ()


class PendingWrite(NamedTuple):
    """Waiting judgements to keep (`added`) and to forget (`resolved`: settled without a stored result, e.g. a
    sampled-out pair), in one write through the store's queue."""

    added: tuple[PendingRow, ...] = ()
    resolved: tuple[str, ...] = ()


class StoredVerdict(NamedTuple):
    """A stored result with a verdict as the start-up rebuild of the windows reads it back (review/verdict_reads.py):
    when it was stored (epoch seconds) and the raw label values its metrics had (metrics/tally.ResultKey)."""

    at: float
    evaluator: str
    level: str
    service: str
    agent: str | None
    variant: str
    score: float | None
    passed: bool


class RecentVerdicts(NamedTuple):
    """The stored results with a verdict since a time, newest first; `complete`: none was left out (else only the
    results after `cut` are kept, the newest: a row limit or a deadline stopped the read)."""

    verdicts: list[StoredVerdict]
    complete: bool
    cut: float | None = None
