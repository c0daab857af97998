"""Failure signatures in the result store: each write's sightings upserted in the transaction of its results.

A failing result with a signature (engine/signing.py) is packed as a `Sighting` beside its `results` row (which
keeps the signature's id). At write time the sightings are summed per signature (`batched`: one `Batch` each; its
template and example masked like every text a trace brings), and in the write's transaction each signature is
upserted by one multi-row statement, the same on SQLite and PostgreSQL (`INSERT ... ON CONFLICT (id) DO UPDATE
... RETURNING`): the count grows by the batch's results, last_seen moves on, `regressed_at` is set when the
signature had not been seen for `signatures.resolve_after`, and the example of the first sighting is kept. The
upsert locks each row it touches until the transaction ends (PostgreSQL: concurrent replicas wait on it; SQLite:
one writer at a time), and the rows are taken in id order (no deadlock between replicas), so counts are exact
and what RETURNING tells is this transaction's own: the bounded sets (services, agents, models, variants,
versions: the last `MAX_VALUES` distinct; example traces: the last `MAX_TRACES`, newest last) are merged from it
and written back by one `executemany`. The upsert of n rows is one statement per n (compiled once each).

New: the transaction that takes a signature's count to `signatures.min_count` while last_seen - first_seen is
within `signatures.window` counts it as new, once (one transaction does, whatever the replicas), for the
(evaluator, service) of its first sighting in the batch; the store's `SignatureNews` collects them. Except
across an upgrade of the signature algorithm (`SIGNATURE_VERSION`, whose ids all change): a signature is not new
when a signature of another version on the same step (evaluator, level, agent, step kind and name; an LLM step by
its kind alone, its name having changed from the model to the provider in v2) was seen within `resolve_after`
before it: that failure mode was known under its old id.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sqlalchemy import bindparam, case, literal_column, or_, select, update
from sqlalchemy.dialects.postgresql import insert  # its ON CONFLICT compiles on SQLite too

from evaluators.signatures import FailureSignature
from monitor.config.signatures import SignaturesConfig
from monitor.store.sql_functions import greatest, least
from monitor.store.statements import RowStatement, Statement, execute_row, executemany_rows, scalar
from monitor.store.storable import storable, storable_json
from monitor.store.tables import signatures

MAX_VALUES = 20  # services, agents, models, variants and versions kept per signature
MAX_TRACES = 10  # example trace ids kept per signature (newest last)
MAX_VALUE_CHARS = 200  # a set value's length
ROWS_PER_STATEMENT = 200  # signatures per upsert statement (SQLite's bound on parameters)
SETS = ("services", "agents", "models", "variants", "versions")
COLUMNS = (
    "id", "version", "evaluator", "level", "agent", "step_kind", "step_name", "error_type", "template", "example",
    "first_seen", "last_seen", "count", *SETS, "example_traces",
)  # fmt: skip
NewCounts = dict[tuple[str, str], int]  # (evaluator, service) → signatures counted new


class Sighting(NamedTuple):
    """One failing result with a signature, as packed (its text storable)."""

    signature: FailureSignature
    seen_at: float
    trace_id: str
    service: str
    agents: tuple[str, ...]  # the result's agent, or every agent of its trace for a trace-level result
    models: tuple[str, ...]  # likewise
    variant: str
    version: str


@dataclass
class Batch:
    """The sightings of one signature in one write."""

    signature: FailureSignature
    first: float
    last: float
    service: str  # the service of its first sighting (whose `new` it is)
    count: int = 0
    values: dict[str, list[str]] = field(default_factory=lambda: {name: [] for name in SETS})
    traces: list[str] = field(default_factory=list)


class Policy(NamedTuple):
    """When a signature is new and when it has regressed (the `signatures:` section)."""

    window: float
    min_count: int
    resolve_after: float

    @classmethod
    def of(cls, config: SignaturesConfig | None) -> Policy:
        config = config or SignaturesConfig()
        return cls(config.window, config.min_count, config.resolve_after)


class SignatureNews:
    """The signatures a store counted new, by (evaluator, service): taken after each batch by a worker process
    (`take`, travelling back beside its health report), or told at once to `on_new` (the daemon's own store).
    Thread-safe: the store's writer thread adds."""

    def __init__(self, on_new: Callable[[str, str, int], None] | None = None) -> None:
        self.on_new = on_new
        self._lock = threading.Lock()
        self._new: NewCounts = {}

    def add(self, counts: NewCounts) -> None:
        if not counts:
            return
        if self.on_new is not None:
            for (evaluator, service), n in counts.items():
                self.on_new(evaluator, service, n)
            return
        with self._lock:
            for key, n in counts.items():
                self._new[key] = self._new.get(key, 0) + n

    def take(self) -> NewCounts:
        with self._lock:
            taken, self._new = self._new, {}
        return taken


def _add(values: list[str], value: str | None, limit: int) -> None:
    """`value` appended to `values` (bounded; distinct; the oldest dropped past `limit`)."""
    if not value:
        return
    value = value[:MAX_VALUE_CHARS]
    if value in values:
        return
    values.append(value)
    if len(values) > limit:
        del values[0]


def batched(sightings: Iterable[Sighting], mask: Callable[[list[str | None]], list[str | None]]) -> list[Batch]:
    """The sightings summed per signature, in id order; each signature's template and example passed through
    `mask` (secrets and PII, as the store masks every text)."""
    batches: dict[str, Batch] = {}
    for s in sightings:
        batch = batches.get(s.signature.id)
        if batch is None:
            batch = batches[s.signature.id] = Batch(s.signature, s.seen_at, s.seen_at, s.service)
        batch.count += 1
        batch.first, batch.last = min(batch.first, s.seen_at), max(batch.last, s.seen_at)
        values = batch.values
        for name, value in (("services", s.service), ("variants", s.variant), ("versions", s.version)):
            _add(values[name], value, MAX_VALUES)
        for agent in s.agents:
            _add(values["agents"], agent, MAX_VALUES)
        for model in s.models:
            _add(values["models"], model, MAX_VALUES)
        _add(batch.traces, s.trace_id, MAX_TRACES)
    ordered = [batches[key] for key in sorted(batches)]
    texts = mask([text for b in ordered for text in (b.signature.template, b.signature.example)])
    for i, b in enumerate(ordered):
        fields = {"template": texts[2 * i] or "", "example": texts[2 * i + 1] or ""}
        b.signature = _storable(b.signature, fields)
    return ordered


def _storable(signature: FailureSignature, masked: dict[str, str]) -> FailureSignature:
    names = ("evaluator", "level", "agent", "step_kind", "step_name", "error_type")
    values = {name: storable(getattr(signature, name)) for name in names}
    values.update((name, storable(text)) for name, text in masked.items())
    return FailureSignature(signature.id, signature.version, **values)


def _json(values: Sequence[str]) -> str:
    return storable_json(json.dumps(list(values), ensure_ascii=False, separators=(",", ":")))


@functools.cache
def upsert_statement(rows: int) -> RowStatement:
    """The upsert of `rows` signatures, the same on both databases: its row of values is each signature's COLUMNS,
    then `resolve_after`."""
    names = [[f"{name}_{i}" for name in COLUMNS] for i in range(rows)]
    values: list[dict[str, Any]] = [{name: bindparam(bound) for name, bound in zip(COLUMNS, row)} for row in names]
    inserted = insert(signatures).values(values)
    new, s = inserted.excluded, signatures.c
    regressed = case((new.first_seen - s.last_seen >= bindparam("resolve_after"), new.first_seen), else_=s.regressed_at)
    changed = {
        "count": s["count"] + new["count"],
        "first_seen": least(s.first_seen, new.first_seen),
        "last_seen": greatest(s.last_seen, new.last_seen),
        "regressed_at": regressed,
    }
    returned = (s.id, s["count"], s.first_seen, s.last_seen, *(s[name] for name in SETS), s.example_traces)
    statement = inserted.on_conflict_do_update(index_elements=[s.id], set_=changed).returning(*returned)
    return RowStatement(statement, [*(bound for row in names for bound in row), "resolve_after"])


_s = signatures.c
# a signature of another version on the same step, seen since a time (`_known_before`)
_KNOWN_BEFORE = Statement(
    select(literal_column("1"))
    .select_from(signatures)
    .where(
        _s.version != bindparam("version"),
        *(_s[name] == bindparam(name) for name in ("evaluator", "level", "agent", "step_kind")),
        or_(_s.step_kind == literal_column("'llm'"), _s.step_name == bindparam("step_name")),
        _s.last_seen >= bindparam("since"),
    )
    .limit(1)
)
_MERGED = (*SETS, "example_traces")
_UPDATE_SETS = RowStatement(
    update(signatures).values({name: bindparam(f"merged_{name}") for name in _MERGED}).where(_s.id == bindparam("sid")),
    (*(f"merged_{name}" for name in _MERGED), "sid"),
)


def _row(b: Batch) -> tuple:
    s = b.signature
    return (
        s.id, s.version, s.evaluator, s.level, s.agent, s.step_kind, s.step_name, s.error_type, s.template, s.example,
        b.first, b.last, b.count, *(_json(b.values[name]) for name in SETS), _json(b.traces),
    )  # fmt: skip


def _merged(stored: str, batch: Sequence[str], limit: int) -> list[str]:
    values = json.loads(stored) if stored else []
    for value in batch:
        _add(values, value, limit)
    return values


def _known_before(db: Any, s: FailureSignature, since: float) -> bool:
    """Whether a signature of another algorithm version on `s`'s step was seen since `since` (the same failure
    mode under its id before an upgrade, so `s` is not new)."""
    params = {"version": s.version, "evaluator": s.evaluator, "level": s.level, "agent": s.agent,
              "step_kind": s.step_kind, "step_name": s.step_name, "since": since}  # fmt: skip
    return scalar(db, _KNOWN_BEFORE, params) is not None


def upsert(db: Any, batches: Sequence[Batch], policy: Policy) -> NewCounts:
    """Upsert `batches` (in id order) on `db` (either store's connection), in the caller's transaction; the
    signatures this transaction counted new, by (evaluator, service)."""
    new: NewCounts = {}
    updates: list[tuple] = []
    for start in range(0, len(batches), ROWS_PER_STATEMENT):
        chunk = {b.signature.id: b for b in batches[start : start + ROWS_PER_STATEMENT]}
        params = (*(value for b in chunk.values() for value in _row(b)), policy.resolve_after)
        returned = execute_row(db, upsert_statement(len(chunk)), params).fetchall()
        for sid, count, first_seen, last_seen, *sets in returned:
            b = chunk[sid]
            before = int(count) - b.count
            reached = before < policy.min_count <= int(count) and last_seen - first_seen <= policy.window
            if reached and not _known_before(db, b.signature, first_seen - policy.resolve_after):
                key = (b.signature.evaluator, b.service)
                new[key] = new.get(key, 0) + 1
            if before > 0:  # an existing row: its sets merged with the batch's
                merged = [_merged(sets[i], b.values[name], MAX_VALUES) for i, name in enumerate(SETS)]
                traces = _merged(sets[-1], b.traces, MAX_TRACES)
                updates.append((*(_json(m) for m in merged), _json(traces), sid))
    if updates:
        executemany_rows(db, _UPDATE_SETS, updates)
    return new
