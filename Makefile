# fairprobe — developer entry points. Only Python and pip are needed.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?= 8765
SEED   ?= 0

.PHONY: demo test install install-dev lint typecheck pytest bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .

install-dev: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[dev]"

demo: install
	$(BIN)/fairprobe demo --port $(PORT) --seed $(SEED)

lint: install-dev
	$(BIN)/ruff check .

typecheck: install-dev
	$(BIN)/mypy

pytest: install-dev
	$(BIN)/python -m pytest

test: install-dev
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest

bench: install
	for f in benchmarks/bench_*.py; do $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
