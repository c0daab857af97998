"""Drift reports built by hand (monitor/detection/model.py) for the Changes API, page and command tests."""

from __future__ import annotations

from monitor.detection.model import (
    BaselineKind,
    Direction,
    DriftReport,
    Moments,
    Scale,
    SignalKind,
    SignalState,
    Statistic,
)

AS_OF = 1_764_770_400.0  # 2025-12-03 14:00:00 UTC
RECENT = 1800.0
HOSTILE = '<script>alert(1)</script>" onmouseover="x\x1b[31m'


def _ratio(k: int, n: int) -> Moments:
    return Moments(n=n, total=k, squares=k)


def _mean(n: int, mean: float, sd: float) -> Moments:
    return Moments(n=n, total=n * mean, squares=n * (mean * mean + sd * sd * (n - 1) / n))


def state(service: str, agent: str, signal: str, **fields: object) -> SignalState:
    quality = signal in ("pass_ratio", "score", "error_rate", "tool_success")
    ratio = signal in ("pass_ratio", "error_rate", "tool_success", "tool_share", "conversation_ended")
    unit = ratio or signal == "score"
    base: dict[str, object] = {
        "service": service,
        "agent": agent,
        "signal": signal,
        "kind": SignalKind.QUALITY if quality else SignalKind.BEHAVIOUR,
        "statistic": Statistic.RATIO if ratio else Statistic.MEAN,
        "scale": Scale.UNIT if unit else Scale.MAGNITUDE,
        "baseline_kind": BaselineKind.SAME_HOURS,
        "baseline": Moments(),
        "recent": Moments(),
    }
    return SignalState.model_validate({**base, **fields})


def sample_report(service: str = "checkout", agent: str = "planner", subject: str = "helpfulness") -> DriftReport:
    """Three active changes (latency +50 %, a pass ratio −15 points, tool success −8 points, in that order of
    |effect|), a quality signal that improved, one tested without change and one untested."""
    significant = {"significant": True, "p_value": 1e-7, "q_value": 1e-6}
    signals = [
        state(
            service, agent, "tool_success", baseline=_ratio(970, 1000), recent=_ratio(267, 300), effect=-0.08,
            direction=Direction.DOWN, worse=True, since=AS_OF - 900, **significant,
        ),
        state(
            "search", "", "latency", baseline=_mean(500, 1.2, 0.3), recent=_mean(200, 1.8, 0.4), effect=0.5,
            direction=Direction.UP, since=AS_OF - 86400 - 600, recent_variants=("v2",), **significant,
        ),
        state(
            service, agent, "pass_ratio", subject=subject, baseline=_ratio(760, 800), recent=_ratio(160, 200),
            effect=-0.15, direction=Direction.DOWN, worse=True, since=AS_OF - 300, **significant,
        ),
        state(
            service, agent, "error_rate", baseline=_ratio(80, 1000), recent=_ratio(12, 300), effect=-0.04,
            direction=Direction.DOWN, worse=False, since=AS_OF - 600, **significant,
        ),
        state("search", "", "tokens", baseline=_mean(500, 900, 100), recent=_mean(200, 905, 100), p_value=0.4,
              q_value=0.8),
        state("search", "", "cost", baseline=_mean(5, 0.01, 0.001), recent=_mean(3, 0.01, 0.001)),
    ]  # fmt: skip
    return DriftReport(as_of=AS_OF, recent_seconds=RECENT, signals=signals, tested=5)
