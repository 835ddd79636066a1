# Two commands for a fresh machine: `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CHROMIUM ?= /usr/bin/chromium
# uv installs exactly the versions of uv.lock, which it wrote (pyproject.toml's
# required-version names the same uv). The venv's own pip installs uv, so nothing but Python
# is needed beforehand, into a folder of its own: `uv sync` removes from the venv whatever
# the lock does not list. --system-certs: uv trusts the system's certificates, as pip does,
# so a network behind a local authority works too.
UV_VERSION := 0.13.9
UV_HOME := $(VENV)/uv
UV_BIN := $(UV_HOME)/bin/uv
UV := UV_PROJECT_ENVIRONMENT=$(VENV) UV_PYTHON_DOWNLOADS=never $(UV_BIN) --system-certs
# Two stamps: the app and its models (enough for `make run`), then the test tools on top.
RUNTIME_STAMP := $(VENV)/.installed-runtime
STAMP := $(VENV)/.installed
CONTAINER_LOG := $(VENV)/container-check.log
# What the app writes (the static files as served, the decoder's weights in float32): inside
# the checkout, so that `make clean` removes it. The app, the tests and `python -m app.prepare`
# all read CACHE_DIR from the environment.
export CACHE_DIR ?= $(CURDIR)/.cache
PREPARED := $(CACHE_DIR)/.prepared
# Python keeps the bytecode it compiles (in __pycache__, which `make clean` removes), even where
# the environment says not to: otherwise every process of `make test` (pytest, its workers,
# the linters) compiles the libraries and rewrites the tests again, about 6 s of CPU each.
export PYTHONDONTWRITEBYTECODE :=

.PHONY: run test lint lock prepare chromium wrk bench bench-load container-test clean messages

$(UV_BIN):
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --target $(UV_HOME) 'uv==$(UV_VERSION)'

$(RUNTIME_STAMP): pyproject.toml uv.lock $(UV_BIN)
	$(UV) sync --locked --quiet
	touch $@

$(STAMP): $(RUNTIME_STAMP)
	$(UV) sync --locked --quiet --group test
	touch $@

# The decoder's weights and the static files, prepared once after installing (app/prepare.py):
# nothing is prepared while the app serves, and nothing is downloaded at all.
$(PREPARED): $(RUNTIME_STAMP)
	$(BIN)/python -m app.prepare
	touch $@

prepare: $(PREPARED)

## Start the app on its defaults (HOST=127.0.0.1 PORT=8000, WORKERS = the cores; from the
## environment or settings). Installs the app and the models only, not the test tools.
run: $(PREPARED)
	$(BIN)/python -m app

## Write uv.lock again after a change to pyproject.toml's dependencies.
lock: $(UV_BIN)
	$(UV) lock

## Debian's chromium for the browser tests, installed when missing.
chromium:
	@command -v $(CHROMIUM) >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/hadolint -t warning Dockerfile

## The whole suite: lint, then unit, API, page and real-browser tests. The container check
## (deploy/container_test.py) runs beside them all, from the start: when buildah or podman is
## installed it builds the image and checks it, else it says in one sentence why it did not.
## It waits on disk and network mostly, and runs at a lower priority (nice): where the tests
## keep both cores busy they go first and the check takes what they leave. Its report is
## printed at the end; either failing fails `make test`.
test: $(UV_BIN)
	@echo "the container check starts beside the rest: $(CONTAINER_LOG)"
	@nice -n 10 $(PYTHON) deploy/container_test.py --uv $(UV_BIN) > $(CONTAINER_LOG) 2>&1 & container=$$!; \
	trap 'kill $$container 2>/dev/null; wait $$container' INT TERM; \
	if $(MAKE) --no-print-directory $(STAMP) $(PREPARED) chromium lint; then \
	  echo "$(BIN)/python -m pytest"; $(BIN)/python -m pytest; tests=$$?; \
	else tests=$$?; kill $$container; fi; \
	wait $$container; built=$$?; cat $(CONTAINER_LOG); \
	if [ $$tests -ne 0 ]; then exit $$tests; fi; exit $$built

## The container check alone.
container-test: $(UV_BIN)
	$(PYTHON) deploy/container_test.py --uv $(UV_BIN)

bench: $(STAMP) wrk
	for f in bench/bench_*.py; do $(BIN)/python $$f || exit 1; done

## 100 connections for 20 s against uvicorn on 127.0.0.1 (wrk from Debian's packages).
bench-load: $(STAMP) wrk
	$(BIN)/python bench/bench_load.py

wrk:
	@command -v wrk >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq wrk >/dev/null; }

## Everything `make run` and `make test` made: the venv (uv, the packages, the container
## check's log), the tools' caches and bytecode, benchmark artifacts, the decoder's weight cache (.cache/),
## and any image or container an interrupted container check left behind.
clean:
	$(PYTHON) deploy/container_test.py --clean
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis .import_linter_cache artifacts .cache \
	  *.egg-info build
	find . -name .git -prune -o -name __pycache__ -prune -exec rm -rf {} +

## Refresh the translation catalogs from the templates and app/, one per feature and one shared
## (translations/refresh.py); then translate the empty msgstr in translations/es/LC_MESSAGES/
## (tests/web/test_i18n.py fails until Spanish is complete).
messages: $(STAMP)
	$(BIN)/python translations/refresh.py
