# fairprobe — developer entry points. Only Python and pip are needed.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?= 8765
SEED   ?= 0

.PHONY: demo report test install install-dev lint typecheck pytest bench dist package-check clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# every extra: the demo uses the platform server, the radius solver and the report
install: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[all]"

install-dev: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[all,dev]"

# the demo's results and its HTML report land in results/ (not versioned)
demo: install
	$(BIN)/fairprobe demo --port $(PORT) --seed $(SEED) --json results/demo.json
	$(BIN)/fairprobe report results/demo.json --html results/demo-report.html

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

# wheel + sdist, checked by twine
dist: install-dev
	rm -rf dist
	$(BIN)/python -m build --outdir dist .
	$(BIN)/twine check --strict dist/*

# the wheel's light core alone in a fresh venv: import, --help, an audit of a local model
package-check: dist
	.ci/smoke_core.sh dist

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
