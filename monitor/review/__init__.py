"""The review, its read side: readers over the result store (`sqlite_reader.py`, `postgres_reader.py`, their
SQL in `sql.py`, `breakdown_sql.py`, `signature_sql.py` and `queue_sql.py`: SQLAlchemy Core statements over
monitor/store/tables.py, compiled for either database; stored rows decoded into models in `stored_rows.py`), the
review's operations (`service.py`), the API's query parameters (`api_params.py`) and the models the API, the
page and the CLI show (`models.py`). It reads the store's schema (`monitor.store`) and never writes (reviewers'
verdicts are written by monitor/web/review_writer.py).

Words: "the review" is the reading of results (the API, the page, `agent-monitor review`); "a review" is a
reviewer's verdict on one result (`review_models`, `review_params`, `review_reads`, and what is made of them:
`agreement`, `calibration`, the review `queue`); "the review page" is monitor/web/pages.

The public modules are the ones `__all__` names; `sqlite_reader`, `postgres_reader`, the `*_sql` modules and
`stored_rows` are internal to the package: `of_store.reader_of` and `open_reader` choose the reader (`of_store`
re-exports the readers' base, `StoreReviewReader`).
Importing the package imports none of its modules.
"""

__all__ = [
    "agreement", "agreement_cache", "api_model", "api_params", "calibration", "change_models", "models", "of_store",
    "open_reader", "queue", "review_models", "review_params", "review_reads", "service", "session_models",
    "session_params", "signature_models",
]  # fmt: skip
