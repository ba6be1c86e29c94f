# fairprobe — developer entry points. Only Python and pip are needed.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?= 8765
SEED   ?= 0

.PHONY: demo report test install install-dev servers lint typecheck pytest bench docs dist package-check floors-check clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Installs are stamped: a second `make demo` / `make test` skips pip unless pyproject.toml or
# constraints.txt (the tested versions) changed (the package is installed editable, so source
# edits need no reinstall).
$(VENV)/.installed-all: pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[all]"
	touch $@

$(VENV)/.installed-dev: pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[all,dev]"
	touch $@ $(VENV)/.installed-all

# every extra: the demo uses the platform server, the radius solver and the report
install: $(VENV)/.installed-all

install-dev: $(VENV)/.installed-dev

# Real model servers for tests/access/test_model_servers.py, each in its own venv (their pins
# conflict with ours), with our scikit-learn version so that one model file loads in all of them.
SERVERS  ?= .venv-servers
MLSERVER ?= 1.7.1
MLFLOW   ?= 3.17.2
SKLEARN   = $$($(BIN)/python -c 'import sklearn; print(sklearn.__version__)')

$(SERVERS)/mlserver/.installed: | $(VENV)/.installed-dev
	rm -rf $(SERVERS)/mlserver && $(PYTHON) -m venv $(SERVERS)/mlserver
	$(SERVERS)/mlserver/bin/python -m pip install --quiet "mlserver==$(MLSERVER)" \
	  "mlserver-sklearn==$(MLSERVER)" "scikit-learn==$(SKLEARN)"
	touch $@

$(SERVERS)/mlflow/.installed: | $(VENV)/.installed-dev
	rm -rf $(SERVERS)/mlflow && $(PYTHON) -m venv $(SERVERS)/mlflow
	$(SERVERS)/mlflow/bin/python -m pip install --quiet "mlflow==$(MLFLOW)" \
	  "scikit-learn==$(SKLEARN)"
	touch $@

# solas-ai, the fair-lending peer tests/profiles/test_solas_ai.py compares the CFPB profile with
# (its pins, pandas<3 and pydantic<2, conflict with ours)
SOLAS    ?= 0.6.0

$(SERVERS)/solas/.installed: | $(VENV)/.installed-dev
	rm -rf $(SERVERS)/solas && $(PYTHON) -m venv $(SERVERS)/solas
	$(SERVERS)/solas/bin/python -m pip install --quiet "solas-ai==$(SOLAS)"
	touch $@

servers: $(SERVERS)/mlserver/.installed $(SERVERS)/mlflow/.installed $(SERVERS)/solas/.installed

# the demo's results and its HTML report land in results/ (not versioned)
demo: install
	$(BIN)/fairprobe demo --port $(PORT) --seed $(SEED) --json results/demo.json
	$(BIN)/fairprobe report results/demo.json --html results/demo-report.html
	@echo ""
	@echo "Report: results/demo-report.html. The command is $(BIN)/fairprobe (or first: . $(BIN)/activate)."
	@echo "Next, audit your own model (docs/index.md is the ten-minute tutorial):"
	@echo "  $(BIN)/python tutorial/train.py"
	@echo "  $(BIN)/fairprobe audit --backend-config tutorial/model.toml --queries tutorial/pool.csv --group-col sex --metric dp,eo --label-col income --json results/mine.json"
	@echo "  $(BIN)/fairprobe report results/mine.json --html results/mine.html --fail-on unfair"

lint: install-dev
	$(BIN)/ruff check .

typecheck: install-dev
	$(BIN)/mypy

pytest: install-dev
	$(BIN)/python -m pytest

# two pytest workers (pytest-xdist): most tests wait on servers and node processes, so a second
# worker uses the time the first spends waiting; TEST_WORKERS=0 runs the suite in one process
TEST_WORKERS ?= 2
# compileall before pytest: where PYTHONDONTWRITEBYTECODE is set (as on this project's
# machines) Python never caches bytecode, and each of the suite's CLI and node processes would
# compile fairprobe's modules anew

test: install-dev
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/vulture
	$(BIN)/lint-imports
	$(BIN)/python -m compileall -q src
	$(BIN)/python -m pytest -n $(TEST_WORKERS)

# the documentation site, in strict mode: a broken link, a missing reference or a docstring
# warning fails the build (site/index.html; not versioned)
docs: install-dev
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

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

# the same smoke test with every core dependency at the lowest release pyproject.toml admits
floors-check: dist
	FLOORS=1 .ci/smoke_core.sh dist

clean:
	rm -rf $(VENV) $(SERVERS) site build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
