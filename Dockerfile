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
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:9464/healthz', timeout=2).status == 200 else 1)"
ENTRYPOINT ["agent-monitor"]
CMD ["run"]
