"""What's different about a slice of traces (an evaluator's failures, a signature, a drift's recent window):
the dimensions kept per stored trace, the contrast of the slice with its reference, and the attribution gauge.

The public modules are the ones `__all__` names."""

__all__ = ["codes", "contrast", "model", "rows"]
