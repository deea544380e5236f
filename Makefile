# Two commands for a newcomer: `make run` (install + start on the embedded default) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DATA_DIR ?= $(HOME)/.local/share/automem
PORT ?= 8001

.PHONY: install run test test-fast fuzz properties lint typecheck docs clean

$(BIN)/automem: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $@

install: $(BIN)/automem

run: install
	$(BIN)/automem serve --data-dir $(DATA_DIR) --port $(PORT)

test: install
	$(BIN)/ruff check automem enrichment tests scripts
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/automem docs --check
	$(BIN)/python -m pytest -q

# The unit tier alone: no stores, no subprocesses (tests/unit); the developer's fast loop.
test-fast: install
	$(BIN)/python -m pytest -q tests/unit

# A long fuzz pass over /openapi.json (the default test run does a short one); counts in benchmarks/fuzz.json.
FUZZ_EXAMPLES ?= 300
fuzz: install
	FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) FUZZ_SUMMARY=benchmarks/fuzz.json $(BIN)/python -m pytest -q -s -m fuzz --timeout 3600

# A long pass of the restore and tenant-isolation properties (the default test run does a short one);
# counts in benchmarks/properties.json and benchmarks/tenant_isolation.json.
# Each property may run past the suite's 300 s test timeout: the long pass bounds a test at an hour.
PROPERTY_EXAMPLES ?= 150
TENANT_STEPS ?= 50
properties: install
	PROPERTY_EXAMPLES=$(PROPERTY_EXAMPLES) PROPERTY_SUMMARY=benchmarks/properties.json TENANT_STEPS=$(TENANT_STEPS) TENANT_SUMMARY=benchmarks/tenant_isolation.json $(BIN)/python -m pytest -q -s -m properties --timeout 3600

lint: install
	$(BIN)/ruff check automem enrichment tests scripts

typecheck: install
	$(BIN)/mypy

docs: install
	$(BIN)/automem docs --write

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
