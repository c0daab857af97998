"""What's different about a slice of traces (an evaluator's failures, a signature, a drift's recent window):
the dimensions kept per stored trace, the contrast of the slice with its reference, and the attribution gauge."""

__all__ = ["attribution", "contrast", "dimensions", "model", "rows", "service", "wording"]
