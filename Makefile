# codemode-gateway: every target that needs the venv or the sandbox depends on `setup`.
SHELL := /bin/bash
PYTHON_BOOT ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
NPM_DIR := .cache/npm
NPM_STAMP := $(NPM_DIR)/.installed
# The npm child servers the tests run, pinned exactly (gateway/config/_defaults.py NPM_SERVER_PINS must match),
# and the TypeScript SDK whose client tests/e2e/ts_client drives the gateway with.
NPM_PACKAGES := @modelcontextprotocol/server-everything@2026.8.31 \
	@modelcontextprotocol/server-memory@2026.8.31 \
	@modelcontextprotocol/server-filesystem@2026.8.31 \
	@modelcontextprotocol/sdk@1.32.2
PYTEST_ARGS ?=

.DEFAULT_GOAL := help

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON_BOOT) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check -e ".[build,test,bench,lint]"
	touch $(STAMP)

$(NPM_STAMP): Makefile
	npm install --prefix $(NPM_DIR) --save-exact --no-audit --no-fund --loglevel=error $(NPM_PACKAGES)
	touch $(NPM_STAMP)

setup: $(STAMP) $(NPM_STAMP) ## Create the venv, install dependencies, build and precompile the sandbox (idempotent)
	$(PY) runtime-wasm/build.py
	$(PY) -m gateway precompile

test: setup ## Run the whole test suite (escape suite included)
	$(PY) -m pytest $(PYTEST_ARGS)

sandbox-test: setup ## Run the sandbox escape suite on its own
	$(PY) -m pytest -m sandbox $(PYTEST_ARGS)

bench: setup ## Run the benchmarks and print the table (also written to docs/benchmarks.md)
	$(PY) tests/bench/run_bench.py --write docs/benchmarks.md

soak: setup ## 10,000 mixed executions through the stdio gateway; adds the figures to docs/benchmarks.md
	$(PY) tests/soak/run_soak.py --write docs/benchmarks.md

lint: setup ## ruff, pyright --strict, and the layering of gateway/ (import-linter)
	$(VENV)/bin/ruff check gateway guest tests examples runtime-wasm/build.py
	$(VENV)/bin/ruff format --check gateway guest tests examples runtime-wasm/build.py
	$(VENV)/bin/pyright
	$(VENV)/bin/lint-imports

format: setup ## Apply ruff's formatting and safe fixes
	$(VENV)/bin/ruff check --fix gateway guest tests examples runtime-wasm/build.py
	$(VENV)/bin/ruff format gateway guest tests examples runtime-wasm/build.py

run: setup ## Serve MCP over stdio on the built-in default config
	$(VENV)/bin/codemode-gateway serve

demo: setup ## A real MCP client drives the gateway on its built-in config: search, then code over two children
	$(PY) examples/demo.py

dist: setup ## Build the sdist and the wheel (with the sandbox component inside) into dist/
	$(PY) -m build --outdir dist .

clean: ## Remove the venv, the sandbox build, dist/ and caches
	rm -rf $(VENV) runtime-wasm/build dist .cache .pytest_cache .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

.PHONY: help setup test sandbox-test bench soak lint format run demo dist clean
