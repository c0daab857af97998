"""The HTTP side of the daemon: the aiohttp server setup, health, metrics and the review API, which reads the
store and takes one write, reviewers' verdicts (`review_writer`, through monitor.store.reviews).

The public modules are the ones `__all__` names (what the daemon and the HTTP receiver wire); the API, its
OpenAPI document, the review page (`pages`) and their helpers are internal to the package. Importing the package
imports none of its modules.
"""

__all__ = ["access", "app", "comparison_info", "evaluator_info", "review_writer", "server"]
