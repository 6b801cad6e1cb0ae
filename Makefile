# bayes-risk — quick start: `make demo` and `make test` on a fresh machine.
# Both create .venv with the newest Python >= 3.12 found (PyMC 6 / ArviZ 1 need it: on 3.11 pip
# silently resolves PyMC 5 / ArviZ 0.x) and install the package non-editable (`pip install .`),
# which is how the models/ -> bayes_risk.models mapping is exercised (STYLE.md §4).

SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
DEMO_OUT ?= demo-output
export NUMBA_THREADING_LAYER ?= workqueue
export MPLBACKEND ?= Agg

# Newest interpreter >= 3.12: plain names first, then pyenv installs (pyenv shims fail for a
# version that is installed but not selected, so each candidate is actually run).
find_python = $(shell for c in python3.14 python3.13 python3.12 \
	$$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -rV) python3 python; do \
	  if command -v $$c >/dev/null 2>&1 && $$c -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; then \
	    command -v $$c; break; fi; done)

.PHONY: help venv install test lint demo bench docs browser clean

# `make help` prints the `## ` text of every target line below (tests/test_doc_commands.py
# checks that every target has one).
help: ## list the targets (this text)
	@awk -F ':.*## ' '/^[a-z][a-z-]*:.*## / { printf "make %-8s %s\n", $$1, $$2 }' $(firstword $(MAKEFILE_LIST))

$(PY):
	@PYBIN="$(find_python)"; \
	if [ -z "$$PYBIN" ]; then echo "error: no Python >= 3.12 found (PyMC 6 and ArviZ 1 need it)" >&2; exit 1; fi; \
	echo "creating $(VENV) with $$PYBIN ($$($$PYBIN --version))"; \
	$$PYBIN -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

venv: $(PY) ## create .venv with the newest Python >= 3.12 found (nothing installed)

# Dependencies are installed once (stamp keyed on pyproject.toml); the package itself is
# reinstalled on every run so that tests always see the current sources.
$(VENV)/.deps-stamp: pyproject.toml | $(PY)
	$(PIP) install --quiet ".[test]"
	touch $@

# build/ is removed first: setuptools copies the sources into build/lib and never deletes a
# module that was moved or removed, so a stale copy would be installed beside the new one.
install: $(VENV)/.deps-stamp ## create .venv, install the package with the test and docs extras; then: source .venv/bin/activate
	rm -rf build
	$(PIP) install --quiet --no-deps --force-reinstall .

# Two pytest-xdist workers (the machine's two cores; TEST_WORKERS=0 runs in one process).
# --dist loadfile keeps each test file on one worker, so a module's fixtures are built once;
# --no-loadscope-reorder hands the files out in the order tests/conftest.py gives them (files
# with slow tests first, so that no long file is left to one worker at the end).
TEST_WORKERS ?= 2

# The pytest console script (not `python -m pytest`) with --import-mode=importlib keeps the
# source tree off sys.path, so the tests import the installed package.
# tools/warm_numba.py first fills numba's cache (beside the installed modules) on both cores,
# so that the two workers load the compiled kernels instead of both compiling them (about
# 160 s of CPU, 90 s on the two cores, from a fresh clone; 30 s when the cache is filled).
test: install ## install, then run the whole test suite (how long: docs/development.md, "How long make test takes"; TEST_WORKERS=0: one process)
	$(PY) tools/warm_numba.py
	$(VENV)/bin/pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

lint: $(VENV)/.deps-stamp ## ruff check of the whole tree (settings in pyproject.toml)
	$(VENV)/bin/ruff check .

demo: install ## install, then 'bayes-risk demo': two demo releases audited into demo-output/ (about 3 min)
	$(VENV)/bin/bayes-risk demo --out $(DEMO_OUT)

# The asv suite (benchmarks/suite/) on the installed package in .venv; results are kept in
# benchmarks/.asv/results under the commit's hash (`asv compare A B` there compares two).
# BENCH=REGEX runs the matching benchmarks only. benchmarks/README.md has the table.
bench: install ## the benchmark suite (asv; BENCH=REGEX for some)
	$(PIP) install --quiet ".[bench]"
	cd benchmarks && ../$(VENV)/bin/asv machine --yes >/dev/null && \
	  ../$(VENV)/bin/asv run --python=same --show-stderr \
	  --set-commit-hash $$(git rev-parse HEAD) $(if $(BENCH),--bench "$(BENCH)")

# -W: warnings (broken examples, unresolved references with -n) are errors. The example pages
# are executed when they are read (docs/conf.py), so a full build is about 5 CPU minutes. The
# site is built again only when a source changed since the last successful build (the stamp):
# a changed page alone is re-read by Sphinx's incremental build (only that page's examples run
# again); a change of the package, the examples, the configuration or the extensions rebuilds
# every page (-E), since Sphinx cannot tell which executed outputs it changed.
DOCS_HTML := docs/_build/html
# (inside the site: removing the site removes the stamp, and the next `make docs` builds it)
DOCS_STAMP := $(DOCS_HTML)/.built
# what the build reads; the folders the build itself writes into are left out, or a build would
# make the next one out of date (recursive `=`: `find` runs only when the docs are made)
DOCS_PAGES = $(shell find docs -name '*.md' -not -path 'docs/_build/*' \
	-not -path 'docs/api/generated/*' -not -path 'docs/jupyter_execute/*')
DOCS_INPUTS = $(shell find docs examples bayes_risk models -type f -not -path 'docs/_build/*' \
	-not -path 'docs/api/generated/*' -not -path 'docs/jupyter_execute/*' \
	-not -path '*/__pycache__/*' -not -path '*.egg-info/*' -not -path '*/.ipynb_checkpoints/*' \
	-not -name '*.pyc') pyproject.toml benchmarks/README.md

$(DOCS_STAMP): $(DOCS_INPUTS)
	@rm -f $@
	$(MAKE) --no-print-directory install
	$(VENV)/bin/sphinx-build -W --keep-going -n -j 2 $(if $(filter-out $(DOCS_PAGES),$?),-E) \
	  -b html docs $(DOCS_HTML)
	@touch $@

docs: $(DOCS_STAMP) ## the documentation site into docs/_build/html (about 5 CPU min; again only after a change)
	@echo "documentation: file://$(CURDIR)/$(DOCS_HTML)/index.html (opens offline in any browser)"

# tests/auditing/test_audit.py renders the audit report in headless Chromium (skipped without one)
browser: ## install headless Chromium where missing (the report's browser test)
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then \
	  echo "chromium: $$(command -v chromium || command -v chromium-browser)"; \
	else \
	  SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
	  $$SUDO apt-get update && $$SUDO apt-get install -y chromium; \
	fi

clean: ## remove .venv, build files, demo-output/ and the built documentation
	rm -rf $(VENV) build *.egg-info $(DEMO_OUT) docs/_build docs/api/generated docs/jupyter_execute
