"""Drift's latest report as the review shows it: the `/api/v1/changes` query, its parsing, and the report's
signals made `ChangeItem`s (monitor/review/change_models.py), each with its intervals, its one-line summary and
its link to the recent window's results on the review page.

`describe(state, drift)` is the summary: a thin function, to be switched to monitor/detection/describe.py's
`describe(state)` when that lands.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlencode

from monitor.config.drift import DriftConfig
from monitor.detection.model import BaselineKind, DriftReport, Moments, Scale, SignalState, Statistic
from monitor.detection.signals import SIGNALS
from monitor.review.api_params import BadRequest, QueryParam, parse_int, query_values, shown
from monitor.review.change_models import ChangeItem, ChangesPage, ChangeWindow

ChangesSource = Callable[[], DriftReport | None]
Z95 = 1.959963984540054
DEFAULT_LIMIT = 50
MAX_LIMIT = 500
KINDS = ("quality", "behaviour")
TRUE, FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")
RESULTS_PAGE = "/review/results"  # the review page's results list (monitor/web/pages/layout.py RESULTS)
SESSIONS_PAGE = "/review/sessions"  # its conversations list
CONVERSATION_SIGNALS = ("turns", "conversation_ended")
DISABLED = "drift unavailable: drift detection is disabled (drift.enabled: false) or not run by this process"
NO_REPORT = "drift unavailable: no report yet (the first one is made {when} after the daemon starts)"

CHANGES_PARAMS: tuple[QueryParam, ...] = (
    QueryParam("service", "Only signals of this service."),
    QueryParam("agent", "Only signals of this agent."),
    QueryParam("kind", "Only quality signals or only behaviour signals.", {"type": "string", "enum": list(KINDS)}),
    QueryParam(
        "all",
        "true: every tested signal of the report (changed or not), not only the active changes.",
        {"type": "boolean", "default": False},
    ),
    QueryParam(
        "limit",
        f"Items at most (1 to {MAX_LIMIT}).",
        {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
    ),
)


@dataclass(frozen=True, slots=True)
class ChangesQuery:
    service: str | None = None
    agent: str | None = None
    kind: str | None = None
    all: bool = False
    limit: int = DEFAULT_LIMIT


def parse_bool(name: str, text: str) -> bool:
    if text.lower() in TRUE:
        return True
    if text.lower() in FALSE:
        return False
    raise BadRequest(f"{name} must be true or false, got {shown(text)!r}")


def changes_query(pairs: Iterable[tuple[str, str]]) -> ChangesQuery:
    """The query of `/api/v1/changes` (BadRequest for an unknown, repeated or bad parameter)."""
    values = query_values(pairs, CHANGES_PARAMS)
    kind = values.get("kind")
    if kind is not None and kind not in KINDS:
        raise BadRequest(f"kind must be one of {', '.join(KINDS)}, got {shown(kind)!r}")
    limit = parse_int("limit", values["limit"], 1, MAX_LIMIT) if "limit" in values else DEFAULT_LIMIT
    every = parse_bool("all", values["all"]) if "all" in values else False
    return ChangesQuery(values.get("service"), values.get("agent"), kind, every, limit)


def no_report_reason(drift: DriftConfig | None) -> str:
    """Why there is nothing to show yet: the report comes an interval after the start."""
    interval = (drift or DriftConfig()).interval
    return NO_REPORT.format(when=duration(interval))


def interval(moments: Moments, statistic: Statistic) -> tuple[float | None, float | None]:
    """The 95 % interval of the window's mean (normal approximation); (None, None) without items."""
    mean, n = moments.mean, moments.n
    if mean is None or n <= 0:
        return None, None
    if statistic is Statistic.RATIO:
        p = min(max(mean, 0.0), 1.0)
        half = Z95 * math.sqrt(p * (1 - p) / n)
        return max(0.0, mean - half), min(1.0, mean + half)
    if n < 2:
        return mean, mean
    variance = max(0.0, (moments.squares - n * mean * mean) / (n - 1))
    half = Z95 * math.sqrt(variance) / math.sqrt(n)
    return mean - half, mean + half


def duration(seconds: float) -> str:
    """`30m`, `1h`, `7d`, `90s`, `1h30m`."""
    whole = round(seconds)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, whole = divmod(whole, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts[:2]) or "0s"


def value_text(value: float | None, unit: str) -> str:
    """A signal's value for people: `0.97`, `1,234 chars`, `$0.0123`, `2.35 s`, `4.2 ms` (under 0.1 s: a
    sub-second latency in seconds with 2 decimals would read `0.00 s`)."""
    if value is None or not math.isfinite(value):
        return "–"
    if unit in ("ratio", "score"):
        return f"{value:.2f}"
    if unit == "USD":
        return f"${value:.4f}" if abs(value) < 100 else f"${value:,.2f}"
    if unit == "seconds":
        return f"{value:.2f} s" if abs(value) >= 0.1 or value == 0 else f"{value * 1000:.3g} ms"
    number = f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    return f"{number} {unit}"


