# agent-monitor: `make run` starts the daemon, `make test` runs the whole suite from nothing.
PYTHON    ?= python3
VENV      := .venv
PY        := $(VENV)/bin/python
# The package and its runtime dependencies only (`make run`, `make rules`)...
STAMP     := $(VENV)/.installed
# ...plus the dev extras (`make test`, `lint`, `bench`): pytest, ruff, mypy, the OTel SDK, playwright, hadolint, ...
DEV_STAMP := $(VENV)/.installed-dev

SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test check bench lint venv clean system-deps rules phoenix-venv

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $(STAMP)

$(DEV_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(DEV_STAMP)

venv: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/agent-monitor run

# Debian packages the integration tests use: the real Prometheus server and promtool, Alertmanager,
# Chromium (the review page's browser test, driven by playwright with executable_path=/usr/bin/chromium) and
# PostgreSQL (the shared result store: the tests run initdb and postgres themselves, on a loopback port).
system-deps:
	@command -v prometheus >/dev/null && command -v promtool >/dev/null && command -v prometheus-alertmanager >/dev/null \
	  && test -x /usr/bin/chromium && ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  echo "installing the Debian packages prometheus, prometheus-alertmanager, chromium and postgresql (for the integration tests)"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends prometheus prometheus-alertmanager chromium postgresql >/dev/null; }

# Arize Phoenix for the Phoenix source's tests (tests/support/phoenix_server.py), in its own virtualenv: it pins its own
# protobuf and grpcio. The tests start `phoenix serve` from it on loopback ports.
PHOENIX_VENV := .cache/phoenix-venv

phoenix-venv:
	@test -x $(PHOENIX_VENV)/bin/phoenix || { \
	  echo "installing arize-phoenix==20.26.1 into $(PHOENIX_VENV) (for the Phoenix source's tests)"; \
	  $(PYTHON) -m venv $(PHOENIX_VENV) && \
	  $(PHOENIX_VENV)/bin/pip install --quiet --upgrade pip && \
	  $(PHOENIX_VENV)/bin/pip install --quiet 'arize-phoenix==20.26.1'; }

# The suite in parallel: most tests wait on a server or a daemon, so a worker per core and a half keeps both cores
# busy; work stealing spreads the slow end-to-end tests instead of leaving one worker with all of them.
PYTEST_PARALLEL := -n 3 --dist worksteal

test: $(DEV_STAMP) system-deps phoenix-venv
	$(VENV)/bin/ruff check evaluators monitor tests
	$(VENV)/bin/mypy evaluators monitor
	$(PY) -m pytest $(PYTEST_PARALLEL) --durations=25

# The quick loop: lint, types and every test not marked integration (no process, server or browser started).
check: $(DEV_STAMP)
	$(VENV)/bin/ruff check evaluators monitor tests
	$(VENV)/bin/ruff format --check evaluators monitor tests
	$(VENV)/bin/mypy evaluators monitor
	$(PY) -m pytest -m "not integration" $(PYTEST_PARALLEL) --durations=10

# The Prometheus rules generated from deploy/monitor.yaml (tests/monitor/alerting checks that they are up to date).
rules: $(STAMP)
	$(VENV)/bin/agent-monitor rules --no-env --config deploy/monitor.yaml \
	  --output deploy/prometheus/rules/agent-monitor.rules.yml
	$(VENV)/bin/agent-monitor rules --no-env --config deploy/monitor.yaml --format prometheus-operator \
	  --namespace agent-monitor --output deploy/kubernetes/prometheusrule.yaml

bench: $(DEV_STAMP)
	$(PY) -m tests.bench.run_all

lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check evaluators monitor tests
	$(VENV)/bin/ruff format --check evaluators monitor tests
	$(VENV)/bin/mypy evaluators monitor

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis .mypy_cache
