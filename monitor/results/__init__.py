"""Where evaluation results are kept: the SQLite result store."""
