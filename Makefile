# Two entry points: `make demo` and `make test` (`make test-fast`, the loop while editing,
# skips the tests marked slow; `make docs`, the manual). Each builds the local virtual
# environment (.venv) on first use, so a fresh machine needs only Python 3.11+.
PYTHON ?= python3
# The [semantic] extra needs torch; a CPU build is installed first so that nothing pulls a
# CUDA build of several GB. Where the machine has no local torch wheel, name the CPU index:
#   make test TORCH_INDEX=https://download.pytorch.org/whl/cpu
TORCH       ?= torch==2.13.0
TORCH_INDEX ?=
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-fast typecheck lint fmt docs bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) '$(TORCH)'
	$(BIN)/pip install --quiet -e '.[test,postgres,semantic,service,docs]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py

# On every core (pytest-xdist); PYTEST_ARGS="-n 0" runs it in one process.
test: $(STAMP)
	$(BIN)/python -m pytest -n auto $(PYTEST_ARGS)

# The loop while editing: everything but the tests marked slow (pyproject.toml's markers), on
# SQLite only (the PostgreSQL half skips, whatever LOSSGATE_TEST_PG_URL says). `make test`
# and .ci/run run all of it, on both stores.
# Bytecode is written even where the environment asks not to (PYTHONDONTWRITEBYTECODE): the
# loop runs again and again, and pytest's rewritten test modules are most of its start-up.
test-fast: $(STAMP)
	env -u LOSSGATE_TEST_PG_URL -u LOSSGATE_REQUIRE_PG -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -n auto -m "not slow" $(PYTEST_ARGS)

# Strict on all of lossgate ([tool.mypy] in pyproject.toml).
typecheck: $(STAMP)
	$(BIN)/python -m mypy

# ruff: the rules and the formatting [tool.ruff] in pyproject.toml sets; .ci/run runs `make lint`.
lint: $(STAMP)
	$(BIN)/ruff check lossgate tests bench examples docs/hooks
	$(BIN)/ruff format --check lossgate tests bench examples docs/hooks

fmt: $(STAMP)
	$(BIN)/ruff check --fix lossgate tests bench examples docs/hooks
	$(BIN)/ruff format lossgate tests bench examples docs/hooks

# The manual, from docs/ and mkdocs.yml, into site/; a warning (a broken link, a page
# missing from the nav) fails it. Nothing is fetched: no web fonts, no CDN.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

bench: $(STAMP)
	$(BIN)/python -m bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis build site *.egg-info
