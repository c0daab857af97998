# agent-monitor daemon image: OTLP on 4317 (gRPC) / 4318 (HTTP), metrics and health on 9464.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY evaluators ./evaluators
COPY monitor ./monitor
RUN python -m venv /opt/venv && /opt/venv/bin/pip install --no-cache-dir .

FROM python:3.11-slim
RUN useradd --system --uid 10001 --home-dir /var/lib/agent-monitor --create-home monitor
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1
WORKDIR /var/lib/agent-monitor
USER 10001
EXPOSE 4317 4318 9464
# The probe reads the same config as `run` (AGENT_MONITOR_CONFIG, AGENT_MONITOR_* overrides): it follows the
# metrics port and api.tls. Mount a config and set AGENT_MONITOR_CONFIG rather than passing `run --config`.
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 CMD ["agent-monitor", "health"]
ENTRYPOINT ["agent-monitor"]
CMD ["run"]
