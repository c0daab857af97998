# agent-monitor: `make run` starts the daemon, `make test` runs the whole suite from nothing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: run test bench lint venv clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/agent-monitor run

test: $(STAMP)
	$(VENV)/bin/ruff check evaluators monitor tests
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) tests/bench/run_all.py

lint: $(STAMP)
	$(VENV)/bin/ruff check evaluators monitor tests
	$(VENV)/bin/ruff format --check evaluators monitor tests

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
