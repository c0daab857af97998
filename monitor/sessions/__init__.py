"""Conversations in the daemon: the turns the evaluation workers send back, grouped into open sessions
(`book`), completed after `sessions.idle` without a new turn or cut by the limits, and evaluated once by the
session-level evaluators (`evaluation`) in the main process (`tracker`, a lifecycle component). With a shared
PostgreSQL store the open sessions live in it instead, claimed by one replica each (`shared`); `from_config`
chooses.

The public modules are the ones `__all__` names. Importing the package imports none of its modules.
"""

__all__ = ["book", "evaluation", "from_config", "judging", "shared", "storing", "tracker"]
