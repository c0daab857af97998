"""Synthetic moments and configs for the detection tests."""

from __future__ import annotations

from monitor.config.drift import DriftConfig, MinEffect
from monitor.detection.model import Moments, SignalId


def ratio(n: int, k: int) -> Moments:
    """k hits of n items."""
    return Moments(n=n, total=float(k), squares=float(k))


def sample(n: int, mean: float, sd: float) -> Moments:
    """n values of this mean and sample standard deviation."""
    return Moments(n=n, total=n * mean, squares=(n - 1) * sd * sd + n * mean * mean)


def key(signal: str, subject: str = "", agent: str = "planner", service: str = "shop") -> SignalId:
    return SignalId(service=service, agent=agent, signal=signal, subject=subject)


def config(**changes: object) -> DriftConfig:
    return DriftConfig.model_validate(changes)


def no_min_effect(**changes: object) -> DriftConfig:
    """A config whose changes count at any size: only the test and the false discovery rate decide."""
    return DriftConfig.model_validate({"min_effect": MinEffect(absolute=0, relative=0), **changes})
