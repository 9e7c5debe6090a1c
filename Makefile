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

.PHONY: install demo test bench docs
install: $(BIN)/.installed

demo: $(BIN)/.installed
	$(BIN)/dask-kernels demo

test: $(BIN)/.installed
	$(BIN)/python -m pytest

bench: $(BIN)/.installed
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

# The docs site (docs/_build/html), built afresh with warnings as errors; it runs the examples.
# Quiet (-q): only warnings and errors print, so the test run's summary stays the last line in CI.
docs: $(BIN)/.installed
	rm -rf docs/_build docs/generated
	$(BIN)/python -m sphinx -W --keep-going -E -q -b html docs docs/_build/html
