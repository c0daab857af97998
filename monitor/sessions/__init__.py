"""Conversations in the daemon: the turns the evaluation workers send back, grouped into open sessions
(`book`), completed after `sessions.idle` without a new turn or cut by the limits, and evaluated once by the
session-level evaluators (`evaluation`) in the main process (`tracker`, a lifecycle component: without a result
store). With a store (SQLite's file, or PostgreSQL's shared by the replicas) the open sessions live in it instead,
so a restart neither cuts nor splits them, each claimed once when due (`shared`); `from_config` chooses.

The public modules are the ones `__all__` names. Importing the package imports none of its modules.
"""

__all__ = ["book", "evaluation", "from_config", "judging", "shared", "storing", "tracker"]
