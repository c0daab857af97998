"""Issue 26's "done when", end to end: the real OTel SDK exporter sends a known mix (tests/integration/spend_mix.py)
into the daemon started as users start it (`agent-monitor run --config`, default evaluators); a real Prometheus
scrapes it and answers spend by agent and model to the cent (1e-9 here).

The expected figures come from genai-prices itself (`genai_prices.calc_price` on the usage the spans carry, at the
spans' start), from the `pricing.models` override as configured, and from the cost the OpenInference span reports:
never typed in. The mix has prompt-cache reads and writes, reasoning tokens, a model nobody prices (counted as
unpriced, never as 0), an override (glob) and a span-reported cost that wins over the table."""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import genai_prices
import pytest

from tests.integration.conftest import project_env
from tests.integration.daemon_process import DaemonProcess
from tests.integration.promstack import ServerSet, poll, query, scrape_config
from tests.integration.spend_mix import COPIES, MIX, OVERRIDES, SERVICE, Call, send_process

pytestmark = pytest.mark.integration

TOLERANCE = 1e-9  # USD: float sums of a few dozen figures, far below a cent
PER = {"1K": 1_000, "1M": 1_000_000}


def _override(call: Call) -> float | None:
    """The call's cost from the configured override, when the model is one (the mix names one glob)."""
    ((pattern, price),) = OVERRIDES.items()
    if not call.model.startswith(pattern.rstrip("*")):
        return None
    plain = call.input - call.cache_read - call.cache_write
    usd = plain * price["input"] + call.cache_read * price["cache_read"] + call.output * price["output"]
    return usd / PER[price["per"]]


def _table(call: Call, when: datetime) -> float | None:
    """genai-prices' own figure for the call's usage (its input includes the cache reads and writes), None when
    the library knows no such model."""
    usage = genai_prices.Usage(
        input_tokens=call.input,
        cache_read_tokens=call.cache_read,
        cache_write_tokens=call.cache_write,
        output_tokens=call.output,
    )
    try:
        price = genai_prices.calc_price(usage, call.model, provider_id=call.provider, genai_request_timestamp=when)
    except LookupError:
        return None
    return float(price.total_price)


def _cost(call: Call, when: datetime) -> float | None:
    if call.span_cost is not None:
        return call.span_cost
    overridden = _override(call)
    return overridden if overridden is not None else _table(call, when)


def _calls() -> Iterator[tuple[int, str, Call]]:
    """(trace index, agent, call) of every call sent."""
    for copy in range(COPIES):
        for index, runs in enumerate(MIX):
            for run in runs:
                for call in run.calls:
                    yield copy * len(MIX) + index, run.agent, call


def _by(result: list[dict], *labels: str) -> dict[tuple[str, ...], float]:
    return {tuple(r["metric"].get(label, "") for label in labels): float(r["value"][1]) for r in result}


def test_spend_by_agent_and_model_to_the_cent(tmp_path: Path) -> None:
    start = time.time_ns()
    when = datetime.fromtimestamp(start / 1e9, UTC)
    expected: Counter[tuple[str, str]] = Counter()
    unpriced: Counter[str] = Counter()
    trace_costs: Counter[int] = Counter()
    tokens: Counter[str] = Counter()
    for trace, agent, call in _calls():
        cost = _cost(call, when)
        if cost is None:
            unpriced[call.model] += 1
        else:
            expected[agent, call.model] += cost
            trace_costs[trace] += cost
        tokens["input"] += call.input - call.cache_read - call.cache_write
        tokens["cache_read"] += call.cache_read
        tokens["cache_write"] += call.cache_write
        tokens["output"] += call.output - call.reasoning
        tokens["reasoning"] += call.reasoning
    traces = COPIES * len(MIX)
    # The mix is what the test means it to be: each kind of price occurs, and the span's cost is not the table's.
    assert unpriced and len(trace_costs) < traces and all(tokens.values()), (unpriced, trace_costs, tokens)
    span_cost = next(c for _, _, c in _calls() if c.span_cost is not None)
    assert _table(span_cost, when) not in (None, span_cost.span_cost)

    config = {"pricing": {"models": OVERRIDES}}
    with contextlib.ExitStack() as stack:
        workdir = tmp_path / "daemon"
        workdir.mkdir()
        daemon = DaemonProcess(workdir, config, env=project_env())
        stack.callback(daemon.stop)
        daemon.start()
        servers = ServerSet(tmp_path)
        stack.callback(servers.stop)
        port = servers.start_prometheus(scrape_config(daemon.metrics_port))
        send_process(daemon.grpc_port, start)
        evaluated = "sum(agent_monitor_traces_evaluated_total)"
        done = lambda r: bool(r) and float(r[0]["value"][1]) >= traces  # noqa: E731
        assert done(poll(port, evaluated, done, timeout=90)), daemon.output()[-3000:]
        count = "sum(agent_trace_cost_usd_count)"
        settled = lambda r: bool(r) and float(r[0]["value"][1]) >= len(trace_costs)  # noqa: E731
        poll(port, count, settled, timeout=10)  # the scrape after the last evaluation

        spend = _by(
            query(port, f'sum by (agent, model) (agent_llm_cost_usd_total{{service="{SERVICE}"}})'), "agent", "model"
        )
        assert set(spend) == set(expected), (spend, expected)
        for key, usd in expected.items():
            assert spend[key] == pytest.approx(usd, abs=TOLERANCE), key
        missed = _by(query(port, "sum by (model) (agent_llm_unpriced_calls_total)"), "model")
        assert missed == {(model,): float(n) for model, n in unpriced.items()}
        assert float(query(port, count)[0]["value"][1]) == len(trace_costs)
        total = float(query(port, "sum(agent_trace_cost_usd_sum)")[0]["value"][1])
        assert total == pytest.approx(sum(trace_costs.values()), abs=TOLERANCE)
        by_kind = _by(query(port, "sum by (kind) (agent_llm_tokens_total)"), "kind")
        assert by_kind == {(kind,): float(n) for kind, n in tokens.items()}
        by_direction = _by(query(port, "sum by (direction) (agent_llm_tokens_total)"), "direction")
        sent_in, sent_out = (sum(getattr(c, d) for _, _, c in _calls()) for d in ("input", "output"))
        assert by_direction == {("input",): sent_in, ("output",): sent_out}
