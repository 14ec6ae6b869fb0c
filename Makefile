# codemode-gateway: `run` and `demo` depend on `runtime` (what the product runs on); every other
# target that needs the venv depends on `setup` (runtime plus the test, bench and lint tools).
SHELL := /bin/bash
# Bytecode caches on, whatever the environment says: otherwise every process the product or the suite
# starts compiles what it imports from source again (the SDK, numpy, ONNX Runtime: about half a CPU-second).
unexport PYTHONDONTWRITEBYTECODE
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
# A module per worker (loadfile): each module-scoped fixture, such as a shared gateway, is set up once.
TEST_WORKERS ?= 3
# `make load`: concurrent HTTP clients, and the seconds each configuration is measured.
LOAD_CLIENTS ?= 16
LOAD_SECONDS ?= 15

.DEFAULT_GOAL := help

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

# uv, pinned as the test extra pins it, installs into the venv (pip stays in the venv: the model build
# and the install test run it); scripts/venv_install.py runs it on pip's configured indexes.
UV_PIN := uv==0.13.9
UV := $(VENV)/bin/uv
INSTALL := $(PY) scripts/venv_install.py
# The steps of `setup` that do not depend on each other run at once, on this many make jobs.
SETUP_JOBS ?= 4

$(UV):
	test -x $(PY) || $(PYTHON_BOOT) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check $(UV_PIN)

# The product with its semantic search, its built-in config's Python children, and what builds the
# sandbox component and the search model: no test tools.
$(RUNTIME_STAMP): pyproject.toml setup.py | $(UV)
	$(INSTALL) -e ".[build,defaults]"
	touch $(RUNTIME_STAMP)

# The tools' requirements alone: a second editable install of the project would build it again.
$(STAMP): $(RUNTIME_STAMP)
	$(INSTALL) -r pyproject.toml --extra test --extra bench --extra lint
	touch $(STAMP)

# The pins are exact, so npm's cached metadata serves as well as the registry's (--prefer-offline).
$(NPM_STAMP): Makefile
	npm install --prefix $(NPM_DIR) --save-exact --prefer-offline --no-audit --no-fund --loglevel=error $(NPM_PACKAGES)
	touch $(NPM_STAMP)

# Each is idempotent: the build scripts do nothing when their inputs did not change.
sandbox-build: $(RUNTIME_STAMP)
	$(PY) runtime-wasm/build.py
	$(PY) -m gateway precompile

model-build: $(RUNTIME_STAMP)
	$(PY) gateway/catalog/_minilm_build.py gateway/catalog/model

runtime: ## Install only what the product runs on, build the search model, build and precompile the sandbox (idempotent)
	@$(MAKE) --no-print-directory -j$(SETUP_JOBS) -O sandbox-build model-build

# FastMCP CodeMode in its own venv: the peer of the bench's codemode rows (which the suite's quick bench runs too).
peer-venv: $(STAMP)
	$(PY) -c "from tests.agent_eval.interfaces import ensure_peer_venv; ensure_peer_venv()"

# HAProxy, the real load balancer of tests/e2e/test_replicas.py and `make load`, and redis-server, the real
# shared store (`state`) of tests/state, tests/e2e/test_replicas_state.py and `make load`: installed where
# apt-get runs as root, in one apt-get (two at once would contend for dpkg's lock).
system-tools:
	@missing=""; \
	command -v haproxy >/dev/null || test -x /usr/sbin/haproxy || missing="$$missing haproxy"; \
	command -v redis-server >/dev/null || test -x /usr/bin/redis-server || missing="$$missing redis-server"; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null 2>&1 \
	    || { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null 2>&1; }; } \
	    && echo "installed$$missing (the replica tests' load balancer, the shared state store)" \
	    || echo "could not install$$missing: the replica and shared-state tests that need them will skip"; \
	else echo "not installed:$$missing (apt-get install$$missing, as root): the tests that need them will skip"; fi

setup: ## runtime, plus the test, bench and lint tools, the npm test servers and the bench's FastMCP peer (idempotent)
	@$(MAKE) --no-print-directory -j$(SETUP_JOBS) -O $(STAMP) $(NPM_STAMP) sandbox-build model-build peer-venv system-tools

test: setup ## Run the whole test suite (escape suite included), on TEST_WORKERS processes (3)
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

sandbox-test: setup ## Run the sandbox escape suite on its own
	$(PY) -m pytest -m sandbox $(PYTEST_ARGS)

bench: setup ## Run the benchmarks and print the table (also written to docs/benchmarks.md)
	$(PY) tests/bench/run_bench.py --write docs/benchmarks.md

soak: setup ## 10,000 mixed executions through the stdio gateway; adds the figures to docs/benchmarks.md
	$(PY) tests/soak/run_soak.py --write docs/benchmarks.md

load: setup ## LOAD_CLIENTS HTTP clients (16) on 1, then 2 replicas behind HAProxy; table to docs/benchmarks.md
	$(PY) -m tests.bench.run_load --clients $(LOAD_CLIENTS) --seconds $(LOAD_SECONDS) --write docs/benchmarks.md

lint: setup ## ruff, pyright --strict, and the layering of gateway/ (import-linter)
	$(VENV)/bin/ruff check gateway guest tests examples scripts runtime-wasm/build.py
	$(VENV)/bin/ruff format --check gateway guest tests examples scripts runtime-wasm/build.py
	$(VENV)/bin/pyright
	$(VENV)/bin/lint-imports

format: setup ## Apply ruff's formatting and safe fixes
	$(VENV)/bin/ruff check --fix gateway guest tests examples scripts runtime-wasm/build.py
	$(VENV)/bin/ruff format gateway guest tests examples scripts runtime-wasm/build.py

# stdout is the MCP stream, so what make prints while it sets up goes to stderr: an MCP client may run
# `make -C REPO run` as its server's command.
run: ## Serve MCP over stdio on the built-in default config
	@$(MAKE) --no-print-directory runtime >&2
	@exec $(VENV)/bin/codemode-gateway serve

demo: runtime ## A real MCP client drives the gateway on its built-in config: search, then code over two children
	$(PY) examples/demo.py

# Only PyPA's build, pinned as the test extra pins it: it builds in an environment of its own, from
# pyproject's build-system requirements, and setup.py builds the sandbox and the model into the wheel.
BUILD_PIN := build==1.6.1

dist: | $(UV) ## Build the sdist and the wheel (the sandbox component and the search model inside) into dist/
	$(INSTALL) $(BUILD_PIN)
	$(PY) -m build --outdir dist .

clean: ## Remove the venv, the sandbox build, the search model, dist/ and the clone's caches (not the user's build cache)
	rm -rf $(VENV) runtime-wasm/build gateway/catalog/model dist .cache .pytest_cache .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

.PHONY: help runtime setup sandbox-build model-build peer-venv system-tools test sandbox-test bench soak load lint format run demo dist clean
