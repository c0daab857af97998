"""The result store's tables at the latest schema version, as SQLAlchemy Core `Table`s: what every statement of the
store, the review's reads, checkpoints, leases and shared sessions is written against (statements.py).

The schema itself is made by the migrations (monitor/store/migrations); a test compares the two on both
databases. The few differences between the databases are types: JSON is jsonb on PostgreSQL and text on SQLite
(`JSON_TEXT`; both read back as JSON text), and the insertion order of traces is SQLite's rowid or PostgreSQL's
identity column `traces.id` (`trace_row_key` in sql_functions.py).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Double,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    Table,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

__all__ = [
    "JSON_TEXT",
    "METADATA",
    "drift_buckets",
    "drift_episodes",
    "judge_limits",
    "open_sessions",
    "pending_judgements",
    "pending_owners",
    "poll_checkpoints",
    "poll_seen",
    "results",
    "reviews",
    "session_turns",
    "sessions",
    "signatures",
    "trace_signals",
    "trace_tools",
    "traces",
]

METADATA = MetaData()
JSON_TEXT = Text().with_variant(JSONB(), "postgresql")
FLAG = SmallInteger().with_variant(Integer(), "sqlite")  # 0/1 (NULL: none)


def _text(name: str, nullable: bool = True) -> Column[str]:
    return Column(name, Text, nullable=nullable)


def _real(name: str, nullable: bool = True) -> Column[float]:
    return Column(name, Double, nullable=nullable)


results = Table(
    "results",
    METADATA,
    Column("id", BigInteger().with_variant(Integer(), "sqlite"), primary_key=True),
    _real("created_at", nullable=False),
    _text("trace_id", nullable=False),
    _text("span_id"),
    _text("service"),
    _text("agent"),
    _text("model"),
    _text("evaluator", nullable=False),
    _text("level", nullable=False),
    _real("score"),
    Column("passed", FLAG),
    _text("skip_reason"),
    _text("explanation"),
    _text("details"),
    _text("signature"),
    _text("session_id"),
    Index("results_trace", "trace_id"),
    Index("results_failing", "evaluator", "created_at", sqlite_where=text("passed = 0"),
          postgresql_where=text("passed = 0")),
    Index("results_signature", "signature", "created_at", sqlite_where=text("signature IS NOT NULL"),
          postgresql_where=text("signature IS NOT NULL")),
    Index("results_session", "session_id", sqlite_where=text("session_id IS NOT NULL"),
          postgresql_where=text("session_id IS NOT NULL")),
)  # fmt: skip

traces = Table(
    "traces",
    METADATA,
    Column("trace_id", Text, primary_key=True),
    _real("created_at", nullable=False),
    _text("service"),
    _text("input"),
    _text("output"),
    Column("span_count", Integer),
    _real("duration_ms"),
    Column("has_errors", FLAG),
    Column("passed", JSON_TEXT),
    Column("agents", JSON_TEXT),
    Column("models", JSON_TEXT),
    Column("tools", JSON_TEXT),
    Column("detail", JSON_TEXT),
    Column("variant", Text, nullable=False, server_default=""),
)
# Its indexes differ between the databases (PostgreSQL's end with the identity column): the migrations make them.

poll_checkpoints = Table(
    "poll_checkpoints",
    METADATA,
    Column("source", Text, primary_key=True),
    _real("mark"),
    _text("state"),
    _real("updated_at", nullable=False),
)

poll_seen = Table(
    "poll_seen",
    METADATA,
    Column("source", Text, primary_key=True),
    Column("trace_id", Text, primary_key=True),
    _real("started_at", nullable=False),
    Index("poll_seen_time", "source", "started_at"),
)

signatures = Table(
    "signatures",
    METADATA,
    Column("id", Text, primary_key=True),
    *(_text(name, nullable=False) for name in ("version", "evaluator", "level", "agent", "step_kind", "step_name")),
    *(_text(name, nullable=False) for name in ("error_type", "template", "example")),
    _real("first_seen", nullable=False),
    _real("last_seen", nullable=False),
    Column("count", BigInteger, nullable=False),
    *(_text(name, nullable=False) for name in ("services", "agents", "models", "variants", "versions")),
    _text("example_traces", nullable=False),
    _real("regressed_at"),
    Index("signatures_last_seen", "last_seen"),
    Index("signatures_evaluator", "evaluator", "last_seen"),
)

sessions = Table(
    "sessions",
    METADATA,
    Column("session_id", Text, primary_key=True),
    _text("service", nullable=False),
    _text("source", nullable=False),
    _real("started_at", nullable=False),
    _real("last_turn_at", nullable=False),
    _real("completed_at", nullable=False),
    _text("ended", nullable=False),
    Column("turn_count", Integer, nullable=False),
    Column("turns_cut", Integer, nullable=False),
    Column("total_tokens", BigInteger, nullable=False),
    _real("cost_usd"),
    Column("failed", Integer, nullable=False),
    _text("turns", nullable=False),
    Index("sessions_completed", "completed_at"),
    Index("sessions_service", "service", "completed_at"),
)

reviews = Table(
    "reviews",
    METADATA,
    Column("review_id", Text, primary_key=True),
    *(_text(name, nullable=False) for name in ("trace_id", "evaluator", "level", "span_id")),
    _text("session_id"),
    _text("service"),
    Column("verdict_passed", Integer),
    _real("verdict_score"),
    _text("verdict_signature"),
    _text("agreement", nullable=False),
    _real("corrected_score"),
    _text("corrected_label"),
    _text("note"),
    _text("reviewer", nullable=False),
    _real("created_at", nullable=False),
    _real("superseded_at"),
    _text("task"),
    Index("reviews_in_force", "trace_id", "evaluator", "level", "span_id", unique=True,
          sqlite_where=text("superseded_at IS NULL"), postgresql_where=text("superseded_at IS NULL")),
    Index("reviews_evaluator", "evaluator", "created_at", sqlite_where=text("superseded_at IS NULL"),
          postgresql_where=text("superseded_at IS NULL")),
    Index("reviews_time", "created_at"),
)  # fmt: skip

open_sessions = Table(
    "open_sessions",
    METADATA,
    Column("session_id", Text, primary_key=True),
    _text("service", nullable=False),
    _text("source", nullable=False),
    _real("first_arrival", nullable=False),
    _real("last_arrival", nullable=False),
    _real("completed_at"),
    Column("turns", Integer, nullable=False, server_default="0"),
    Column("turns_cut", Integer, nullable=False, server_default="0"),
    Index("open_sessions_waiting", "last_arrival", sqlite_where=text("completed_at IS NULL"),
          postgresql_where=text("completed_at IS NULL")),
    Index("open_sessions_completed", "completed_at", sqlite_where=text("completed_at IS NOT NULL"),
          postgresql_where=text("completed_at IS NOT NULL")),
)  # fmt: skip

session_turns = Table(
    "session_turns",
    METADATA,
    Column("session_id", Text, primary_key=True),
    Column("trace_id", Text, primary_key=True),
    _text("replica", nullable=False),
    _real("arrived_at", nullable=False),
    Column("turn", JSON_TEXT, nullable=False),
)

pending_judgements = Table(
    "pending_judgements",
    METADATA,
    Column("id", Text, primary_key=True),
    _text("kind", nullable=False),
    _real("created_at", nullable=False),
    _text("owner", nullable=False),
    _text("payload", nullable=False),
    Index("pending_judgements_owner", "owner", "created_at"),
)

pending_owners = Table(
    "pending_owners",
    METADATA,
    Column("owner", Text, primary_key=True),
    _real("seen_at", nullable=False),
)

# PostgreSQL only: the judges' request and token counters shared between replicas (postgres/judge_limits.py).
judge_limits = Table(
    "judge_limits",
    METADATA,
    Column("scope", Text, primary_key=True),
    Column("window_start", BigInteger, primary_key=True),
    Column("count", BigInteger, nullable=False),
)

# Drift detection's compact rows (signal_reads.py): one per stored trace, written with its trace row (same
# created_at), and one per distinct tool it called; NULL where a trace has no value (no answer, no usage, nothing
# priced).
trace_signals = Table(
    "trace_signals",
    METADATA,
    Column("trace_id", Text, primary_key=True),
    _real("created_at", nullable=False),
    _text("service", nullable=False),
    Column("agent", Text, nullable=False, server_default=""),
    Column("variant", Text, nullable=False, server_default=""),
    Column("has_error", FLAG, nullable=False),
    Column("llm_calls", Integer, nullable=False),
    Column("tool_calls", Integer, nullable=False),
    Column("tool_failures", Integer, nullable=False),
    Column("response_chars", Integer),
    Column("tokens", BigInteger),
    _real("cost_usd"),
    _real("duration_ms"),
    Column("dimensions", LargeBinary),  # monitor/store/dimension_codes.py: 8 bytes a code
    _text("dimension_text"),
    _text("failed_evaluators"),  # "|name|name|"
    _text("passed_evaluators"),
    Index("trace_signals_time", "created_at"),
)

trace_tools = Table(
    "trace_tools",
    METADATA,
    Column("trace_id", Text, primary_key=True),
    Column("tool", Text, primary_key=True),
    _real("created_at", nullable=False),
    _text("service", nullable=False),
    Column("agent", Text, nullable=False, server_default=""),
    Index("trace_tools_time", "created_at"),
)

# The drift episodes still active (signal_rows.DriftEpisode): the first replica to see one writes its `since`.
drift_episodes = Table(
    "drift_episodes",
    METADATA,
    Column("service", Text, primary_key=True),
    Column("agent", Text, primary_key=True),
    Column("signal", Text, primary_key=True),
    Column("subject", Text, primary_key=True),
    _text("direction", nullable=False),
    _real("since", nullable=False),
)

# A window bucket's drift aggregates (signal_rows.WindowAggregates as JSON), kept once read: a same-hours baseline
# reads each bucket again on each of the following days, from here instead of the traces' rows.
drift_buckets = Table(
    "drift_buckets",
    METADATA,
    Column("start", Double, primary_key=True),
    Column("size", Double, primary_key=True),
    _text("aggregates", nullable=False),
    _real("stored_at", nullable=False),
)
