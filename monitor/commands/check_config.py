"""`agent-monitor check-config FILE`: validate a config file (with AGENT_MONITOR_* overrides) as `run` would,
building everything short of binding ports, then summarize it and list the resulting evaluator set."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from evaluators.judges import LLMJudge
from evaluators.pricing import table_description
from monitor.config import ConfigError, MonitorConfig, load_located
from monitor.engine.configured import ConfiguredEvaluator
from monitor.preflight import Prepared, preflight
from monitor.text import clip


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "check-config",
        help="validate a config file, print a summary and the resulting evaluator set",
        description="Load FILE as the daemon would (applying AGENT_MONITOR_* environment overrides), build "
        "everything `run` builds short of binding ports (evaluators, TLS material, the store path) and report "
        "every problem as file:line: section.field: message. On success print a one-line summary and one "
        "line per evaluator. Exit status 0 when valid, 2 when not.",
    )
    parser.add_argument("path", metavar="FILE", help="YAML config file")
    parser.add_argument(
        "--no-env", action="store_true", help="ignore AGENT_MONITOR_* and GEMINI_API_KEY/GOOGLE_API_KEY variables"
    )
    parser.set_defaults(handler=run)


def summary(config: MonitorConfig) -> str:
    """One line: listening ports, evaluators, metrics windows."""
    receivers = config.receivers
    listening = [
        f"{kind} :{getattr(receivers, kind).port}" for kind in ("grpc", "http") if getattr(receivers, kind).enabled
    ]
    extras = (", tls" if receivers.tls.enabled else "") + (", bearer auth" if receivers.auth.token() else "")
    api_notes = [note for note, on in (("tls", config.api.tls.enabled), ("review API token", config.api_token())) if on]
    api = f" ({', '.join(api_notes)})" if api_notes else ""
    windows = ", ".join(window.label for window in config.metrics.windows)
    return (
        f"receivers {', '.join(listening) or 'none'}{extras}; {_evaluator_summary(config)}; "
        f"metrics :{config.metrics.port}{api} windows {windows}"
    )


def _evaluator_summary(config: MonitorConfig) -> str:
    if config.evaluators is None:
        return "default evaluator set"
    entries = [resolved.entry for resolved in config.evaluator_entries()]
    active = sum(entry.enabled for entry in entries)
    text = f"{active} evaluator{'' if active == 1 else 's'}"
    if active != len(entries):
        text += f" ({len(entries) - active} disabled)"
    if not isinstance(config.evaluators, list):
        section = config.evaluators
        changes = [
            f"{len(section.add)} added" if section.add else "",
            f"{len(section.override)} overridden" if section.override else "",
            f"{len(section.remove)} removed" if section.remove else "",
        ]
        start = "the default set" if section.defaults else "no defaults"
        text += f" ({', '.join([start, *filter(None, changes)])})"
    return text


def _duration(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


def evaluator_lines(prepared: Prepared) -> list[str]:
    """One line per evaluator that runs: label, builtin or module, threshold, sampling, alert and SLO (if any)."""
    rows = [_row(configured) for configured in prepared.evaluators]
    if not rows:
        return ["  (no evaluators)"]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return ["  " + "  ".join([*(c.ljust(w) for c, w in zip(row, widths)), row[-1]]).rstrip() for row in rows]


def _row(configured: ConfiguredEvaluator) -> list[str]:
    entry = configured.entry
    source = f"builtin {entry.name}" if entry.name else f"module {clip(entry.module, 60)}"
    alert = "alert -"
    if entry.alert is not None:
        a = entry.alert
        alert = (
            f"alert pass ratio < {a.min_pass_ratio:g} over {_duration(a.window)} for {_duration(a.for_)} "
            f"({a.severity}, min {a.min_samples} samples)"
        )
    if entry.slo is not None:
        slo = entry.slo
        alert += f"  slo {slo.objective * 100:.10g}% over {_duration(slo.period)}"
        alert += f" ({slo.severity})" if slo.severity else ""
    return [
        clip(configured.label, 40),
        source,
        f"threshold {configured.evaluator.threshold:g}",
        f"sampling {configured.sampling:g}",
        alert,
    ]


def report_invalid(path: str, error: ConfigError, err: TextIO) -> int:
    """Print every problem and a closing count (what both `check-config` and `run` print); returns 2."""
    print(error, file=err)
    count = len(error.problems)
    print(f"{path}: invalid ({count} problem{'' if count == 1 else 's'})", file=err)
    return 2


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        config, locator = load_located(args.path, env={} if getattr(args, "no_env", False) else None)
        prepared = preflight(config, locator)
    except ConfigError as exc:
        return report_invalid(args.path, exc, err)
    print(f"{args.path}: OK", file=out)
    for warning in prepared.store_warnings:
        print(f"{args.path}: warning: store.path: {warning}", file=err)
        print("  (the daemon starts without the result store: evaluation and metrics run, the review is unavailable"
              " until the store can be opened)", file=err)  # fmt: skip
    print(summary(config), file=out)
    print(pricing_line(config), file=out)
    print("evaluators:", file=out)
    for line in evaluator_lines(prepared):
        print(line, file=out)
    judges = judges_line(config, prepared)
    if judges:
        print(judges, file=out)
    for line in variant_lines(config):
        print(line, file=out)
    return 0


def pricing_line(config: MonitorConfig) -> str:
    """Where call costs come from: the price table and the `pricing.models` overrides."""
    models = config.pricing.models
    overrides = "; ".join(f"{name} ${p.input:g} in / ${p.output:g} out per {p.per}" for name, p in models.items())
    return f"prices: {table_description()}" + (f"; overrides: {overrides}" if overrides else "")


def variant_lines(config: MonitorConfig) -> list[str]:
    """What the `variants` section does: the attribute, each comparison and each pairwise judge (none when
    variants are off)."""
    variants = config.variants
    if not variants.enabled:
        return []
    lines = [f"variants: by {variants.attribute}"]
    for entry in variants.compare:
        alpha = variants.alpha if entry.alpha is None else entry.alpha
        lines.append(
            f"  compare {entry.evaluator}: {entry.candidate!r} against {entry.baseline!r} over "
            f"{_duration(entry.window)}, at least {entry.min_samples} results a side, alpha {alpha:g}"
        )
    for pairwise in variants.pairwise:
        lines.append(
            f"  pairwise {pairwise.evaluator}: {pairwise.candidate!r} against {pairwise.baseline!r}, paired by "
            f"{pairwise.pair_by} within {_duration(pairwise.window)}, sampling {pairwise.sampling:g}, "
            f"at most {pairwise.max_waiting} unpaired traces"
        )
    return lines


def judges_line(config: MonitorConfig, prepared: Prepared) -> str | None:
    """Where the configured LLM judges go, or that they will only skip (None when no judge is configured)."""
    names = [c.label for c in prepared.evaluators if isinstance(c.evaluator, LLMJudge)]
    names += list(prepared.pairwise_judges)  # the pairwise judges use the same engine
    if not names:
        return None
    judges = config.judges
    if judges.vertex_project:
        target = f"Vertex AI project {judges.vertex_project} ({judges.vertex_location})"
    elif judges.gemini_api_key:
        target = "the Gemini API" + (f" at {judges.base_url}" if judges.base_url else "")
    else:
        return (
            f"judges: {len(names)} configured but no GEMINI_API_KEY / GOOGLE_API_KEY, judges.gemini_api_key or "
            "judges.vertex_project: every judgement will be a judge_unavailable skip"
        )
    budget = f"{judges.daily_token_budget:,} tokens a day" if judges.daily_token_budget else "no daily token budget"
    rpm = f"{judges.requests_per_minute} requests/min" if judges.requests_per_minute else "no rate limit"
    return f"judges: {len(names)} on {target}, model {judges.model}; {rpm}, {budget}"
