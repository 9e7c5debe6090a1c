# The two quick-start commands, `make demo` and `make test`, create .venv on first use.
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,bench]"
	touch $@

.PHONY: install demo test bench
install: $(BIN)/.installed

demo: $(BIN)/.installed
	$(BIN)/dask-kernels demo

test: $(BIN)/.installed
	$(BIN)/python -m pytest

bench: $(BIN)/.installed
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done
