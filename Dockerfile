# agent-monitor daemon image: OTLP on 4317 (gRPC) / 4318 (HTTP), metrics and health on 9464.
#   docker build -t agent-monitor .
#   docker run -p 4317:4317 -p 4318:4318 -p 9464:9464 agent-monitor
# The config is /etc/agent-monitor/monitor.yaml (a copy of the embedded default): mount your own file there
# (or a directory over /etc/agent-monitor) to replace it. Results (SQLite) go to the volume /var/lib/agent-monitor/data.
FROM python:3.11-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY evaluators ./evaluators
COPY monitor ./monitor
RUN python -m venv /opt/venv && /opt/venv/bin/pip install --no-cache-dir .

FROM python:3.11-slim-bookworm
LABEL org.opencontainers.image.title="agent-monitor" \
      org.opencontainers.image.description="Evaluates AI-agent OpenTelemetry traces and exports Prometheus metrics" \
      org.opencontainers.image.licenses="Apache-2.0"
# A fixed uid and gid (10001) so Kubernetes' runAsUser/runAsGroup/fsGroup and volume ownership can name them;
# --no-log-init keeps a high uid from growing a sparse /var/log/lastlog in the layer.
RUN groupadd --system --gid 10001 monitor \
    && useradd --system --no-log-init --uid 10001 --gid 10001 --home-dir /var/lib/agent-monitor --create-home monitor \
    && mkdir -p /var/lib/agent-monitor/data /etc/agent-monitor \
    && chown 10001:10001 /var/lib/agent-monitor/data
COPY --from=build /opt/venv /opt/venv
# The default config: the embedded default itself (store.path data/results.db, relative to the working directory,
# i.e. the volume below). Root-owned and read-only for the daemon's user.
COPY monitor/default_config.yaml /etc/agent-monitor/monitor.yaml
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    AGENT_MONITOR_CONFIG=/etc/agent-monitor/monitor.yaml
WORKDIR /var/lib/agent-monitor
# Declared after the chown above: a new named volume is initialised from this directory, owned by 10001.
VOLUME ["/var/lib/agent-monitor/data"]
USER 10001:10001
EXPOSE 4317 4318 9464
# The probe reads the same config as `run` (AGENT_MONITOR_CONFIG, AGENT_MONITOR_* overrides): it follows the
# metrics port and api.tls. Mount a config and set AGENT_MONITOR_CONFIG rather than passing `run --config`.
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 CMD ["agent-monitor", "health"]
ENTRYPOINT ["agent-monitor"]
CMD ["run"]
