"""What's different about a slice of traces (an evaluator's failures, a signature, a drift's recent window):
the dimensions kept per stored trace, the contrast of the slice with its reference, and the attribution gauge.

Public: `model` (the query and the answer the API, the review's panels and the CLI share) and `wording` (that
answer in words)."""

__all__ = ["model", "wording"]
