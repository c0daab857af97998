"""The result store on PostgreSQL (`store.url: postgresql://…`): one database that every replica writes and reads,
so the review of any replica shows all of them. Same tables, migrations and statements as SQLite (store/tables.py,
statements.py).

The public modules are the ones `__all__` names (the review's PostgreSQL reader uses `connection` and `schema`;
`leases` gives each poll source to one replica; `open_sessions` shares open conversations between them;
`judge_limits` counts the judges' requests and tokens for the whole deployment);
`deadline` and `retention` are internal to the package. Importing the package imports none of its modules.
"""

__all__ = ["connection", "judge_limits", "leases", "open_sessions", "schema", "store"]
