"""The result store on PostgreSQL (`store.url: postgresql://…`): one database that every replica writes and reads,
so the review of any replica shows all of them. Same tables, versions and review SQL as SQLite (the Dialect)."""
