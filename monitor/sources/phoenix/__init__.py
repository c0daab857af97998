"""Arize Phoenix: the poll source that reads a project's traces (`source`), the annotations client (`annotations`),
and what is written back to Phoenix through it: the results of the traces it polled (`result_annotations`) and
reviewers' verdicts on a judge's results (`review_annotations`, the one module the daemon's wiring uses).
Importing the package imports none of its modules."""

__all__ = ["review_annotations"]
