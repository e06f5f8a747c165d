# The two commands: `make run` and `make test`. Both set up first.
VENV := .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: setup run test test-fast test-cluster test-spark lint fmt perf fuzz clean

setup:
	@bash scripts/setup.sh

run: setup
	$(PY) -m zkafka.cli.main demo

test: setup
	$(VENV)/bin/ruff check src tests benchmarks
	$(PY) -m pytest $(PYTEST_ARGS)

# Tiers of the suite (markers set in tests/conftest.py): the pure tier takes seconds.
test-fast: setup
	$(VENV)/bin/ruff check src tests benchmarks
	$(PY) -m pytest -m "not cluster and not spark" $(PYTEST_ARGS)

test-cluster: setup
	$(PY) -m pytest -m cluster $(PYTEST_ARGS)

test-spark: setup
	$(PY) -m pytest -m spark $(PYTEST_ARGS)

lint: setup
	$(VENV)/bin/ruff check src tests benchmarks

fmt: setup
	$(VENV)/bin/ruff format src tests benchmarks

perf: setup
	$(PY) -m zkafka.cli.main perf storage

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis build dist src/*.egg-info
