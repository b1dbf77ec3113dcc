# Two entry points: `make demo` and `make test` (`make test-fast`, the loop while editing,
# skips the tests marked slow). Each builds the local virtual environment (.venv) on first
# use, so a fresh machine needs only Python 3.11+.
PYTHON ?= python3
# The [semantic] extra needs torch; a CPU build is installed first so that nothing pulls a
# CUDA build of several GB. Where the machine has no local torch wheel, name the CPU index:
#   make test TORCH_INDEX=https://download.pytorch.org/whl/cpu
TORCH       ?= torch==2.13.0
TORCH_INDEX ?=
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-fast typecheck bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) '$(TORCH)'
	$(BIN)/pip install --quiet -e '.[test,postgres,semantic,service]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py

# On every core (pytest-xdist); PYTEST_ARGS="-n 0" runs it in one process.
test: $(STAMP)
	$(BIN)/python -m pytest -n auto $(PYTEST_ARGS)

# The loop while editing: everything but the tests marked slow (pyproject.toml's markers).
# `make test` and .ci/run still run those.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -n auto -m "not slow" $(PYTEST_ARGS)

# Strict on the packages [tool.mypy] in pyproject.toml lists.
typecheck: $(STAMP)
	$(BIN)/python -m mypy

bench: $(STAMP)
	$(BIN)/python -m bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
