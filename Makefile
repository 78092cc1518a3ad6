# The two front-door commands (see README.md). Both create .venv inside the checkout and install
# what they need into it, so they work on a fresh machine with only Python and a C compiler.
# Each installs only its own extra (`make demo`: .[demo], about 240 MB; `make test`: .[test], with
# torch, oneDNN and the CUDA compiler); one run after the other adds to the same venv.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test setup lint

# The venv's own pip (Python 3.10's is 22.x or newer) installs editable pyproject packages; not
# upgrading it saves 5 s of the demo's first run.
$(VENV)/pyvenv.cfg:
	$(PY) -m venv $(VENV)

# One stamp per extra, remade when pyproject.toml changes.
$(BIN)/.installed-%: pyproject.toml | $(VENV)/pyvenv.cfg
	$(BIN)/pip install -q --disable-pip-version-check -e '.[$*]'
	touch $@

setup: $(BIN)/.installed-test

demo: $(BIN)/.installed-demo
	$(BIN)/python -m kiln.examples.demo

test: $(BIN)/.installed-test
	$(BIN)/ruff check kiln tests benchmarks
	$(BIN)/python -m pytest -n 2 -q