def effect_text(effect: float, scale: str) -> str:
    """`-8.0 pts` (unit scale) or `+35%` (magnitude)."""
    return f"{effect * 100:+.1f} pts" if scale == Scale.UNIT else f"{effect * 100:+.0f}%"


def _baseline_phrase(state: SignalState, drift: DriftConfig | None) -> str:
    if state.baseline_kind is BaselineKind.SAME_HOURS:
        if drift is None:
            return "the same hours of the previous days"
        days = max(1, round(drift.baseline / drift.period))
        return f"the same hours of the last {days} day{'s' if days != 1 else ''}"
    return f"the {duration(drift.trailing)} before" if drift is not None else "the window before"


def _when(since: float, as_of: float) -> str:
    day = time.strftime("%Y-%m-%d", time.gmtime(since))
    clock = time.strftime("%H:%M", time.gmtime(since))
    return f"{clock} UTC" if day == time.strftime("%Y-%m-%d", time.gmtime(as_of)) else f"{day} {clock} UTC"


def label(signal: str, subject: str) -> str:
    return f"{signal}[{subject}]" if subject else signal


def describe(state: SignalState, as_of: float, drift: DriftConfig | None = None) -> str:
    """One line: "tool_success 0.97 → 0.89 against the same hours of the last 7 days, since 14:05 UTC"."""
    unit = SIGNALS[state.signal].unit if state.signal in SIGNALS else ""
    text = (
        f"{label(state.signal, state.subject)} {value_text(state.baseline.mean, unit)} → "
        f"{value_text(state.recent.mean, unit)} against {_baseline_phrase(state, drift)}"
    )
    if not state.significant:
        return f"{text}: no significant change"
    return f"{text}, since {_when(state.since, as_of)}" if state.since is not None else text


def traces_url(state: SignalState, since: float, until: float) -> str:
    """The review page's list of the recent window's results of this service and agent: a pass ratio's failing
    verdicts of its evaluator, a score's verdicts of its evaluator, a conversation signal's conversations."""
    window = {"since": str(math.floor(since)), "until": str(math.ceil(until))}
    if state.signal in CONVERSATION_SIGNALS:
        return f"{SESSIONS_PAGE}?{urlencode({'service': state.service, **window})}"
    params = {"service": state.service}
    if state.agent:
        params["agent"] = state.agent
    if state.signal in ("pass_ratio", "score") and state.subject:
        params["evaluator"] = state.subject
    params["outcome"] = "fail" if state.signal == "pass_ratio" else "any"
    return f"{RESULTS_PAGE}?{urlencode({**params, **window})}"


def change_item(state: SignalState, report: DriftReport, drift: DriftConfig | None = None) -> ChangeItem:
    signal = SIGNALS.get(state.signal)
    base_low, base_high = interval(state.baseline, state.statistic)
    low, high = interval(state.recent, state.statistic)
    fields = state.model_dump(
        mode="json",
        include={"service", "agent", "signal", "subject", "kind", "statistic", "scale", "effect", "direction"},
    )
    return ChangeItem.model_validate(
        {
            **fields,
            "description": signal.description if signal is not None else "",
            "unit": signal.unit if signal is not None else "",
            "baseline": {
                **{"mean": state.baseline.mean, "n": state.baseline.n, "low": base_low, "high": base_high},
                "kind": state.baseline_kind.value,
            },
            "recent": ChangeWindow(mean=state.recent.mean, n=state.recent.n, low=low, high=high),
            "worse": state.worse,
            "significant": state.significant,
            "active": state.active,
            "p_value": state.p_value,
            "q_value": state.q_value,
            "since": state.since,
            "recent_variants": list(state.recent_variants),
            "summary": describe(state, report.as_of, drift),
            "traces_url": traces_url(state, report.as_of - report.recent_seconds, report.as_of),
        }
    )


def _rank(state: SignalState) -> tuple[float, float, str, str, str, str]:
    q = state.q_value if state.q_value is not None else 2.0
    return -abs(state.effect), q, state.service, state.agent, state.signal, state.subject


def changes_page(report: DriftReport, query: ChangesQuery, drift: DriftConfig | None = None) -> ChangesPage:
    """The report's active changes (every tested signal with `query.all`), filtered, largest |effect| first."""
    chosen = [
        s
        for s in report.signals
        if (s.active if not query.all else s.p_value is not None)
        and (query.service is None or s.service == query.service)
        and (query.agent is None or s.agent == query.agent)
        and (query.kind is None or s.kind.value == query.kind)
    ]
    chosen.sort(key=_rank)
    return ChangesPage(
        as_of=report.as_of,
        recent_seconds=report.recent_seconds,
        recent_since=report.as_of - report.recent_seconds,
        complete=report.complete,
        tested=report.tested,
        all=query.all,
        matched=len(chosen),
        items=[change_item(s, report, drift) for s in chosen[: query.limit]],
    )
