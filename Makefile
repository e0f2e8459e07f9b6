# Two commands set everything up on a fresh machine: `make run` and `make test`.
# Both create the project venv (.venv) and install the project into it when needed.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export FACTORY_HOME ?= $(CURDIR)/.factory
export LITELLM_LOCAL_MODEL_COST_MAP := True
export DAGSTER_HOME ?= $(FACTORY_HOME)/dagster
UI_HOST ?= 127.0.0.1
UI_PORT ?= 3000

.PHONY: install system-deps run test bench ui lint clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP) system-deps

# Optional system tools: bubblewrap hardens the sandbox, chromium runs the UI test.
# Installed where apt is available and we are root; everything works (and says so) without them.
system-deps:
	@if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
		missing=""; \
		command -v bwrap >/dev/null 2>&1 || missing="$$missing bubblewrap"; \
		command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
		if [ -n "$$missing" ]; then \
			echo "installing system packages:$$missing"; \
			(apt-get install -y -qq $$missing >/dev/null 2>&1 || \
			 (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq $$missing >/dev/null 2>&1)) || \
			echo "note: could not install$$missing; the tests that need them say so"; \
		fi; \
	fi

run: $(STAMP)
	$(BIN)/factory run

test: install
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python -m benchmarks

ui: $(STAMP)
	mkdir -p $(DAGSTER_HOME)
	test -f $(DAGSTER_HOME)/dagster.yaml || cp dagster.yaml $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/dagster dev -m assets.definitions -h $(UI_HOST) -p $(UI_PORT)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(FACTORY_HOME)
