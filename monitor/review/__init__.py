"""The review, its read side: readers over the result store (`sqlite_reader.py`, `postgres_reader.py`, their
SQL in `sql.py`), the review's operations (`service.py`), the API's query parameters (`api_params.py`) and the
models the API, the page and the CLI show (`models.py`). It reads the store's schema (`monitor.store`) and
never writes."""
