# The two quick-start commands, `make demo` and `make test`, create .venv on first use.
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin

# One install of the package and every extra (tests, benchmarks, docs) with uv, itself from PyPI
# into the venv: it downloads and unpacks in parallel (about a minute, pip took three and a half).
# --compile-bytecode, as pip does: where PYTHONDONTWRITEBYTECODE is set (this CI machine) Python
# never writes .pyc files, so without it every process of the test run (hundreds: CLI runs, cluster
# workers) compiles dask, distributed, scikit-learn, ... from source again (1-5 s of CPU each).
$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv
	$(BIN)/python -m uv pip install --quiet --compile-bytecode --python $(BIN)/python -e ".[test,bench,docs]"
	touch $@

# The same package at the lowest versions pyproject.toml declares for its direct dependencies
# (uv's --resolution lowest-direct), in a venv of its own: `make test-lowest` runs the suite there,
# so the lower bounds are tested, not only stated. Numba compiles the kernels again for its older
# version: NUMBA_CACHE_DIR should differ from the latest venv's (.ci/run sets both).
LOWEST ?= .venv-lowest
$(LOWEST)/bin/.installed: pyproject.toml
	$(PYTHON) -m venv $(LOWEST)
	$(LOWEST)/bin/python -m pip install --quiet uv
	$(LOWEST)/bin/python -m uv pip install --quiet --compile-bytecode --resolution lowest-direct \
		--python $(LOWEST)/bin/python -e ".[test]"
	touch $@

.PHONY: install demo test test-lowest bench docs
install: $(BIN)/.installed

demo: $(BIN)/.installed
	$(BIN)/dask-kernels demo

test: $(BIN)/.installed
	$(BIN)/python -m pytest

test-lowest: $(LOWEST)/bin/.installed
	$(LOWEST)/bin/python -m pytest

bench: $(BIN)/.installed
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

# The docs site (docs/_build/html), built afresh with warnings as errors; it runs the examples.
# Quiet (-q): only warnings and errors print, so the test run's summary stays the last line in CI.
docs: $(BIN)/.installed
	rm -rf docs/_build docs/generated
	$(BIN)/python -m sphinx -W --keep-going -E -q -b html docs docs/_build/html
