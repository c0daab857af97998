"""Reviewers' agreement with an evaluator as the results page's evaluator line shows it: the precision of its
alarms and the share of its passes confirmed, each with its counts and 95% Wilson interval."""

from __future__ import annotations

import monitor.web.pages.fmt as fmt
from monitor.review.agreement import EvaluatorAgreement, ReviewedShare
from monitor.web.html import Child, el


def agreement_parts(agreement: EvaluatorAgreement | None) -> list[Child]:
    """` · reviewers: alarms confirmed 80.0% (8 of 10, 95% CI 49.0%–94.3%), passes confirmed …`; [] unreviewed."""
    if agreement is None or agreement.reviews == 0:
        return []
    parts: list[Child] = [" · reviewers: "]
    figures = [
        _figure("alarms confirmed", agreement.alarm_precision, "alarm_precision"),
        _figure("passes confirmed", agreement.pass_confirmation, "pass_confirmation"),
    ]
    shown = [f for f in figures if f is not None]
    for index, figure in enumerate(shown):
        parts += [", " if index else "", figure]
    if agreement.skips_reviewed:
        parts.append(f"{', ' if shown else ''}{agreement.skips_reviewed} skips reviewed")
    return parts


def _figure(what: str, figure: ReviewedShare, name: str) -> Child:
    if figure.reviewed == 0:
        return None
    interval = f"95% CI {fmt.ratio(figure.lower)}–{fmt.ratio(figure.upper)}"
    text = f"{what} {fmt.ratio(figure.ratio)} ({figure.confirmed} of {figure.reviewed}, {interval})"
    return el("span", text, class_=f"agreement {name}")
