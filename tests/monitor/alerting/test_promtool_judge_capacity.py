"""`promtool test rules` on `AgentMonitorJudgeCapacity`: judgements skipped because the judges' limits could not take
them fire it after `for`, naming the setting to raise; a spent budget (AgentMonitorJudgeUnavailable's), skips that
stopped, and skips within `health.judge_capacity_skips` do not."""

from __future__ import annotations

import pytest

from tests.support.alert_rules import alerts_sample, config, cumulative, run_rule_tests, series

pytestmark = pytest.mark.integration

MINUTES = 40
COMMON = {"severity": "critical"}
SKIPS = "agent_monitor_judge_capacity_skips_total"


def _config(**health: object) -> object:
    section = {"for": "5m", "severity": "critical", **health}
    return config({"evaluators": [], "alerting": {"health": section}})


def _capacity(eval_time: str, state: str = "firing") -> dict:
    return {"expr": f'ALERTS{{alertname="AgentMonitorJudgeCapacity", alertstate="{state}"}}', "eval_time": eval_time}


INPUT = [
    # two judgements a minute wait past judgement_timeout for the global rate limit, all along
    series(SKIPS, cumulative((MINUTES, 2)), judge="hallucination", limit="judges.requests_per_minute"),
    # a judge whose own concurrency limit dropped judgements until 8m, then none
    series(SKIPS, cumulative((8, 1), (MINUTES - 8, 0)), judge="safety", limit="params.max_concurrency"),
    # a spent budget: budget_exhausted, AgentMonitorJudgeUnavailable's business
    series(SKIPS, cumulative((MINUTES, 5)), judge="helpfulness", limit="judges.daily_token_budget"),
]


def test_capacity_skips_fire_the_alert_naming_the_limit(tmp_path) -> None:
    firing = alerts_sample(
        "AgentMonitorJudgeCapacity", judge="hallucination", limit="judges.requests_per_minute", **COMMON
    )
    tests = [
        {
            "interval": "1m",
            "input_series": INPUT,
            "promql_expr_test": [
                {**_capacity("3m"), "exp_samples": []},  # not before `for`
                {
                    **_capacity("7m"),  # the safety judge's skips too, while they last
                    "exp_samples": [
                        firing,
                        alerts_sample(
                            "AgentMonitorJudgeCapacity", judge="safety", limit="params.max_concurrency", **COMMON
                        ),
                    ],
                },
                {**_capacity("30m"), "exp_samples": [firing]},  # safety's stopped at 8m: resolved
            ],
            "alert_rule_test": [
                {
                    "alertname": "AgentMonitorJudgeCapacity",
                    "eval_time": "30m",
                    "exp_alerts": [
                        {
                            "exp_labels": {"judge": "hallucination", "limit": "judges.requests_per_minute", **COMMON},
                            "exp_annotations": {
                                "summary": "LLM judge hallucination skips judgements: judges.requests_per_minute "
                                "cannot keep up",
                                "description": "20 judgements of hallucination were skipped as rate_limited over "
                                "the last 10m (more than 0, for 5m): they waited for judges.requests_per_minute past "
                                "judges.judgement_timeout, or found the backlog (judges.max_pending) full. Raise "
                                "judges.requests_per_minute (judges.* in the judges section, params.* in the judge's "
                                "own params; requests_per_minute within the model's quota), or lower the judges' "
                                "sampling: requests a minute are about traces a minute x judges x samples x "
                                "(1 + retries). agent_monitor_judge_waiting shows the backlog.",
                            },
                        }
                    ],
                },
            ],
        }
    ]
    run_rule_tests(tmp_path, _config(), tests)


def test_skips_within_the_configured_allowance_do_not_fire(tmp_path) -> None:
    tests = [
        {
            "interval": "1m",
            "input_series": INPUT,
            # hallucination's 20 skips per 10m are under 25; nothing else counts
            "promql_expr_test": [
                {**_capacity("30m"), "exp_samples": []},
                {**_capacity("30m", "pending"), "exp_samples": []},
            ],
        }
    ]
    run_rule_tests(tmp_path, _config(judge_capacity_skips=25), tests)
