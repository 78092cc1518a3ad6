# The two front-door commands (see README.md). Both create .venv inside the checkout and install
# everything they need into it, so they work on a fresh machine with only Python and a C compiler.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test setup lint

$(BIN)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $@

setup: $(BIN)/.installed

demo: setup
	$(BIN)/python -m kiln.examples.demo

test: setup
	$(BIN)/ruff check kiln tests benchmarks
	$(BIN)/python -m pytest -n 2 -q
