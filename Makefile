# The two commands: `make run` and `make test`. Both set up first.
VENV := .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=
# The suite runs on pytest-xdist workers: most tests wait on broker processes rather than compute,
# so 2 workers on 2 cores come close to halving the wall time. Each worker has its own ZooKeeper;
# tests/conftest.py keeps a module's tests (its module-scoped brokers) and all Spark tests on one
# worker, Spark first. `make test TEST_WORKERS=0` runs in one process.
TEST_WORKERS ?= 2
XDIST := $(if $(filter 0,$(TEST_WORKERS)),-p no:xdist,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)

.PHONY: setup run test test-fast test-cluster test-spark lint fmt console-screenshot perf fuzz clean

setup:
	@bash scripts/setup.sh

run: setup
	$(PY) -m zkafka.cli.main demo

test: setup
	$(VENV)/bin/ruff check src tests benchmarks
	$(PY) -m pytest $(XDIST) $(PYTEST_ARGS)

# Tiers of the suite (markers set in tests/conftest.py): the pure tier takes seconds.
test-fast: setup
	$(VENV)/bin/ruff check src tests benchmarks
	$(PY) -m pytest $(XDIST) -m "not cluster and not spark" $(PYTEST_ARGS)

test-cluster: setup
	$(PY) -m pytest $(XDIST) -m cluster $(PYTEST_ARGS)

test-spark: setup
	$(PY) -m pytest $(XDIST) -m spark $(PYTEST_ARGS)

lint: setup
	$(VENV)/bin/ruff check src tests benchmarks

fmt: setup
	$(VENV)/bin/ruff format src tests benchmarks

# docs/images/console.png, the README's picture of the web console, taken by its browser test
console-screenshot: setup
	ZKAFKA_CONSOLE_SCREENSHOT=$(CURDIR)/docs/images/console.png $(PY) -m pytest -q \
		tests/cluster/test_cluster_console.py -k lag_chart

# Lists the benchmarks (first line of each docstring; run one with `$(PY) benchmarks/<name>.py
# --help`), then runs the quick storage one. Figures and commands: docs/performance.md.
perf: setup
	@echo "benchmarks/ (PYTHONPATH=src $(PY) benchmarks/<name>.py --help):"
	@for f in benchmarks/[!_]*.py; do printf '  %-36s %s\n' "$$f" "$$(sed -n '1s/^"""//p' $$f)"; done
	$(PY) -m zkafka.cli.main perf storage

# The wire-protocol fuzzer against a real broker process (docs/reliability.md). Exit status 1 on
# any finding; reproducers go to $(FUZZ_FINDINGS). FUZZ_ARGS adds options, e.g.
# FUZZ_ARGS="--bootstrap-server 127.0.0.1:9092" to fuzz a running broker.
FUZZ_FRAMES ?= 100000
FUZZ_SEED ?= 1
FUZZ_BUDGET_S ?= 600
FUZZ_FINDINGS ?= build/fuzz-findings
FUZZ_ARGS ?=
fuzz: setup
	$(PY) -m zkafka.testing.fuzz --frames $(FUZZ_FRAMES) --seed $(FUZZ_SEED) --budget-s $(FUZZ_BUDGET_S) \
		--findings-dir $(FUZZ_FINDINGS) $(FUZZ_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis build dist src/*.egg-info
	find src -name __pycache__ -prune -exec rm -rf {} +
