# codemode-gateway: `run` and `demo` depend on `runtime` (what the product runs on); every other
# target that needs the venv depends on `setup` (runtime plus the test, bench and lint tools).
SHELL := /bin/bash
PYTHON_BOOT ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
RUNTIME_STAMP := $(VENV)/.installed-runtime
NPM_DIR := .cache/npm
NPM_STAMP := $(NPM_DIR)/.installed
# The npm child servers the tests run, pinned exactly (gateway/config/_defaults.py NPM_SERVER_PINS must match),
# and the TypeScript SDK whose client tests/e2e/ts_client drives the gateway with; the MCP conformance suite
# and the Node 22 it needs (the `node` package; system node stays 20), for tests/e2e/test_conformance.py;
# Pyodide, the runtime of the bench's peer row (tests/bench/peer_pyodide.mjs).
NPM_PACKAGES := @modelcontextprotocol/server-everything@2026.8.31 \
	@modelcontextprotocol/server-memory@2026.8.31 \
	@modelcontextprotocol/server-filesystem@2026.8.31 \
	@modelcontextprotocol/sdk@1.32.2 \
	@modelcontextprotocol/conformance@0.2.0-alpha.12 \
	pyodide@0.28.2 \
	node@22.23.3
PYTEST_ARGS ?=
# pytest-xdist workers for `make test` (0: one process, as `pytest` alone runs). One more than the two
# cores: the suite mostly waits on the processes it starts (2 workers kept one core busy on average),
# while 4 saturated both and pushed the escape suite's 0.75 s tool-call cap past its probe child.
TEST_WORKERS ?= 3
# `make load`: concurrent HTTP clients, and the seconds each configuration is measured.
LOAD_CLIENTS ?= 16
LOAD_SECONDS ?= 15

.DEFAULT_GOAL := help

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

# The product with its semantic search, its built-in config's Python children, and what builds the
# sandbox component and the search model: no test tools.
$(RUNTIME_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON_BOOT) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e ".[build,defaults,semantic]"
	touch $(RUNTIME_STAMP)

$(STAMP): $(RUNTIME_STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check -e ".[build,test,bench,lint,semantic]"
	touch $(STAMP)

$(NPM_STAMP): Makefile
	npm install --prefix $(NPM_DIR) --save-exact --no-audit --no-fund --loglevel=error $(NPM_PACKAGES)
	touch $(NPM_STAMP)

runtime: $(RUNTIME_STAMP) ## Install only what the product runs on, build the search model, build and precompile the sandbox (idempotent)
	$(PY) runtime-wasm/build.py
	$(PY) gateway/catalog/_minilm_build.py gateway/catalog/model
	$(PY) -m gateway precompile

setup: $(STAMP) $(NPM_STAMP) runtime ## runtime, plus the test, bench and lint tools, the npm test servers and the bench's FastMCP peer (idempotent)
# FastMCP CodeMode in its own venv: the peer of the bench's codemode rows (which the suite's quick bench runs too).
	$(PY) -c "from tests.agent_eval.interfaces import ensure_peer_venv; ensure_peer_venv()"
# HAProxy, the real load balancer of tests/e2e/test_replicas.py and `make load`: installed where apt-get runs as root.
	@command -v haproxy >/dev/null || test -x /usr/sbin/haproxy || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null 2>&1 \
	      || { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null 2>&1; }; } \
	      && echo "installed haproxy (the replica test's load balancer)" \
	      || echo "could not install haproxy: tests/e2e/test_replicas.py will skip"; \
	  else echo "haproxy is not installed (apt-get install haproxy, as root): tests/e2e/test_replicas.py will skip"; fi; }
# redis-server, the real shared store (`state`) of tests/state, tests/e2e/test_replicas_state.py and `make load`.
	@command -v redis-server >/dev/null || test -x /usr/bin/redis-server || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null 2>&1 \
	      || { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null 2>&1; }; } \
	      && echo "installed redis-server (the shared state store of the tests)" \
	      || echo "could not install redis-server: the tests of shared state will skip"; \
	  else echo "redis-server is not installed (apt-get install redis-server, as root): the tests of shared state will skip"; fi; }

test: setup ## Run the whole test suite (escape suite included), on TEST_WORKERS processes (3)
	$(PY) -m pytest -n $(TEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

sandbox-test: setup ## Run the sandbox escape suite on its own
	$(PY) -m pytest -m sandbox $(PYTEST_ARGS)

bench: setup ## Run the benchmarks and print the table (also written to docs/benchmarks.md)
	$(PY) tests/bench/run_bench.py --write docs/benchmarks.md

soak: setup ## 10,000 mixed executions through the stdio gateway; adds the figures to docs/benchmarks.md
	$(PY) tests/soak/run_soak.py --write docs/benchmarks.md

load: setup ## LOAD_CLIENTS HTTP clients (16) on 1, then 2 replicas behind HAProxy; table to docs/benchmarks.md
	$(PY) -m tests.bench.run_load --clients $(LOAD_CLIENTS) --seconds $(LOAD_SECONDS) --write docs/benchmarks.md

lint: setup ## ruff, pyright --strict, and the layering of gateway/ (import-linter)
	$(VENV)/bin/ruff check gateway guest tests examples runtime-wasm/build.py
	$(VENV)/bin/ruff format --check gateway guest tests examples runtime-wasm/build.py
	$(VENV)/bin/pyright
	$(VENV)/bin/lint-imports

format: setup ## Apply ruff's formatting and safe fixes
	$(VENV)/bin/ruff check --fix gateway guest tests examples runtime-wasm/build.py
	$(VENV)/bin/ruff format gateway guest tests examples runtime-wasm/build.py

run: runtime ## Serve MCP over stdio on the built-in default config
	$(VENV)/bin/codemode-gateway serve

demo: runtime ## A real MCP client drives the gateway on its built-in config: search, then code over two children
	$(PY) examples/demo.py

dist: setup ## Build the sdist and the wheel (with the sandbox component inside) into dist/
	$(PY) -m build --outdir dist .

clean: ## Remove the venv, the sandbox build, the search model, dist/ and caches
	rm -rf $(VENV) runtime-wasm/build gateway/catalog/model dist .cache .pytest_cache .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

.PHONY: help runtime setup test sandbox-test bench soak load lint format run demo dist clean
